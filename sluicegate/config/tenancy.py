"""Tenancy in the configuration: which tenants exist, their scopes, who may act in them.

Decisions (docs/security.md, "Tenancy and scope"):

* A tenant exists when a webhook source names it (``sources.<name>.tenant``). Its scope is
  the union of its sources' ``repositories`` globs; there is no second list to keep in step.
* Actors hold a role per tenant (``actors.<name>.tenants: {acme: operator}``); ``*`` is
  platform-wide.

Checked when the configuration loads, each error naming its dotted path, against these
failure modes:

* a tenant name that would make work keys ambiguous (``/``, ``:``, upper case...);
* an actor granted a role in a tenant that does not exist (a typo would silently grant
  nothing, or later grant a tenant someone else creates under that name);
* the old single ``role:`` of an actor (before tenancy it meant "in every tenant"): refused
  with the new shape in the message instead of being guessed;
* a schedule scanning a repository outside its tenant's scope, or for a tenant that has no
  scope at all (every candidate would be refused ``out-of-scope`` at every tick);
* ``goals.tenant`` set to a tenant that does not exist;
* ``model.tenants`` naming a tenant that does not exist (its runs would silently use the default key).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from intake.actors import ALL_TENANTS, Role
from intake.identity import TENANT_PATTERN, is_tenant_name
from intake.scope import ScopeRules, repository_in_scope

if TYPE_CHECKING:
    from sluicegate.config.settings import Settings

__all__ = ["Role", "actor_shape", "check_tenancy", "configured_tenants", "scope_rules"]


def actor_shape(data: Any) -> Any:
    """Refuse the pre-tenancy ``{token, role}`` shape with a message showing the new one."""
    if isinstance(data, dict) and "role" in data and "tenants" not in data:
        raise ValueError(f"'role' is replaced by a role per tenant: tenants: {{<tenant>: {data['role']}}} "
                         f"(or {{'*': {data['role']}}} for every tenant; see docs/configuration.md)")
    return data


def configured_tenants(settings: "Settings") -> set[str]:
    return {src.tenant for src in settings.sources.values()}


def scope_rules(settings: "Settings") -> ScopeRules:
    """The declared scopes: each source's globs, and each tenant's union of them."""
    by_tenant: dict[str, list[str]] = {}
    for src in settings.sources.values():
        globs = by_tenant.setdefault(src.tenant, [])
        globs.extend(g for g in src.repositories if g not in globs)
    return ScopeRules(by_source={name: tuple(src.repositories) for name, src in settings.sources.items()},
                      by_tenant={t: tuple(g) for t, g in by_tenant.items()})


def check_tenancy(settings: "Settings") -> None:
    """Raise ``ValueError`` listing every tenancy problem of ``settings`` (dotted paths)."""
    tenants = configured_tenants(settings)
    rules = scope_rules(settings)
    problems = [f"sources.{name}.tenant: {src.tenant!r} must match {TENANT_PATTERN}"
                for name, src in settings.sources.items() if not is_tenant_name(src.tenant)]
    for name, actor in settings.actors.items():
        for tenant in actor.tenants:
            if tenant != ALL_TENANTS and tenant not in tenants:
                problems.append(f"actors.{name}.tenants: {tenant!r} is not a tenant of any source "
                                f"(configured: {', '.join(sorted(tenants)) or 'none'}; '*' means every tenant)")
    for sid, sched in settings.schedules.items():
        if sched.tenant not in tenants:
            problems.append(f"schedules.{sid}.tenant: {sched.tenant!r} is not a tenant of any source")
            continue
        outside = [r for r in sched.repos
                   if not repository_in_scope(*r.partition("/")[::2], rules.tenant_globs(sched.tenant))]
        if outside:
            problems.append(f"schedules.{sid}.repos: {', '.join(outside)} not in tenant {sched.tenant!r}'s scope "
                            f"({', '.join(rules.tenant_globs(sched.tenant))})")
    if "tenant" in settings.goals.model_fields_set and settings.goals.tenant not in tenants:
        problems.append(f"goals.tenant: {settings.goals.tenant!r} is not a tenant of any source")
    problems += [f"model.tenants: {tenant!r} is not a tenant of any source"
                 for tenant in settings.model.tenants if tenant not in tenants]
    if problems:
        raise ValueError("tenancy: " + "; ".join(problems))
