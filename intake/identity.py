"""Stable work identity: the same tenant, pull request and task give the same key on every path.

The work key is ``<tenant>/<forge>:<owner>/<repo>#<number>:<task>``, for example
``acme/github:acme/api#42:review``. Event, scan, manual and goal triggers must all build it
with :func:`review_work_key` (or :func:`review_candidate`); if each path built its own key,
"reliability" would triple the work instead of deduplicating it.

The tenant comes first so that everything keyed by the work key — dedupe, generations and
fencing, capacity holds, the side-effect ledger (operation keys derive from the work key),
budget reservations, dead letters, kills, the workflow id ``agent/<work key>`` — is
partitioned by tenant without any table knowing about tenants. Two tenants reviewing one
pull request are two work items, two runs and two comments.

Failure modes this module is written against:

* a tenant name that contains ``/`` or ``:`` would make the key ambiguous (where does the
  tenant end?): :data:`TENANT_PATTERN` allows neither, and :func:`review_work_key` raises
  ``ValueError`` for a tenant that does not match it, so a bad name fails where it is
  configured or built, never later in a parser;
* owner and repository case: GitHub treats ``ACME/API`` and ``acme/api`` as one repository,
  so the key lower-cases them (the tenant is already lower-case by its pattern);
* a key written before tenancy (``github:acme/api#42:review``, in the history of a run that
  was in flight at an upgrade) still parses: :func:`parse_work_key` reports its tenant as
  ``None`` and :func:`with_tenant` rewrites it to today's form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from intake.envelope import PullRequestRef, WorkCandidate

REVIEW_TASK = "review"
TENANT_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"
"""Tenant names: lower-case letters, digits, ``_`` and ``-``; no ``/`` (it ends the tenant in a work key)."""
_TENANT = re.compile(TENANT_PATTERN)
_KEY = re.compile(r"^(?:(?P<tenant>[a-z0-9][a-z0-9_-]{0,62})/)?(?P<forge>[a-z0-9_-]+):"
                  r"(?P<owner>[a-z0-9_.-]{1,100})/(?P<repo>[a-z0-9_.-]{1,100})#(?P<number>[1-9][0-9]{0,18}):"
                  r"(?P<task>[a-z0-9_-]+)$")


def is_tenant_name(name: object) -> bool:
    return isinstance(name, str) and _TENANT.fullmatch(name) is not None


_TASK = re.compile(r"^[a-z0-9_-]+$")


def work_key_for(tenant: str, ref: PullRequestRef, task: str, forge: str = "github") -> str:
    """``acme/github:acme/api#42:<task>`` — the one key scheme every registered task uses
    (``docs/tasks.md``); lower-cased owner/repo, so case never splits work."""
    if not is_tenant_name(tenant):
        raise ValueError(f"not a tenant name: {tenant!r} (must match {TENANT_PATTERN})")
    if not _TASK.fullmatch(task):
        raise ValueError(f"not a task name: {task!r}")
    return f"{tenant}/{forge}:{ref.owner.lower()}/{ref.repo.lower()}#{ref.number}:{task}"


def review_work_key(tenant: str, ref: PullRequestRef, forge: str = "github") -> str:
    """``acme/github:acme/api#42:review`` — lower-cased owner/repo, so case never splits work."""
    return work_key_for(tenant, ref, REVIEW_TASK, forge)


def review_candidate(tenant: str, ref: PullRequestRef, input_version: str | None, draft: bool = False,
                     title: str = "") -> WorkCandidate:
    """The work candidate for reviewing ``ref`` on behalf of ``tenant``: key and tenant always agree."""
    return WorkCandidate(work_key=review_work_key(tenant, ref), target=ref, input_version=input_version,
                         tenant=tenant, draft=draft, title=title)


@dataclass(frozen=True)
class WorkKeyParts:
    tenant: str | None
    """``None`` for a key written before tenancy (no tenant prefix)."""
    forge: str
    target: PullRequestRef
    task: str


def parse_work_key(work_key: str) -> WorkKeyParts:
    """Split a work key into its parts; ``ValueError`` when it is not one."""
    m = _KEY.fullmatch(work_key or "")
    if m is None:
        raise ValueError(f"not a work key: {work_key[:200]!r} (expected <tenant>/github:<owner>/<repo>#<n>:review)")
    return WorkKeyParts(m["tenant"], m["forge"], PullRequestRef(m["owner"], m["repo"], int(m["number"])), m["task"])


def with_tenant(work_key: str, tenant: str | None) -> str:
    """Today's form of ``work_key``: a key without a tenant gets ``tenant`` in front; others are unchanged.

    For values carried by runs admitted before tenancy (their work orders hold the old key):
    what they write to the ledger lands under the key the upgrade migration gave their rows."""
    if not tenant or not is_tenant_name(tenant):
        return work_key
    try:
        parts = parse_work_key(work_key)
    except ValueError:
        return work_key
    return work_key if parts.tenant is not None else f"{tenant}/{work_key}"


def workflow_id_for(work_key: str) -> str:
    """The Temporal workflow id for a work key: one workflow per work key (so one per tenant and target)."""
    return f"agent/{work_key}"
