"""Capacity activities: give slots back when a run ends, dispatch the deferred queue, reap.

* ``release`` — the agent workflow's last act: its slots go back, then a dispatch pass
  admits deferred work into the room it left (so the queue, not the next newcomer, gets it).
* ``dispatch`` — the scheduled pass (also picks up work whose retry-after has passed).
* ``reap`` — frees slots whose run is no longer open in Temporal (terminated, timed out,
  failed, or never started and no longer pending admission), then dispatches.
"""

from __future__ import annotations

import asyncio

from sqlmodel import Session
from temporalio import activity
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from intake.capacity import CapacityPlanner
from intake.capacity.dispatch import DispatchReport, RoomCheck, dispatch_once
from intake.capacity.fairness import DEFAULT_AGING_SECONDS
from intake.identity import workflow_id_for
from ledger import CapacityLedger, DeferredQueue, PoisonLetters, WorkItem
from workflows.capacity_contracts import DispatchRequest, DispatchResult, ReapRequest, ReleaseRequest
from workflows.names import DISPATCH_ACTIVITY, REAP_ACTIVITY, RELEASE_CAPACITY_ACTIVITY


def _result(report: DispatchReport, released: list[str]) -> DispatchResult:
    return DispatchResult(report.admitted, report.dropped, report.dead, report.deferred, report.skipped, released)


RELEASE_PASS_SECONDS = 60.0
"""A release's dispatch pass is bounded well inside the activity's 2-minute timeout: the release
itself must never fail because the queue is slow (the scheduled pass carries on)."""


class CapacityActivities:
    def __init__(self, client: Client, capacity: CapacityLedger, queue: DeferredQueue, service,
                 poison: PoisonLetters, engine, defaults: DispatchRequest | None = None,
                 planner: CapacityPlanner | None = None, aging_seconds: float | None = DEFAULT_AGING_SECONDS) -> None:
        self._client = client
        self._capacity = capacity
        self._queue = queue
        self._service = service
        self._poison = poison
        self._engine = engine
        self._defaults = defaults or DispatchRequest()
        self._dispatching = asyncio.Lock()
        self._planner = planner or CapacityPlanner.unlimited()
        self._aging_seconds = aging_seconds

    async def _dispatch(self, req: DispatchRequest) -> DispatchReport:
        async with self._dispatching:  # one pass at a time per worker; the ledger keeps passes safe anyway
            active = await asyncio.to_thread(self._capacity.active_work_by_tenant)
            room = RoomCheck(await asyncio.to_thread(self._capacity.counters), self._planner)
            return await dispatch_once(self._queue, self._service, {t: len(k) for t, k in active.items()},
                                       dead_letters=self._poison, batch=req.batch, max_failures=req.max_failures,
                                       retry_after=req.retry_after_seconds, room=room,
                                       aging_seconds=self._aging_seconds)

    @activity.defn(name=RELEASE_CAPACITY_ACTIVITY)
    async def release(self, req: ReleaseRequest) -> DispatchResult:
        freed, waiting = await asyncio.to_thread(self._release, req)
        activity.logger.info("released %s", ", ".join(freed) or "no slots", extra={"work_key": req.work_key})
        if not waiting or self._dispatching.locked():
            # Nothing waits in the queue (the pass would find nothing due), or a pass is running on this
            # worker: it (or the next) uses the room. An item deferred after the look is dispatched by
            # the next release or the scheduled pass, as one deferred just after a pass ran.
            return _result(DispatchReport(), freed)
        try:
            report = await asyncio.wait_for(self._dispatch(self._defaults), timeout=RELEASE_PASS_SECONDS)
        except Exception as exc:  # noqa: BLE001 - the release stands; the scheduled pass retries dispatch
            activity.logger.warning("dispatch after release failed: %r", exc, extra={"work_key": req.work_key})
            report = DispatchReport()
        return _result(report, freed)

    def _release(self, req: ReleaseRequest) -> tuple[list[str], bool]:
        """In a worker thread: give the slots back, then look whether any deferred item waits (one hop)."""
        freed = self._capacity.release(req.work_key, req.generation)
        try:
            waiting = self._queue.any_waiting()
        except Exception as exc:  # noqa: BLE001 - the slots are back; unsure whether anything waits: run the pass
            activity.logger.warning("deferred-queue look after release failed: %r", exc, extra={"work_key": req.work_key})
            waiting = True
        return freed, waiting

    @activity.defn(name=DISPATCH_ACTIVITY)
    async def dispatch(self, req: DispatchRequest) -> DispatchResult:
        report = await self._dispatch(req)
        if report.admitted or report.dead or report.dropped:
            activity.logger.info("dispatched: %d admitted, %d dropped, %d dead, %d still deferred",
                                 len(report.admitted), len(report.dropped), len(report.dead), report.deferred)
        return _result(report, [])

    @activity.defn(name=REAP_ACTIVITY)
    async def reap(self, req: ReapRequest) -> DispatchResult:
        holds = await asyncio.to_thread(self._capacity.holds, req.grace_seconds)
        newest: dict[str, int] = {}
        for hold in holds:
            newest[hold.work_key] = max(newest.get(hold.work_key, 0), hold.generation)
        reaped = []
        for work_key, generation in newest.items():
            activity.heartbeat(work_key)
            if await self._still_open(work_key):
                continue
            await asyncio.to_thread(self._capacity.release, work_key, generation)
            activity.logger.warning("reaped the slots of %s: its run is no longer open", work_key,
                                    extra={"work_key": work_key})
            reaped.append(work_key)
        return _result(await self._dispatch(req.dispatch), reaped)

    async def _still_open(self, work_key: str) -> bool:
        item = await asyncio.to_thread(self._work_item, work_key)
        if item is not None and item.status == "accepted":
            return True  # accepted, not yet started: the outbox relay will start it
        # The workflow the ledger recorded, not one derived from today's key: a run admitted
        # before the tenancy upgrade still runs under its old id (agent/github:...).
        workflow_id = (item.workflow_id if item is not None else None) or workflow_id_for(work_key)
        try:
            desc = await self._client.get_workflow_handle(workflow_id).describe()
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                return False
            raise
        return desc.status == WorkflowExecutionStatus.RUNNING

    def _work_item(self, work_key: str) -> WorkItem | None:
        with Session(self._engine, expire_on_commit=False) as s:
            return s.get(WorkItem, work_key)
