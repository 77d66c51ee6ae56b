"""The prune schedule's workflow with the real worker: the delivery window, then every table's
retention and the artifacts' age; load-bearing rows stay. Both ledgers, each test its own."""

from __future__ import annotations

import os
import uuid
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import Session, select

import ledger
from activities.artifacts import ArtifactStore
from activities.maintenance import PruneRequest
from ledger import Delivery, Receipt, WorkVersion
from sluicegate.temporal.schedules import PRUNE_DELIVERIES_SCHEDULE, maintenance_schedules
from sluicegate.temporal.client import payload_keys
from tests.support.sims import settings_for
from worker import create_worker

OLD = datetime.now(UTC) - timedelta(days=200)


def _seed(url: str, artifacts: ArtifactStore, artifacts_dir) -> tuple[str, str]:
    engine = ledger.make_engine(url)
    try:
        with Session(engine) as s, s.begin():
            for rid in ("r-live", "r-old"):
                s.add(Receipt(id=rid, created_at=OLD, outcome="accept", reason="admitted", trigger_kind="event",
                              source="github", received_at=OLD))
            s.add(WorkVersion(work_key="wk", input_version="v", generation=1, status="admitted", receipt_id="r-live",
                              updated_at=OLD))
            s.add(Delivery(source="github", delivery_id="d-old", received_at=OLD, receipt_id="r-old"))
    finally:
        engine.dispose()
    old, fresh = artifacts.put(b"an old large diff\n"), artifacts.put(b"a fresh large diff\n")
    path = next(p for p in artifacts_dir.rglob("*") if p.name == old.rsplit(":", 1)[1])
    os.utime(path, (OLD.timestamp(), OLD.timestamp()))
    return old, fresh


@pytest.mark.parametrize("from_schedule", [True, False], ids=["schedule-policy", "worker-policy"])
async def test_the_prune_workflow_enforces_retention(temporal_env, sims, fresh_ledger_url, tmp_path, task_queue,
                                                     from_schedule):
    settings = settings_for(sims, fresh_ledger_url, SLUICEGATE__ARTIFACTS__DIR=str(tmp_path / "artifacts"))
    artifacts_dir = settings.path(settings.artifacts.dir)
    artifacts = ArtifactStore(artifacts_dir, payload_keys(settings))
    old_artifact, fresh_artifact = _seed(fresh_ledger_url, artifacts, artifacts_dir)
    action = maintenance_schedules(settings)[PRUNE_DELIVERIES_SCHEDULE].action
    [req] = action.args
    if not from_schedule:  # a schedule applied before retention existed carries none: the worker's own applies
        req = PruneRequest(window_hours=req.window_hours)
    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue, search_attributes=False):
            removed = await temporal_env.client.execute_workflow(
                action.workflow, req, id=f"prune/{uuid.uuid4().hex[:8]}", task_queue=task_queue, result_type=int)
    assert removed == 3  # the delivery id, the receipt nobody needs, the old artifact
    engine = ledger.make_engine(fresh_ledger_url)
    try:
        with Session(engine) as s:
            assert set(s.exec(select(Receipt.id)).all()) == {"r-live"}  # an admitted version's receipt stays
            assert s.exec(select(Delivery)).all() == []
    finally:
        engine.dispose()
    assert artifacts.get(fresh_artifact) == b"a fresh large diff\n"
    with pytest.raises(FileNotFoundError):
        artifacts.get(old_artifact)
