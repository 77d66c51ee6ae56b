"""Patch ``lean-loop-steps``: the agent loop's bookkeeping costs less history per step (issue 11 item 6).

Workflow code (deterministic). Under the patch, for runs that start on code that has it:

* **One patch marker per run instead of eight.** Every ``workflow.patched`` call records a marker
  *and* (Temporal's core SDK) a ``TemporalChangeVersion`` search-attribute upsert on the run's first
  pass: 16 events per run for the eight loop patches. :func:`patched` asks for this patch first, once
  per run; when it is in force, every patch in :data:`SUBSUMED` is in force too, without a marker of
  its own. Histories recorded before it have no ``lean-loop-steps`` marker, so on replay the first
  call answers False and every older patch is asked exactly as before.
* **The ledger bookkeeping runs as local activities** (:func:`ledger_activity`): the claim, the policy
  re-check, the outcome record and the capacity release — short ledger reads and writes on this
  worker. Each is one marker in history instead of scheduled/started/completed and a workflow task
  round trip. Same names, timeouts and retry policies; backoffs longer than
  :data:`LOCAL_RETRY_THRESHOLD` become durable timers (a long ledger outage does not hold a workflow
  task open). A worker crash before the workflow task completes runs them again on the next worker:
  at least once, as before (all four are idempotent: the claim is a read, the re-check's refusal
  receipt has a fixed id, the release is keyed by work key and generation, and an outcome the version
  row already holds — same generation, status and run — is not written again:
  ``sluicegate.ledger.record_run_outcome`` checks first, so a repeat neither appends the receipt's
  note nor counts the run twice). Repeats do happen: a signal arriving during the run's last workflow
  task makes the server reject its completion and the markers with it, and a cancel raised during
  the outcome write records the order again from the wind-down.
* **A write is never cut off by a cancel** (:func:`finish_then_cancel`): a local activity would be
  cancelled at once (a regular one without heartbeats could not see the cancel), so the outcome
  record and the release are awaited to their end and the cancel is raised after, as before.

Plus, in ``agent_loop``: the memo's cost so far is upserted after a model step only when another
step follows (the order's end upserts the final status and cost right after).

Patch ``memo-changes-only`` (issue 11 item 6, session 9) goes one step further: a memo upsert carries only
the fields whose value differs from the run's memo (``workflows/run_memo.changed_fields``), not all eight.
Every memo field is a payload, and for each payload of a workflow task the worker's SDK enters the
workflow sandbox four times (serialization and external-store contexts for encoding, external
storage and reference encoding; about 0.1 ms of CPU each): a review order's four upserts carried 32
fields, now 5 for an admitted run (its first upsert is the status alone; 11 when the run started
without a memo, as in ``bench/loop_bench.py``). The memo the UI shows after
each upsert is the same. It is asked *first* and stands for ``lean-loop-steps`` (so for everything that
subsumes) without that marker: a run still records one patch marker. Histories recorded before it have
no ``memo-changes-only`` marker, so on replay it answers False and ``lean-loop-steps`` is asked exactly
as before.

Patch ``lean-loop-steps-2`` (issue 11 item 6, session 13) stands for ``memo-changes-only`` (and so for
everything above) and takes two more pieces of bookkeeping off a step:

* **The claim answers for the policy.** The order's claim (a local activity, so it runs on this very
  worker) also says whether the worker's policy version is still the one the order was admitted
  under (``ClaimRequest.ask_policy``, ``Claim.policy_unchanged``); when it is, the policy re-check's
  local activity is not run: with the policy unchanged it answers "permitted" without reading
  anything (``activities/policy_recheck.py``), and both would run on the same worker, under the same
  policy. A claim that did not answer (an unreachable ledger, a refusal) leaves the re-check as before.
* **The memo's cost so far is spaced out.** After a model step, the cost is upserted only when
  ``RuntimeOptions.memo_cost_interval_seconds`` (``activities.memo_cost_interval_seconds``, 10 s by
  default) of workflow time have passed since the run's last memo upsert, and a cost held back is sent
  after the next tool call that finds it due. The status changes at an order's start and end, and the
  final cost, are upserted as before. Every upsert is a history event and a visibility write on the
  Temporal server, so a fast tool loop (steps milliseconds apart) made one per step for a figure the UI
  shows; now the memo's cost lags the ledger's by at most the interval plus the model or tool call in
  flight, and is exact once the order ends. A step's time is ``workflow.now()`` (its workflow task's
  start), so replay decides the same.

Asked first, as ``memo-changes-only`` was: histories recorded before it answer False and ask the next
patch as before. ``RuntimeOptions.memo_cost_interval_seconds``'s default (10) decides replay for orders
encoded without the field (an admitter before this change): never change it. A narrow window: a claim
whose local activity outlives its workflow task is recorded there; if the worker then dies, the next
worker trusts that recorded "unchanged" answer (the order runs under the policy of the worker that
claimed it moments before), as it would trust a recorded re-check.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any, Awaitable, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.workflow import ActivityCancellationType

LEAN_PATCH = "lean-loop-steps"
MEMO_CHANGES_PATCH = "memo-changes-only"
LEAN2_PATCH = "lean-loop-steps-2"
SUBSUMED = frozenset({
    "claim-requires-admission", "cancel-is-an-outcome", "claim-order-at-start", "policy-first-step",
    "policy-first-step-fail-closed", "memo-cost-so-far", "read-artifact-tool", "release-capacity-at-end",
    "supersede-at-step-boundary", "continue-as-new-between-orders",
})
"""The loop's patches before this one: in force in every run that has ``lean-loop-steps``."""
LOCAL_RETRY_THRESHOLD = timedelta(seconds=2)
_ATTR = "_lean_loop_steps"
_CHANGES_ATTR = "_memo_changes_only"
_LEAN2_ATTR = "_lean_loop_steps_2"
T = TypeVar("T")


