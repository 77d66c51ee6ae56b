"""Operator actions shared by ``starter.py`` and the console: kills and dead letters.

One implementation for both faces, so what is recorded does not depend on where an operator
clicked or typed: a kill records its actor and reason and revokes the credentials in its scope
(``ledger.KillSwitch``), then signals the running agent workflows it covers; a dead letter is
retried by re-submitting its version as a manual trigger *in the letter's tenant* (same checks,
a receipt naming the actor) and closed with a note saying who, which receipt and why; a
resolve closes it with who and why.

Failure modes written against:

* A kill target that would change the meaning of the visibility query (quotes, ``OR``): targets
  are validated (a work key must parse and name its tenant; a tenant must be a tenant name)
  before any query is built.
* Temporal unreachable while killing: the kill is already recorded (calls are refused at once,
  credentials revoked); :func:`signal_kill` raises and the caller reports that the running
  workflows were not signalled — they stop at their next model or tool call anyway.
* Two operators closing one letter at once: ``DeadLetters.close`` acts only on an open letter,
  so one wins and the other is told.
"""

from __future__ import annotations

import uuid
from typing import Literal, Protocol

from intake.hygiene import MAX_REASON
from intake.identity import is_tenant_name, parse_work_key
from intake.manual_request import ManualTrigger
from workflows.contracts import KillNotice
from workflows.names import AGENT_WORKFLOW, KILL_SIGNAL

KillScope = Literal["work_key", "tenant", "all"]
KILL_SCOPES: tuple[KillScope, ...] = ("work_key", "tenant", "all")
ALL_TARGET = "*"


class LetterFields(Protocol):
    """What a retry needs of a dead letter (``ledger.DeadLetter``)."""

    id: str
    work_key: str
    tenant: str
    source: str
    input_version: str


def kill_target(scope: str, target: str | None) -> str:
    """The validated target of a kill or unkill in ``scope``; ``ValueError`` says what is wrong."""
    if scope == "all":
        return ALL_TARGET
    if not target:
        raise ValueError(f"a {scope.replace('_', ' ')} is required")
    if scope == "work_key":
        tenant = parse_work_key(target).tenant  # raises ValueError for anything that is not a key
        if tenant is None:
            raise ValueError("work keys start with their tenant: e.g. acme/github:acme/api#42:review")
        return target
    if scope == "tenant":
        if not is_tenant_name(target):
            raise ValueError(f"not a tenant name: {target[:64]!r}")
        return target
    raise ValueError(f"unknown kill scope {scope[:32]!r} (one of {', '.join(KILL_SCOPES)})")


def kill_tenant(scope: str, target: str) -> str | None:
    """The tenant a validated kill target belongs to; ``None`` for ``all`` (every tenant)."""
    if scope == "work_key":
        return parse_work_key(target).tenant
    return target if scope == "tenant" else None


def running_agents_query(scope: str, target: str) -> str:
    """Visibility query for the running agent workflows a kill scope covers (target validated)."""
    base = f'WorkflowType = "{AGENT_WORKFLOW}" AND ExecutionStatus = "Running"'
    if scope == "work_key":
        # A run admitted before the tenancy upgrade is searchable only by its old key (no tenant).
        tenant, _, legacy = target.partition("/")
        return (f'{base} AND (SluicegateWorkKey = "{target}" OR '
                f'(SluicegateWorkKey = "{legacy}" AND SluicegateTenant = "{tenant}"))')
    if scope == "tenant":
        return f'{base} AND SluicegateTenant = "{target}"'
    return base


async def signal_kill(client, scope: str, target: str, actor: str, reason: str) -> int:
    """Signal every running agent workflow the kill covers to stop before its next step; returns
    how many. Visibility is eventually consistent: a run started a moment ago may be missed —
    the recorded kill stops it at its next call."""
    count = 0
    async for wf in client.list_workflows(running_agents_query(scope, target)):
        await client.get_workflow_handle(wf.id, run_id=wf.run_id).signal(KILL_SIGNAL, KillNotice(actor, reason))
        count += 1
    return count


def retry_trigger(letter: LetterFields, reason: str) -> ManualTrigger:
    """The manual trigger that re-submits a dead letter's version in its own tenant (the tenant's
    scope, budget, forge credentials and egress list apply, never a default source's).
    ``ValueError`` when the letter's work key is not a usable one."""
    key = parse_work_key(letter.work_key)
    target, tenant = key.target, key.tenant or letter.tenant
    return ManualTrigger(tenant=tenant, repository=f"{target.owner}/{target.repo}", number=target.number,
                         input_version=letter.input_version,
                         reason=f"dlq retry {letter.id} (first from {letter.source}): {reason}"[:MAX_REASON],
                         request_id=f"dlq-{uuid.uuid4()}")


def retry_took(answer: dict) -> bool:
    """Did the manual trigger's answer take the work (accepted, or queued for capacity)?"""
    return answer.get("outcome") == "accept" or bool(answer.get("queued"))


def retried_note(actor: str, receipt_id: str | None, reason: str) -> str:
    return f"retried by {actor} (receipt {receipt_id or '-'}): {reason}"


def resolved_note(actor: str, reason: str) -> str:
    return f"resolved by {actor}: {reason}"


async def dispatch_now(client) -> str:
    """After an unkill: start a pass of the deferred-queue dispatcher now, so queued work in the
    lifted scope is re-decided at once instead of at the next scheduled tick. Triggers the
    ``sluicegate-dispatch-deferred`` schedule with overlap ``BUFFER_ONE``: if a pass is running, the
    triggered one starts right after it (a running pass may have read the queue before the kill was
    lifted). Returns what happened, for the operator; a schedule that does not exist (schedules not
    applied) is said, not raised."""
    from temporalio.client import ScheduleOverlapPolicy
    from temporalio.service import RPCError, RPCStatusCode

    from sluicegate.temporal.schedules import DISPATCH_SCHEDULE

    try:
        await client.get_schedule_handle(DISPATCH_SCHEDULE).trigger(overlap=ScheduleOverlapPolicy.BUFFER_ONE)
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        return (f"no {DISPATCH_SCHEDULE} schedule (run `starter.py schedule apply`): queued work waits for the "
                "next dispatch pass (a run's end)")
    return f"a dispatch pass was started ({DISPATCH_SCHEDULE}): queued work is re-decided now"


UNKILL_DISPATCH_FAILED = ("dispatch pass NOT started ({error}): queued work is re-decided at the next scheduled "
                          "pass (capacity.dispatch_interval_seconds) or when a run ends")
