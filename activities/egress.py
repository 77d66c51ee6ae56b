"""Egress allowlist: the hosts a tenant's tools may reach.

Checked by every tool before it makes an HTTP call, so a tool can never be pointed (by
configuration drift or a hostile argument) at a host the tenant was not granted. A tenant
without an entry gets the ``default`` list; an empty list allows nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from temporalio.exceptions import ApplicationError


@dataclass(frozen=True)
class EgressPolicy:
    default: tuple[str, ...] = ()
    tenants: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def allowed(self, tenant: str, url: str) -> bool:
        host = (urlsplit(url).hostname or "").lower()
        return bool(host) and host in {h.lower() for h in self.tenants.get(tenant, self.default)}

    def check(self, tenant: str, url: str) -> None:
        """Raise a non-retryable ``EgressDenied`` unless ``url``'s host is allowed for ``tenant``."""
        if not self.allowed(tenant, url):
            raise ApplicationError(f"egress to {urlsplit(url).hostname!r} is not on tenant {tenant!r}'s allowlist",
                                   type="EgressDenied", non_retryable=True)
