"""Scan activities: list candidates since the watermark, advance it, record a no-work receipt.

``sluicegate.scan.list_candidates`` reads the stored watermark, then the forge's open pull
requests (``sort=updated&direction=asc``, every page; a repository outside the scan's tenant's
scope fails non-retryably first, without a forge read), and returns those not decided yet
— oldest update first, at most ``limit``. ``sluicegate.scan.advance_watermark`` moves the
watermark over the candidates the scan decided (monotonic). ``sluicegate.scan.record_no_work``
writes the scan's ``no-work`` receipt through ``IntakeStore.record``, once per delivery id
(a retried attempt finds the receipt already written).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from temporalio import activity
from temporalio.exceptions import ApplicationError

from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.ports import IntakeStore
from intake.receipts import ReceiptDraft
from intake.scope import ScopeRules
from activities.forge_failure import forge_activity_error
from activities.intake_activity import parse_time
from ledger import Receipt, WatermarkStore
from sluicegate.forge.client import ForgeClient, ForgeError
from workflows.scan_contracts import (
    SCAN_ADVANCE_ACTIVITY, SCAN_LIST_ACTIVITY, SCAN_NO_WORK_ACTIVITY, AdvanceWatermarkRequest, CandidatePage,
    ListCandidatesRequest, ReceiptRef, ReceiptRequest, ScanCandidate, WatermarkState,
)


def _existing_receipt(engine: Engine, source: str, delivery_id: str) -> str | None:
    with Session(engine) as s:
        return s.exec(select(Receipt.id).where(Receipt.source == source, Receipt.delivery_id == delivery_id)
                      .limit(1)).first()


def record_receipt_once(store: IntakeStore, engine: Engine, req: ReceiptRequest) -> ReceiptRef:
    """Write a ``no-work`` receipt unless this (source, delivery id) already has one."""
    found = _existing_receipt(engine, req.source, req.delivery_id)
    if found is not None:
        return ReceiptRef(found, already_recorded=True)
    decision = store.record(ReceiptDraft(
        outcome=Outcome.NO_WORK, reason=req.reason, message=req.message, trigger_kind=TriggerKind(req.trigger_kind),
        source=req.source, received_at=datetime.now(UTC), delivery_id=req.delivery_id, event_type=req.event_type,
        subject=req.subject, tenant=req.tenant, work_key=req.work_key, target_id=req.target_id,
        input_version=req.input_version))
    return ReceiptRef(decision.receipt_id)


def _state(scan_id: str, repo: str, wm) -> WatermarkState:
    if wm is None:
        return WatermarkState(scan_id, repo, None, [])
    return WatermarkState(scan_id, repo, wm.updated_at.isoformat(), sorted(wm.boundary))


def out_of_scope(scope: ScopeRules, tenant: str, owner: str, repo: str) -> ApplicationError | None:
    """A non-retryable failure when ``owner/repo`` is outside ``tenant``'s scope (checked before any forge read)."""
    if scope.tenant_covers(tenant, owner, repo):
        return None
    return ApplicationError(f"{owner}/{repo} is not in tenant {tenant!r}'s scope", type=Reason.OUT_OF_SCOPE.value,
                            non_retryable=True)


class ScanActivities:
    def __init__(self, forge: ForgeClient, watermarks: WatermarkStore, store: IntakeStore, engine: Engine,
                 scope: ScopeRules) -> None:
        self._forge = forge
        self._watermarks = watermarks
        self._store = store
        self._engine = engine
        self._scope = scope

    @activity.defn(name=SCAN_LIST_ACTIVITY)
    async def list_candidates(self, req: ListCandidatesRequest) -> CandidatePage:
        owner, _, name = req.repo.partition("/")
        # Configured schedules are checked at load; a scan started by hand is held to the same scope.
        if (refused := out_of_scope(self._scope, req.tenant, owner, name)) is not None:
            raise refused
        wm = await asyncio.to_thread(self._watermarks.get, req.scan_id, req.repo)
        try:
            pulls = await self._forge.list_open_pulls(owner, name, tenant=req.tenant or None)
        except ForgeError as exc:
            raise forge_activity_error(exc, f"cannot list open pull requests of {req.repo}") from None
        found: list[tuple] = []
        for p in pulls:
            sha = (p.get("head") or {}).get("sha")
            updated = parse_time(p.get("updated_at"))
            if not sha or updated is None or p.get("state", "open") != "open":
                continue
            cand = ScanCandidate(owner=owner, repo=name, number=int(p["number"]), head_sha=sha,
                                 updated_at=p["updated_at"], draft=bool(p.get("draft")))
            if wm is None or wm.admits(updated, cand.boundary_key):
                found.append((updated, cand.number, cand))
        found.sort(key=lambda t: (t[0], t[1]))
        candidates = [c for _, _, c in found[:req.limit]]
        activity.logger.info("scan %s: %s has %d open pull requests, %d changed since %s", req.scan_id, req.repo,
                             len(pulls), len(found), wm.updated_at.isoformat() if wm else "the beginning")
        return CandidatePage(repo=req.repo, candidates=candidates,
                             watermark=wm.updated_at.isoformat() if wm else None, open_pulls=len(pulls),
                             truncated=len(found) > req.limit)

    @activity.defn(name=SCAN_ADVANCE_ACTIVITY)
    async def advance_watermark(self, req: AdvanceWatermarkRequest) -> WatermarkState:
        if not req.decided:
            wm = await asyncio.to_thread(self._watermarks.get, req.scan_id, req.repo)
            return _state(req.scan_id, req.repo, wm)
        stamped = [(t, c) for c in req.decided if (t := parse_time(c.updated_at)) is not None]
        if not stamped:  # no candidate carried a time: nothing can move the watermark
            wm = await asyncio.to_thread(self._watermarks.get, req.scan_id, req.repo)
            return _state(req.scan_id, req.repo, wm)
        newest = max(t for t, _ in stamped)
        keys = [c.boundary_key for t, c in stamped if t == newest]
        wm = await asyncio.to_thread(self._watermarks.advance, req.scan_id, req.repo, newest, keys)
        return _state(req.scan_id, req.repo, wm)

    @activity.defn(name=SCAN_NO_WORK_ACTIVITY)
    async def record_no_work(self, req: ReceiptRequest) -> ReceiptRef:
        return await asyncio.to_thread(record_receipt_once, self._store, self._engine, req)
