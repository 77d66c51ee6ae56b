"""Day budgets on SQLite and PostgreSQL: reserve before, settle after, release only what was
never billed, charge the estimate when the fate is unknown, and no overspend when many runs
race for the last dollars."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from ledger import (
    DayBudgetExceeded, DayBudgets, ModelJournal, ModelJournalEntry, ReservationEnded, ReservationStatus, StepRef,
)


def _budgets(engine, tenant: str, tenant_limit: float, global_limit: float = 1_000_000.0) -> DayBudgets:
    return DayBudgets(engine, global_limit, {tenant: tenant_limit}, default_tenant_limit_usd=0.0)


def test_reserve_settle_release_move_money_between_columns(engine):
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    budgets = _budgets(engine, tenant, 1.0)
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    a = budgets.reserve(tenant, "wk", 0.4)
    b = budgets.reserve(tenant, "wk", 0.4)
    with pytest.raises(DayBudgetExceeded) as refused:
        budgets.reserve(tenant, "wk", 0.4)
    assert refused.value.scope == f"tenant:{tenant}"
    budgets.settle(a, 0.1)  # the step cost less than its maximum
    budgets.settle(a, 0.1)  # a retried settle does nothing twice
    budgets.release(b)
    row = budgets.day(f"tenant:{tenant}", day)
    assert (round(row.reserved_usd, 9), round(row.spent_usd, 9)) == (0.0, 0.1)
    budgets.reserve(tenant, "wk", 0.9)  # what was released is available again


def test_global_refusal_reserves_nothing_on_the_tenant(engine):
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    day = datetime(2031, 1, 1, tzinfo=UTC)  # a day of its own: the global row is fresh
    budgets = DayBudgets(engine, 0.5, {tenant: 10.0}, 0.0)
    with pytest.raises(DayBudgetExceeded) as refused:
        budgets.reserve(tenant, "wk", 0.6, now=day, reservation_id=f"rsv-{tenant}")
    assert refused.value.scope == "global"
    assert budgets.day(f"tenant:{tenant}", "2031-01-01") is None  # the whole transaction rolled back...
    assert budgets.reservation(f"rsv-{tenant}") is None  # ...the reservation's row (inserted first) included
    assert budgets.reserve(tenant, "wk", 0.4, now=day, reservation_id=f"rsv-{tenant}") == f"rsv-{tenant}"
    assert budgets.day(f"tenant:{tenant}", "2031-01-01").reserved_usd == pytest.approx(0.4)  # held now, once
    budgets.release(f"rsv-{tenant}")  # the global row of 2031-01-01 stays free for the next run


def test_racing_runs_cannot_overspend_the_last_dollars(engine):
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    budgets = _budgets(engine, tenant, 1.0)

    def try_reserve(_):
        try:
            return budgets.reserve(tenant, "wk", 0.1)
        except DayBudgetExceeded:
            return None

    with ThreadPoolExecutor(max_workers=12) as pool:
        granted = [r for r in pool.map(try_reserve, range(40)) if r]
    row = budgets.day(f"tenant:{tenant}", datetime.now(UTC).strftime("%Y-%m-%d"))
    assert len(granted) == 10 and row.reserved_usd + row.spent_usd <= 1.0 + 1e-9


def _today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")


def _money(budgets: DayBudgets, tenant: str) -> tuple[float, float]:
    row = budgets.day(f"tenant:{tenant}", _today())
    return round(row.reserved_usd, 9), round(row.spent_usd, 9)


def test_a_retried_reserve_of_the_same_id_holds_nothing_twice(engine):
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    budgets = _budgets(engine, tenant, 1.0)
    rid = f"rsv_{uuid.uuid4().hex}"
    assert budgets.reserve(tenant, "wk", 0.4, reservation_id=rid) == rid
    assert budgets.reserve(tenant, "wk", 0.4, reservation_id=rid) == rid
    assert _money(budgets, tenant) == (0.4, 0.0)
    assert budgets.settle(rid, 0.1) is True and budgets.settle(rid, 0.3) is False  # ends once
    with pytest.raises(ReservationEnded):
        budgets.reserve(tenant, "wk", 0.4, reservation_id=rid)
    assert _money(budgets, tenant) == (0.0, 0.1)


def test_each_ending_charges_what_its_fate_says_and_says_how(engine):
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    budgets = _budgets(engine, tenant, 10.0)
    answered, refused, unknown = (budgets.reserve(tenant, "wk", amount) for amount in (1.0, 2.0, 3.0))
    budgets.settle(answered, 0.25)
    budgets.release(refused, "refused with 400 (not billed)")
    budgets.charge_estimate(unknown, "fate unknown: no answer after sending (ReadTimeout)")
    ended = [budgets.reservation(r) for r in (answered, refused, unknown)]
    assert [(r.status, r.spent_usd) for r in ended] == [
        (ReservationStatus.SETTLED, 0.25), (ReservationStatus.RELEASED, 0.0), (ReservationStatus.ESTIMATED, 3.0)]
    assert "ReadTimeout" in ended[2].note and all(r.ended_at is not None for r in ended)
    assert _money(budgets, tenant) == (0.0, 3.25)


def test_the_next_attempt_charges_an_earlier_one_that_never_ended(engine):
    tenant, key = f"t-{uuid.uuid4().hex[:8]}", f"wk-{uuid.uuid4().hex[:8]}"
    budgets = _budgets(engine, tenant, 10.0)
    first = budgets.reserve(tenant, key, 0.5, reservation_id=f"rsv_{uuid.uuid4().hex}",
                            ref=StepRef(key, "v1", 3, 2, attempt=1))  # its worker died mid-call
    other_step = budgets.reserve(tenant, key, 0.5, ref=StepRef(key, "v1", 3, 1, attempt=1))
    second = StepRef(key, "v1", 3, 2, attempt=2)
    assert [r.id for r in budgets.held_for_step(second)] == [first]
    assert budgets.charge_abandoned(second) == [first]
    assert budgets.charge_abandoned(second) == []  # charged once
    row = budgets.reservation(first)
    assert (row.status, row.spent_usd, row.step, row.attempt) == ("estimated", 0.5, 2, 1)
    assert "attempt 1 ended without an answer" in row.note
    assert budgets.reservation(other_step).status == "reserved"  # another step is not touched


def test_the_sweep_ends_stale_reservations_from_the_journal_or_at_their_estimate(engine):
    tenant, key = f"t-{uuid.uuid4().hex[:8]}", f"wk-{uuid.uuid4().hex[:8]}"
    budgets = _budgets(engine, tenant, 1.0)
    crashed = budgets.reserve(tenant, key, 0.7, ref=StepRef(key, "v1", 1, 1, 1))
    answered = budgets.reserve(tenant, key, 0.2, ref=StepRef(key, "v1", 1, 2, 1))
    ModelJournal(engine).record(ModelJournalEntry(
        work_key=key, input_version="v1", generation=1, step=2, request_digest="d", response={}, cost_usd=0.05,
        reservation_id=answered, attempt=1, created_at=datetime.now(UTC)))
    young = budgets.settle_stale(timedelta(minutes=15))
    assert crashed not in young.estimated and answered not in young.from_journal
    later = datetime.now(UTC) + timedelta(minutes=16)
    sweep = budgets.settle_stale(timedelta(minutes=15), now=later)
    assert crashed in sweep.estimated and answered in sweep.from_journal
    assert (budgets.reservation(crashed).status, budgets.reservation(crashed).spent_usd) == ("estimated", 0.7)
    assert (budgets.reservation(answered).status, budgets.reservation(answered).spent_usd) == ("settled", 0.05)
    assert _money(budgets, tenant) == (0.0, 0.75)  # a dead worker's call is not free
    with pytest.raises(DayBudgetExceeded):
        budgets.reserve(tenant, key, 0.3)
    assert budgets.settle_stale(timedelta(minutes=15), now=later).estimated.count(crashed) == 0


def test_settle_above_the_reservation_overshoots_the_limit_by_exactly_the_excess(engine):
    """Only a provider that ignored the output cap can make a step cost more than reserved
    (``workflows.budget``); the ledger records the real cost and refuses the next step."""
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    budgets = _budgets(engine, tenant, 1.0)
    reserved_usd, actual_usd = 1.0, 1.25  # the reservation took the whole limit
    rid = budgets.reserve(tenant, "wk", reserved_usd)
    budgets.settle(rid, actual_usd)
    held, spent = _money(budgets, tenant)
    assert held == 0.0 and round(spent - 1.0, 9) == round(actual_usd - reserved_usd, 9)
    with pytest.raises(DayBudgetExceeded):
        budgets.reserve(tenant, "wk", 0.001)
