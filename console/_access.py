"""Who sees what in the console, and who may act: pure rules over an actor's grants.

An actor holds a role per tenant (``intake/actors.py``): ``operator`` sees that tenant's data,
``admin`` also acts on it (kill, unkill, retry or resolve a dead letter). A grant on ``*`` is
platform-wide: such an actor also sees rows that carry no tenant (a reject decided before any
tenant was known), the global capacity counter and the global day budget, and only an admin on
``*`` may kill or unkill *everything*.

Roles are read from the configuration on every request, never from the session cookie: a
grant removed from the config takes effect at the next click, not when the session expires.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from intake.actors import ALL_TENANTS, Role, role_in


@dataclass(frozen=True)
class Viewer:
    """The signed-in actor as the console sees it on one request."""

    actor: str
    grants: Mapping[str, Role]
    configured: frozenset[str]
    """Every tenant that exists (named by a source)."""
    csrf: str
    """The session's CSRF token, echoed in every form."""

    @property
    def platform_wide(self) -> bool:
        return ALL_TENANTS in self.grants

    @property
    def visible(self) -> frozenset[str] | None:
        """Tenants whose rows this actor sees; ``None``: every tenant and rows without one."""
        if self.platform_wide:
            return None
        return frozenset(t for t in self.grants if t in self.configured)

    @property
    def tenants(self) -> list[str]:
        """The tenants shown in choosers (all configured ones for a platform-wide actor)."""
        return sorted(self.configured if self.platform_wide else (self.visible or ()))

    def sees(self, tenant: str | None) -> bool:
        if self.platform_wide:
            return True
        return tenant is not None and tenant in self.grants and tenant in self.configured

    def role(self, tenant: str | None) -> Role | None:
        """The role in ``tenant`` (``None``: the platform-wide role, the only one that covers everything)."""
        if tenant is None:
            return self.grants.get(ALL_TENANTS)
        return role_in(self.grants, tenant) if tenant in self.configured else None

    def admin_in(self, tenant: str | None) -> bool:
        return self.role(tenant) == "admin"

    @property
    def admin_anywhere(self) -> bool:
        return any(role == "admin" and (t == ALL_TENANTS or t in self.configured) for t, role in self.grants.items())

    def describe(self) -> str:
        """``carol: admin in acme`` — the header line."""
        parts = [f"{role} in {'every tenant' if t == ALL_TENANTS else t}" for t, role in sorted(self.grants.items())]
        return f"{self.actor}: {', '.join(parts)}"


def viewer_for(actor: str, grants: Mapping[str, Role], configured: Collection[str], csrf: str) -> Viewer:
    return Viewer(actor, dict(grants), frozenset(configured), csrf)
