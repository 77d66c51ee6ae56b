"""Actors act in tenants: which tenant a manual trigger runs in, and with which role.

An actor (an operator with a bearer token) holds a role per tenant: ``operator`` may ask
for work, ``admin`` may also force a re-run of a version already done. A grant on the
tenant ``*`` is platform-wide: it applies in every configured tenant (the stronger of a
``*`` grant and a tenant's own grant counts).

The tenant of a manual trigger comes from the actor's grants, never from the request: the
request may *name* a tenant only to choose among the tenants the actor holds a role in, and
an actor with exactly one tenant (and no ``*`` grant) needs to name none. So the budget,
GitHub App installation, egress allowlist and repository scope that apply are always ones
the authenticated actor was given.

Failure modes: naming a tenant the actor holds no role in, or one that is not configured,
is refused (``out-of-scope``: the actor is authenticated, just not there); an actor with
several tenants (or ``*``) who names none is refused as ambiguous rather than guessed.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Any, Collection, Literal, Mapping

Role = Literal["operator", "admin"]
ROLES: tuple[Role, ...] = ("operator", "admin")
"""Weakest first."""
ALL_TENANTS = "*"


def role_in(grants: Mapping[str, Role], tenant: str) -> Role | None:
    """The actor's role in ``tenant`` (its own grant or a ``*`` grant, whichever is stronger)."""
    held = [r for r in (grants.get(tenant), grants.get(ALL_TENANTS)) if r is not None]
    return max(held, key=ROLES.index) if held else None


def actor_for_token(presented: str, actors: Mapping[str, Any]) -> str | None:
    """The name of the actor whose token is ``presented`` (``actors``: name -> an object with a
    ``token`` SecretStr), else ``None``. Every token is compared, in constant time, with no early
    exit: the time taken does not say who matched. An empty token never matches."""
    given = presented.strip().encode("utf-8", "surrogatepass")
    if not given:
        return None
    found = None
    for name, actor in actors.items():
        expected = actor.token.get_secret_value().encode()
        if expected and hmac.compare_digest(given, expected) and found is None:
            found = name
    return found


@dataclass(frozen=True)
class TenantChoice:
    tenant: str | None
    """The tenant the trigger runs in; ``None`` when refused."""
    role: Role | None = None
    refusal: str | None = None
    """Why no tenant was chosen (the message for the receipt)."""
    ambiguous: bool = False
    """Refused because the actor must name one of several tenants (a bad request, not a permission)."""


def choose_tenant(actor: str, grants: Mapping[str, Role], requested: str | None,
                  configured: Collection[str]) -> TenantChoice:
    """The tenant ``actor`` acts in for this request. ``configured``: every tenant that exists."""
    if requested is not None:
        role = role_in(grants, requested) if requested in configured else None
        if role is None:
            return TenantChoice(None, refusal=f"actor {actor!r} holds no role in tenant {requested[:64]!r}")
        return TenantChoice(requested, role)
    own = sorted(t for t in grants if t != ALL_TENANTS and t in configured)
    if len(own) == 1 and ALL_TENANTS not in grants:
        return TenantChoice(own[0], role_in(grants, own[0]))
    if not own and ALL_TENANTS not in grants:
        return TenantChoice(None, refusal=f"actor {actor!r} holds a role in no configured tenant")
    return TenantChoice(None, ambiguous=True,
                        refusal=f"actor {actor!r} acts in several tenants; name one with \"tenant\"")
