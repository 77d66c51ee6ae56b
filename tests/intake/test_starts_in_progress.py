"""The starts repeats set off (``intake/starts_in_progress.py``): one per version at a time, bounded,
cooling after one that did not start its version, the hold released however the task ends."""

from __future__ import annotations

import asyncio

import pytest

from intake.decision import Outcome
from intake.receipts import ReceiptDraft
from intake.starts_in_progress import StartsInProgress
from ledger._repeats import RepeatRows, unstarted


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def _ended(starts: StartsInProgress) -> None:
    await starts.wait(5)
    await asyncio.sleep(0)  # the done callbacks run one step after the tasks end


async def test_one_start_per_version_while_it_runs_and_none_while_an_accept_holds_it():
    starts, go, calls = StartsInProgress(), asyncio.Event(), []

    async def start() -> bool:
        calls.append(1)
        await go.wait()
        return True

    assert starts.start_soon("k", "v1", start)
    assert not starts.start_soon("k", "v1", start)  # set off already, still running
    with starts.hold("k", "v2"):  # an accept of v2 is being started
        assert not starts.start_soon("k", "v2", start)
    go.set()
    await _ended(starts)
    assert (len(calls), len(starts), starts.set_off) == (1, 0, 1)
    assert starts.start_soon("k", "v1", start)  # it started: no cooldown; a later repeat may look again
    await _ended(starts)
    assert starts.counts() == {"set_off": 2, "started": 2, "not_started": 0, "dropped": 0, "cut_off": 0}


@pytest.mark.parametrize("outcome", ["not started", "raised"])
async def test_a_start_that_did_not_start_its_version_cools_it(outcome):
    clock = Clock()
    starts, calls = StartsInProgress(cooldown_seconds=10, clock=clock), []

    async def start() -> bool:
        calls.append(1)
        if outcome == "raised":
            raise RuntimeError("temporal unreachable")
        return False

    assert starts.start_soon("k", "v", start)
    await _ended(starts)
    clock.now += 9.9
    assert not starts.start_soon("k", "v", start)  # cooling: a storm of repeats costs no attempt
    assert starts.start_soon("k", "other", start)  # another version is not
    clock.now += 0.2
    assert starts.start_soon("k", "v", start)
    await _ended(starts)
    assert len(calls) == 3
    assert starts.counts() == {"set_off": 3, "started": 0, "not_started": 3, "dropped": 0, "cut_off": 0}


async def test_starts_beyond_the_bound_are_dropped_and_counted(caplog):
    starts, go = StartsInProgress(max_starts=2), asyncio.Event()

    async def start() -> bool:
        await go.wait()
        return True

    assert [starts.start_soon("k", v, start) for v in ("a", "b", "c", "d")] == [True, True, False, False]
    assert starts.dropped == 2
    assert len([r for r in caplog.records if "such starts in flight already" in r.getMessage()]) == 1
    go.set()
    await _ended(starts)
    assert starts.start_soon("k", "c", start)  # dropped is not cooling: the next repeat sets it off
    await _ended(starts)
    assert starts.counts() == {"set_off": 3, "started": 3, "not_started": 0, "dropped": 2, "cut_off": 0}


async def test_a_start_cancelled_before_its_first_step_releases_its_hold():
    starts = StartsInProgress()

    async def start() -> bool:
        return True

    assert starts.start_soon("k", "v", start)
    for task in list(starts._tasks):
        task.cancel()  # as the event loop's shutdown does, before the task ever ran
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert not starts.held("k", "v") and len(starts) == 0
    assert starts.counts() == {"set_off": 1, "started": 0, "not_started": 0, "dropped": 0, "cut_off": 1}


async def test_a_stop_cuts_off_the_starts_still_running_and_says_so(caplog):
    starts, cut = StartsInProgress(), []

    async def start() -> bool:
        try:
            await asyncio.Event().wait()  # Temporal does not answer
        except asyncio.CancelledError:
            cut.append(1)
            raise
        return True

    assert starts.start_soon("k", "v", start)
    assert await starts.wait(0.1) == 1
    await asyncio.sleep(0)
    assert cut == [1] and not starts.held("k", "v")
    assert any("cut off 1 start(s)" in r.getMessage() for r in caplog.records)
    assert await starts.wait(0.1) == 0  # nothing left
    assert starts.counts() == {"set_off": 1, "started": 0, "not_started": 0, "dropped": 0, "cut_off": 1}


def _draft(version: str | None) -> ReceiptDraft:
    from datetime import UTC, datetime

    from intake.decision import Reason
    from intake.envelope import TriggerKind
    return ReceiptDraft(outcome=Outcome.REJECT, reason=Reason.DUPLICATE_DELIVERY, message="", source="github",
                        trigger_kind=TriggerKind.EVENT, received_at=datetime.now(UTC), delivery_id="d",
                        work_key="k", input_version=version)


def _row(status: str, workflow_id: str | None, version: str = "v") -> dict:
    return {"status": status, "workflow_id": workflow_id, "work_key": "k", "input_version": version, "queued": 0,
            "receipt_id": "r"}


def test_the_lookup_reports_a_version_accepted_with_no_run_and_only_that():
    accept = _row("accept", None)
    assert unstarted(RepeatRows(version=_row("accepted", None)), _draft("v")) == ("k", "v")
    assert unstarted(RepeatRows(version=_row("accepted", "agent/k")), _draft("v")) is None  # marked
    # the receipt keeps no workflow id when only its mark failed: the version row decides (it ended)
    assert unstarted(RepeatRows(version=_row("done", None), delivery=accept), _draft("v")) is None
    assert unstarted(RepeatRows(delivery=accept), _draft(None)) == ("k", "v")  # a trigger naming no version
    assert unstarted(RepeatRows(delivery={**accept, "queued": 1}), _draft(None)) is None
    assert unstarted(RepeatRows(delivery=_row("accept", "agent/k")), _draft(None)) is None
    assert unstarted(RepeatRows(delivery=_row("reject", None)), _draft(None)) is None
