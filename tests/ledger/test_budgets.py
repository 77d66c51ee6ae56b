"""Day budgets on SQLite and PostgreSQL: reserve before, settle after, release on failure,
and no overspend when many runs race for the last dollars."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from ledger import DayBudgetExceeded, DayBudgets


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
        budgets.reserve(tenant, "wk", 0.6, now=day)
    assert refused.value.scope == "global"
    assert budgets.day(f"tenant:{tenant}", "2031-01-01") is None  # the whole transaction rolled back


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


def test_stale_reservations_are_released(engine):
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    budgets = _budgets(engine, tenant, 1.0)
    budgets.reserve(tenant, "wk", 0.7)
    assert budgets.release_stale(timedelta(hours=1)) == 0
    assert budgets.release_stale(timedelta(seconds=-1)) >= 1
    budgets.reserve(tenant, "wk", 0.7)
