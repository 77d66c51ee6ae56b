"""The tool gateway: the only path by which a tool mutates the outside world.

Every mutation runs through the idempotency ledger under its operation key:

* ``done`` already → the stored result is returned; the outside is not touched again.
* ``in_flight`` (an earlier attempt died or timed out after sending) → ``reconcile``
  asks the external system whether the effect exists; only if it does not is the
  operation performed again.
* a permanent failure (4xx) → recorded ``failed`` and raised non-retryable.
* a kill in force for the work key, its tenant or everything → refused (``Killed``,
  non-retryable) before anything else, even inside an activity already running. Each
  mutation runs under a short-lived credential scoped to (tenant, work key, generation), issued
  only while no kill covers the work (a kill committed just after the first check is seen
  there) and checked again right before the external call: a kill recorded meanwhile (during a
  slow reconcile, say) has revoked it, and the call is refused.
* an older generation than the work item's (a newer admission superseded it) → refused
  (``FencedOut``, non-retryable, recorded as ``fenced``): a stale holder never mutates. Asked at
  the claim and again right before the external call (an admission can commit in between, during a
  slow reconcile say); only the newest generation's begin takes a fenced entry over.
* an attempt that lost its claim — a newer attempt began on the same entry while this one
  stalled (lost heartbeat, paused or partitioned worker), or Temporal cancelled it — stops
  before the external call (``LeaseLost``): only the newest attempt may mutate. An outcome it
  learns anyway (its call was already out) is not recorded: only the claim that holds the entry
  finishes it, so a stale 422 cannot mark failed what the newer attempt did.
* a transient failure → raised retryable; the entry stays ``in_flight`` so the next
  attempt reconciles first — a timeout on a write is never blindly retried.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Awaitable, Callable

from temporalio import activity
from temporalio.exceptions import ApplicationError

from ledger import (
    AttemptIdentity, BeginResult, BeginState, ClaimStanding, CredentialBroker, CredentialProblem, Kill, KillSwitch,
    SideEffectLedger,
)
from sluicegate.errors import SluicegateError
from workflows.kinds import FailureType


class PermanentToolError(SluicegateError):
    """The external system refused the operation; retrying cannot help."""


class TransientToolError(SluicegateError):
    """The operation may succeed later (5xx, timeout, connection, rate limit)."""

    def __init__(self, message: str, retry_after: float | None = None, kind: str = "Unavailable") -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.kind = kind
        """``Unavailable`` or ``RateLimited``: the activity error is ``Tool<kind>``."""

    def activity_error(self, message: str) -> ApplicationError:
        """Retryable, after the server's delay when it gave one (else Temporal's backoff)."""
        delay = timedelta(seconds=self.retry_after) if self.retry_after else None
        return ApplicationError(message, type=FailureType.of("Tool", self.kind), next_retry_delay=delay)


@dataclass(frozen=True)
class Mutation:
    operation_key: str
    work_key: str
    operation: str
    target_version: str
    generation: int
    tenant: str | None = None


@dataclass(frozen=True)
class MutationResult:
    external_id: str | None
    result: dict[str, Any]
    reconciled: bool = False
    replayed: bool = False


Effect = tuple[str | None, dict[str, Any]]


def killed_error(kill: Kill) -> ApplicationError:
    """The non-retryable error every refused call raises while a kill is in force."""
    return ApplicationError(f"killed by {kill.actor} ({kill.scope} {kill.target}): {kill.reason}", type=FailureType.KILLED,
                            non_retryable=True)


async def refuse_if_killed(kills: KillSwitch | None, work_key: str, tenant: str | None) -> None:
    """Raise :func:`killed_error` while a kill covers the work key, its tenant or everything.
    Every tool calls it first, reads included: a kill stops a run's reads as well as its writes."""
    if kills is not None and (kill := await asyncio.to_thread(kills.active_for, work_key, tenant or None)):
        raise killed_error(kill)