def lean() -> bool:
    """Is ``lean-loop-steps`` in force in this run? Asked of Temporal once per run, at the first call,
    after ``lean-loop-steps-2`` and ``memo-changes-only`` (each implies the next)."""
    instance = workflow.instance()
    known = getattr(instance, _ATTR, None)
    if known is None:
        lean2 = workflow.patched(LEAN2_PATCH)
        setattr(instance, _LEAN2_ATTR, lean2)
        changes = lean2 or workflow.patched(MEMO_CHANGES_PATCH)
        setattr(instance, _CHANGES_ATTR, changes)
        known = changes or workflow.patched(LEAN_PATCH)
        setattr(instance, _ATTR, known)
    return known


def memo_changes_only() -> bool:
    """Is ``memo-changes-only`` in force in this run (memo upserts carry the changed fields only)?"""
    lean()
    return bool(getattr(workflow.instance(), _CHANGES_ATTR))


def lean2() -> bool:
    """Is ``lean-loop-steps-2`` in force in this run (the claim answers for the policy, a step's cost
    upsert waits for the interval)?"""
    lean()
    return bool(getattr(workflow.instance(), _LEAN2_ATTR))


def patched(patch_id: str) -> bool:
    """``workflow.patched`` for the loop's patches: True without a marker when ``lean-loop-steps`` is in
    force and ``patch_id`` is one it subsumes."""
    if lean() and patch_id in SUBSUMED:
        return True
    return workflow.patched(patch_id)


async def ledger_activity(name: str, arg: Any, *, start_to_close_timeout: timedelta, retry_policy: RetryPolicy,
                          cancellation_type: ActivityCancellationType, result_type: type | None = None) -> Any:
    """A short ledger activity: local under ``lean-loop-steps``, a regular activity on older histories."""
    if lean():
        return await workflow.execute_local_activity(
            name, arg, result_type=result_type, start_to_close_timeout=start_to_close_timeout,
            retry_policy=retry_policy, cancellation_type=cancellation_type,
            local_retry_threshold=LOCAL_RETRY_THRESHOLD)
    return await workflow.execute_activity(
        name, arg, result_type=result_type, start_to_close_timeout=start_to_close_timeout,
        retry_policy=retry_policy, cancellation_type=cancellation_type)


async def finish_then_cancel(work: Awaitable[T]) -> T:
    """Await ``work`` to its end; a cancel that arrived meanwhile is raised after it (under the patch:
    a ledger write is not interrupted half-way, and not written twice at once by the cleanup)."""
    if not lean():
        return await work
    task = asyncio.ensure_future(work)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True
            continue
        if cancelled:
            raise asyncio.CancelledError()
        return result
