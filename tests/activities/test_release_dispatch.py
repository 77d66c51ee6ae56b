"""A run's capacity release runs a dispatch pass only when the deferred queue holds an item.

Real parts: the SQL ledger (both backends), the worker's capacity activities as ``worker.py`` wires
them, Temporal's ``ActivityEnvironment`` and test server, the forge simulator.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session
from temporalio.testing import ActivityEnvironment

import ledger
from intake.capacity import Block, CapacityRequest
from ledger import DeferredItem
from ledger._deferred import enqueue
from sluicegate.forge.client import ForgeClient
from sluicegate.temporal.admitter import TemporalAdmitter
from sluicegate.wiring import capacity_activities
from tests.support.sims import FORGE_TOKEN, settings_for
from workflows.capacity_contracts import ReleaseRequest


@asynccontextmanager
async def _wired(ledger_url: str, sims, temporal_env) -> AsyncIterator[tuple[Any, Engine]]:
    """The worker's capacity activities as ``worker.py`` wires them, on a fresh migrated ledger."""
    ledger.upgrade(ledger_url)
    settings, engine = settings_for(sims, ledger_url), ledger.make_engine(ledger_url)
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN, timeout_seconds=5)
    try:
        yield capacity_activities(temporal_env.client, settings, engine, forge,
                                  TemporalAdmitter(temporal_env.client, settings, False)), engine
    finally:
        await forge.aclose()
        engine.dispose()


async def test_a_release_dispatches_the_queue_only_when_an_item_waits(empty_ledger_url, sims, temporal_env):
    async with _wired(empty_ledger_url, sims, temporal_env) as (acts, engine):
        idle = await ActivityEnvironment().run(acts.release, ReleaseRequest("acme/k0", 1))
        assert (idle.admitted, idle.dropped, idle.dead, idle.deferred, idle.skipped) == ([], [], [], 0, 0)
        with Session(engine) as s, s.begin():  # due now; its payload is no delivery, so resuming it fails
            item_id = enqueue(s, tenant="acme", source="github", work_key="acme/k1", input_version="v1",
                              request=CapacityRequest("acme", 3), block=Block.SOURCE, blocked_key=None,
                              retry_after=0.0, receipt_id="rcpt-none", payload={"bogus": True}).id
        await ActivityEnvironment().run(acts.release, ReleaseRequest("acme/k0", 1))
        with Session(engine) as s:
            item = s.get(DeferredItem, item_id)
            assert item is not None and (item.failures, item.status) != (0, "waiting")  # the pass tried it


async def test_a_release_stands_when_the_queue_cannot_be_read(empty_ledger_url, sims, temporal_env):
    """The slots are given back first; if the look at the deferred queue then fails (its table gone
    here: a real database error), the release still answers what it freed, not an activity failure
    whose retry would find nothing left to free."""
    from sqlalchemy import text

    from intake.capacity.plan import SlotClaim
    from ledger._capacity import acquire, stamp_generation

    async with _wired(empty_ledger_url, sims, temporal_env) as (acts, engine):
        with Session(engine) as s, s.begin():
            acquire(s, "acme/k2", CapacityRequest("acme", 3, (SlotClaim("key:acme/k2", 5, Block.KEY),)))
            stamp_generation(s, "acme/k2", 1)
        with engine.begin() as conn:
            conn.execute(text("ALTER TABLE deferred_items RENAME TO deferred_items_away"))
        released = await ActivityEnvironment().run(acts.release, ReleaseRequest("acme/k2", 1))
        assert "key:acme/k2" in released.released
