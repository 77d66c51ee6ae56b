"""ScanWorkflow: the action of a Temporal Schedule — read the authoritative source, decide each change.

Per repository: list the open pull requests updated since the stored watermark (one
activity: the forge listing, filtered by the ledger's watermark), run the real intake for
each candidate, oldest first (``sluicegate.intake.submit``: freshness, policy, dedupe,
receipt, signal-with-start), then advance the watermark over the candidates that got a
decision. A deferred candidate (forge unreadable) stops that repository there, so the
watermark never passes an undecided change. When no repository had a candidate, one
``no-work`` receipt (``nothing-changed``) records the scan and it ends: no model call.

Delivery ids are ``<run id>:<owner>/<repo>#<n>@<sha>`` — deterministic per scan run and
candidate — so an activity retry is a ``duplicate-delivery``, never a second decision;
the work key is the webhook path's (``review_work_key``, built by the intake activity from the
scan's tenant), so a scan finding a version an event of the same tenant already admitted is a
``duplicate-work``.

Deterministic: no clock, I/O or config here; everything arrives in :class:`ScanRequest`.
A repository whose listing or intake keeps failing after retries fails the scan at the
end (after the other repositories were scanned and their watermarks advanced), so a
schedule with ``pause_on_failure`` stops. A cancel ends the scan cancelled, at once, even when it
reaches an activity in flight (patch ``goal-scan-honour-cancel``): nothing more is listed or
decided, and no watermark moves past what the cancel cut short.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from intake.decision import IntakeDecision, Outcome
    from workflows.failures import cancel_requested, failure_type
    from workflows.kinds import FailureType
    from workflows.scan_contracts import (
        INTAKE_SUBMIT_ACTIVITY, NOTHING_CHANGED, SCAN_ADVANCE_ACTIVITY, SCAN_EVENT_TYPE, SCAN_LIST_ACTIVITY,
        SCAN_NO_WORK_ACTIVITY, SCAN_NO_WORK_EVENT_TYPE, SCAN_WORKFLOW, AdvanceWatermarkRequest, CandidatePage,
        IntakeRequest, ListCandidatesRequest, ReceiptRef, ReceiptRequest, ScanCandidate, ScanRequest,
        ScanResult, WatermarkState, scan_source,
    )

MAX_DELIVERY_ID = 256


def delivery_id_for(run_id: str, target_id: str, version: str | None) -> str:
    """``<run id>:<target>@<version>``; hashed when it would not fit the ledger column."""
    value = f"{run_id}:{target_id}@{version or 'current'}"
    if len(value) <= MAX_DELIVERY_ID:
        return value
    return f"{run_id}:sha256:{hashlib.sha256(value.encode()).hexdigest()}"


@workflow.defn(name=SCAN_WORKFLOW)
class ScanWorkflow:
    @workflow.run
    async def run(self, req: ScanRequest) -> ScanResult:
        result = ScanResult(scan_id=req.scan_id)
        failures: list[str] = []
        for repo in req.repos:
            failure = await self._scan_repo(req, repo, result)
            if failure is not None:
                failures.append(failure)
        if failures:
            raise ApplicationError(f"scan {req.scan_id} incomplete: " + "; ".join(failures), type=FailureType.SCAN_INCOMPLETE,
                                   non_retryable=True)
        if result.candidates == 0:
            info = workflow.info()
            ref = await workflow.execute_activity(
                SCAN_NO_WORK_ACTIVITY,
                ReceiptRequest(trigger_kind="schedule", source=scan_source(req.scan_id),
                               delivery_id=f"{info.run_id}:no-work", event_type=SCAN_NO_WORK_EVENT_TYPE,
                               tenant=req.tenant, reason=NOTHING_CHANGED, subject=", ".join(req.repos),
                               message=f"no open pull request in {', '.join(req.repos)} changed since the "
                                       f"last scan ({_watermark_text(result.watermarks)})"),
                result_type=ReceiptRef, **self._options(req))
            result.no_work_receipt_id = ref.receipt_id
        workflow.logger.info("scan %s: %d candidates, %d decisions, %d deferred%s", req.scan_id, result.candidates,
                             len(result.decisions), result.deferred,
                             ", nothing changed" if result.no_work_receipt_id else "")
        return result

    async def _scan_repo(self, req: ScanRequest, repo: str, result: ScanResult) -> str | None:
        """Scan one repository; returns a failure description, or None."""
        opts = self._options(req)
        try:
            page = await workflow.execute_activity(
                SCAN_LIST_ACTIVITY, ListCandidatesRequest(req.scan_id, repo, req.max_candidates, req.tenant),
                result_type=CandidatePage, **opts)
        except ActivityError as err:
            if cancel_requested():  # the scan was cancelled: no other repository is listed
                raise
            return f"{repo}: cannot list pull requests ({failure_type(err)})"
        result.candidates += len(page.candidates)
        if page.truncated:
            result.truncated.append(repo)
        result.watermarks.append(WatermarkState(req.scan_id, repo, page.watermark))
        decided: list[ScanCandidate] = []
        failure = None
        run_id = workflow.info().run_id
        for cand in page.candidates:
            request = IntakeRequest(
                trigger_kind="schedule", source=scan_source(req.scan_id),
                delivery_id=delivery_id_for(run_id, cand.target_id, cand.head_sha), event_type=SCAN_EVENT_TYPE,
                tenant=req.tenant, owner=cand.owner, repo=cand.repo, number=cand.number,
                input_version=cand.head_sha, draft=cand.draft, emitted_at=cand.updated_at)
            try:
                decision = await workflow.execute_activity(INTAKE_SUBMIT_ACTIVITY, request,
                                                           result_type=IntakeDecision, **opts)
            except ActivityError as err:
                if cancel_requested():  # nothing more is decided, and the watermark stays where it was
                    raise
                failure = f"{cand.target_id}: intake failed ({failure_type(err)})"
                break
            result.decisions.append(decision)
            if decision.outcome == Outcome.DEFER:
                # Not decided: the watermark must stay before it, the next scan retries it.
                result.deferred += 1
                break
            decided.append(cand)
        if decided:
            state = await workflow.execute_activity(
                SCAN_ADVANCE_ACTIVITY, AdvanceWatermarkRequest(req.scan_id, repo, decided),
                result_type=WatermarkState, **opts)
            result.watermarks[-1] = state
        return failure

    @staticmethod
    def _options(req: ScanRequest) -> dict[str, Any]:
        return {"start_to_close_timeout": timedelta(seconds=req.activity_timeout_seconds),
                "retry_policy": RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=2.0,
                                            maximum_interval=timedelta(seconds=30),
                                            maximum_attempts=req.activity_max_attempts)}


def _watermark_text(states: list[WatermarkState]) -> str:
    return ", ".join(f"{s.repo} watermark {s.updated_at or 'none'}" for s in states) or "no repositories"


__all__ = ["ScanWorkflow", "delivery_id_for"]