def _attempt_identity() -> AttemptIdentity:
    """The workflow, run and attempt of the activity performing the mutation (none outside one)."""
    if not activity.in_activity():
        return AttemptIdentity()
    info = activity.info()
    return AttemptIdentity(info.workflow_id, info.workflow_run_id, info.attempt)


class ToolGateway:
    def __init__(self, ledger: SideEffectLedger, kills: KillSwitch | None = None,
                 credentials: CredentialBroker | None = None, breakers=None, provider: str = "forge") -> None:
        """``breakers``: a ``ledger.BreakerBoard``; transient tool failures feed ``provider``'s breaker."""
        self._ledger = ledger
        self._kills = kills
        self._credentials = credentials
        self._breakers = breakers
        self._provider = provider

    async def refuse_if_killed(self, work_key: str, tenant: str | None) -> None:
        """For tools that read through the gateway's kill switch without a side effect."""
        await refuse_if_killed(self._kills, work_key, tenant)

    async def mutate(self, m: Mutation, perform: Callable[[], Awaitable[Effect]],
                     reconcile: Callable[[], Awaitable[Effect | None]]) -> MutationResult:
        kill, credential, begin = await asyncio.to_thread(self._open, m, _attempt_identity())
        if kill is not None:
            raise killed_error(kill)
        assert begin is not None  # _open claims whenever no kill stopped it
        log_extra = {"work_key": m.work_key, "operation_key": m.operation_key}
        if begin.state == BeginState.DONE:
            activity.logger.info("%s already done; returning stored result", m.operation_key, extra=log_extra)
            return MutationResult(begin.external_id, begin.result or {}, replayed=True)
        if begin.state == BeginState.FENCED:
            activity.logger.warning("%s refused: %s", m.operation_key, begin.error, extra=log_extra)
            raise ApplicationError(f"{m.operation} refused for a stale holder: {begin.error}", type=FailureType.FENCED_OUT,
                                   non_retryable=True)
        if begin.state == BeginState.FAILED:
            raise ApplicationError(f"{m.operation} failed earlier: {begin.error}", type=FailureType.SIDE_EFFECT_FAILED,
                                   non_retryable=True)
        if begin.state == BeginState.IN_FLIGHT:
            found = await self._reconcile(m, reconcile, begin.attempts)
            if found is not None:
                activity.logger.warning("%s was applied by an earlier attempt; reconciled", m.operation_key,
                                        extra=log_extra)
                return found
        claim = begin.attempts
        await self._require_valid_claim(credential, m, claim)  # a kill during a slow reconcile revokes it
        try:
            external_id, result = await perform()
        except PermanentToolError as exc:
            if not await asyncio.to_thread(self._ledger.fail, m.operation_key, str(exc), claim=claim):
                _not_recorded(m, claim, "failed")
            raise ApplicationError(f"{m.operation} refused: {exc}", type=FailureType.TOOL_REQUEST_REJECTED,
                                   non_retryable=True) from None
        except TransientToolError as exc:
            if self._breakers is not None:
                await asyncio.to_thread(self._breakers.record_failure, self._provider, f"{m.operation}: {exc}")
            raise exc.activity_error(f"{m.operation} may not have completed: {exc}") from None
        if not await asyncio.to_thread(self._ledger.complete, m.operation_key, external_id, result, claim=claim):
            _not_recorded(m, claim, "done")
        return MutationResult(external_id, result)

    def _open(self, m: Mutation, attempt: AttemptIdentity) -> tuple[Kill | None, str | None, BeginResult | None]:
        """In a worker thread, in this order: the kill check (a kill in force: nothing else), the
        mutation's credential, the ledger's claim (``SideEffectLedger.begin``). The issue checks the
        kills again, ordered against kill writes (``ledger/_credentials.py``): a kill committed after
        the first check refuses the credential, so this call too is stopped."""
        if self._kills is not None and (kill := self._kills.active_for(m.work_key, m.tenant or None)):
            return kill, None, None
        credential = None
        if self._credentials is not None:
            issued = self._credentials.issue(m.tenant or "", m.work_key, m.generation)
            if isinstance(issued, Kill):
                return issued, None, None
            credential = issued
        return None, credential, self._ledger.begin(
            m.operation_key, work_key=m.work_key, operation=m.operation, target_version=m.target_version,
            generation=m.generation, attempt=attempt)

    def _standing(self, credential: str | None, m: Mutation,
                  claim: int) -> tuple[CredentialProblem | None, ClaimStanding | None]:
        """In a worker thread: what is wrong with the credential (None: usable), else where the claim stands."""
        if credential is not None and self._credentials is not None:  # only a broker issues a credential
            problem = self._credentials.problem(credential)
            if problem is not None:
                return problem, None
        standing = self._ledger.standing(m.operation_key, claim)
        if standing.newer_generation is not None:  # give the entry up: the newer generation's begin takes it over
            self._ledger.fence(m.operation_key, _fenced_message(m, standing.newer_generation), claim=claim)
        return None, standing

    async def _require_valid_claim(self, credential: str | None, m: Mutation, claim: int) -> None:
        """Right before the external call: the credential still valid (not revoked by a kill, not
        expired), the attempt not cancelled, and its claim not taken over by a newer attempt."""
        cancelled = activity.in_activity() and activity.is_cancelled()
        problem, standing = await asyncio.to_thread(self._standing, credential, m, claim)
        if problem is not None:
            activity.logger.warning("%s refused: %s", m.operation_key, problem.message, extra={"work_key": m.work_key})
            raise ApplicationError(f"{m.operation} refused: {problem.message}",
                                   type=FailureType.KILLED if problem.revoked else FailureType.CREDENTIAL_EXPIRED,
                                   non_retryable=problem.revoked)
        assert standing is not None  # no credential problem: the claim was read
        if standing.newer_generation is not None:  # admitted after this attempt's begin: a stale holder never mutates
            error = _fenced_message(m, standing.newer_generation)
            activity.logger.warning("%s refused: %s", m.operation_key, error, extra={"work_key": m.work_key})
            raise ApplicationError(f"{m.operation} refused for a stale holder: {error}", type=FailureType.FENCED_OUT,
                                   non_retryable=True)
        lost = None
        if cancelled or (activity.in_activity() and activity.is_cancelled()):
            lost = "the attempt was cancelled (heartbeat lost or timed out)"
        elif not standing.held:
            lost = f"claim {claim} on {m.operation_key} was taken over by a newer attempt"
        if lost is not None:
            activity.logger.warning("%s not performed: %s", m.operation_key, lost, extra={"work_key": m.work_key})
            raise ApplicationError(f"{m.operation} not performed: {lost}", type=FailureType.LEASE_LOST)

    async def _reconcile(self, m: Mutation, reconcile: Callable[[], Awaitable[Effect | None]],
                         claim: int) -> MutationResult | None:
        try:
            found = await reconcile()
        except TransientToolError as exc:
            raise exc.activity_error(f"cannot reconcile {m.operation_key}: {exc}") from None
        except PermanentToolError as exc:
            raise ApplicationError(f"cannot reconcile {m.operation_key}: {exc}", type=FailureType.TOOL_REQUEST_REJECTED,
                                   non_retryable=True) from None
        if found is None:
            return None
        external_id, result = found
        if not await asyncio.to_thread(self._ledger.complete, m.operation_key, external_id, result, claim=claim):
            _not_recorded(m, claim, "done")
        return MutationResult(external_id, result, reconciled=True)


def _fenced_message(m: Mutation, current: int) -> str:
    return f"generation {m.generation} is older than the work item's current generation {current}"


def _not_recorded(m: Mutation, claim: int, status: str) -> None:
    """A stalled attempt's late outcome: a newer attempt took the entry over (its own outcome stands,
    or it reconciles with the outside), or the entry finished already; nothing was written."""
    activity.logger.warning("%s: claim %d no longer holds the entry; its outcome (%s) was not recorded",
                            m.operation_key, claim, status, extra={"work_key": m.work_key})
