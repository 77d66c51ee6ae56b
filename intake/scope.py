"""Which repositories a source or a tenant may name: ``owner/repo`` globs, matched without I/O.

A webhook source declares the repositories it serves (``sources.<name>.repositories``); a
tenant's scope is the union of its sources' declarations. Intake refuses a candidate outside
the scope (``out-of-scope``) before the forge is read, so a source — or an actor, a scan, a
goal, a dead-letter retry — can never make Sluicegate read, review or bill another tenant's
repository, whatever its payload says and whichever forge credential is configured.

Glob syntax: one ``/`` between an owner part and a repository part; in each part ``*``
matches any run of characters and ``?`` one character — never across the ``/`` — and
everything else is literal, compared case-insensitively (GitHub names are). So
``acme/*`` is every repository of ``acme``, ``*/*`` is everything (say so deliberately),
``acme/api-?`` matches ``acme/api-1``. Character classes and ``**`` are refused: a
scope should read at a glance.

Failure modes this module is written against:

* a glob that looks plausible but matches nothing, or more than meant (``acme*`` without a
  ``/``, ``acme/[ab]pi``): :func:`check_glob` refuses it when the configuration loads;
* a ``*`` that crosses the ``/`` (``fnmatch`` would let ``acme*`` match ``acme-evil/x``):
  owner and repository are matched separately;
* an unknown source or tenant: nothing is in its scope (fail closed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Mapping

from intake.envelope import PullRequestRef, TriggerKind

_GLOB_PART = re.compile(r"[A-Za-z0-9_.*?-]{1,100}")


def check_glob(glob: str) -> str:
    """``glob`` lower-cased when it is a usable ``owner/repo`` glob; ``ValueError`` saying why not."""
    owner, sep, repo = glob.partition("/")
    if not sep or "/" in repo:
        raise ValueError(f"{glob!r} must be <owner>/<repo> (exactly one '/'), e.g. acme/* or acme/api")
    for part in (owner, repo):
        if not _GLOB_PART.fullmatch(part) or "**" in part or part in (".", ".."):
            raise ValueError(f"{glob!r}: each side may hold letters, digits, '_', '.', '-', '*' and '?' "
                             "(no '**', no character classes, not '.' or '..')")
    return glob.lower()


@lru_cache(maxsize=1024)
def _part_pattern(part: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in part))


def repository_matches(owner: str, repo: str, glob: str) -> bool:
    """Whether ``owner/repo`` matches one ``owner/repo`` glob (case-insensitive; ``*`` never crosses ``/``)."""
    g_owner, _, g_repo = glob.lower().partition("/")
    return (_part_pattern(g_owner).fullmatch(owner.lower()) is not None
            and _part_pattern(g_repo).fullmatch(repo.lower()) is not None)


def repository_in_scope(owner: str, repo: str, globs: Iterable[str]) -> bool:
    return any(repository_matches(owner, repo, g) for g in globs)


@dataclass(frozen=True)
class ScopeRules:
    """The declared scopes: by webhook source (its own globs) and by tenant (the union of its sources')."""

    by_source: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    by_tenant: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    unrestricted: bool = False
    """Everything in scope: only for tests and benchmarks of other stages."""

    @classmethod
    def everything(cls) -> "ScopeRules":
        return cls(unrestricted=True)

    def tenant_globs(self, tenant: str) -> tuple[str, ...]:
        return self.by_tenant.get(tenant, ())

    def tenant_covers(self, tenant: str, owner: str, repo: str) -> bool:
        return self.unrestricted or repository_in_scope(owner, repo, self.tenant_globs(tenant))

    def refusal(self, trigger: TriggerKind, source: str, tenant: str, ref: PullRequestRef) -> str | None:
        """Why ``ref`` is out of scope for this trigger, or ``None`` when it is in scope.

        A webhook delivery is held to its source's declaration; every other trigger (manual,
        scan, goal, a dead-letter retry) to its tenant's."""
        if self.unrestricted:
            return None
        name = f"{ref.owner}/{ref.repo}"
        if trigger == TriggerKind.EVENT:
            globs = self.by_source.get(source, ())
            if not repository_in_scope(ref.owner, ref.repo, globs):
                return f"{name} is not among the repositories source {source!r} serves ({_listed(globs)})"
            return None
        if not self.tenant_covers(tenant, ref.owner, ref.repo):
            return f"{name} is not in tenant {tenant!r}'s scope ({_listed(self.tenant_globs(tenant))})"
        return None


def _listed(globs: tuple[str, ...]) -> str:
    if not globs:
        return "none declared"
    shown = ", ".join(globs[:5])
    return shown + (f", and {len(globs) - 5} more" if len(globs) > 5 else "")
