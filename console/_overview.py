"""The overview page's numbers, read from the ledger and cut to what the viewer may see.

Decisions come from receipts (last hour, last day, and the day by hour); active runs from the
capacity counters against the limits the same planner intake uses reports; the deferred queue,
breakers and open dead letters from ``starter.py status``'s own view (``sluicegate.operations.status.gather``);
today's spend from the day-budget rows the model activity reserves against.

What a tenant-scoped viewer does not see: the global counter and the global day budget, other
tenants' counters, queue rows, letters and spend, and concurrency-key counters that no run of
theirs holds. Breakers are shown to everyone: they are the platform's, and they defer everyone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy.engine import Engine

import ledger
from console._access import Viewer
from console._charts import BarChart, ColumnChart, Gauge, bar_chart, gauge, hourly_columns
from intake.capacity import BreakerView, CapacityPlanner
from sluicegate.config.settings import Settings
from sluicegate.operations.status import TenantQueue, counter_limit, gather


@dataclass(frozen=True)
class CounterRow:
    key: str
    active: int
    limit: int | None
    gauge: Gauge


@dataclass(frozen=True)
class SpendRow:
    scope: str
    """``global`` or the tenant's name."""
    spent: float
    reserved: float
    limit: float
    gauge: Gauge


@dataclass
class Overview:
    now: datetime
    day: str
    hour_chart: BarChart
    day_chart: BarChart
    columns: ColumnChart
    counters: list[CounterRow]
    active_by_tenant: dict[str, list[str]]
    queue: list[TenantQueue]
    breakers: list[BreakerView]
    dead_open: list[tuple[str, str, int]]
    spend: list[SpendRow] = field(default_factory=list)


def day_limit(settings: Settings, scope: str) -> float:
    """The configured day budget of ``global`` or ``tenant:<name>`` (what a new row would get)."""
    day = settings.budgets.day
    return day.global_usd if scope == "global" else day.tenants.get(scope.removeprefix("tenant:"),
                                                                    day.default_tenant_usd)


def spend_rows(settings: Settings, rows: list[ledger.BudgetDay], viewer: Viewer, day: str) -> list[SpendRow]:
    """One row per scope the viewer sees for ``day`` (tenants with no spend yet show $0)."""
    by_scope = {r.scope: r for r in rows if r.day == day}
    scopes = (["global"] if viewer.platform_wide else []) + [f"tenant:{t}" for t in viewer.tenants]
    out = []
    for scope in scopes:
        row = by_scope.get(scope)
        limit = row.limit_usd if row is not None else day_limit(settings, scope)
        spent, reserved = (row.spent_usd, row.reserved_usd) if row is not None else (0.0, 0.0)
        out.append(SpendRow(scope.removeprefix("tenant:"), spent, reserved, limit, gauge(spent, limit, reserved)))
    return out


def _counter_rows(settings: Settings, counters: dict[str, int], held_by: dict[str, set[str]],
                  viewer: Viewer) -> list[CounterRow]:
    planner = CapacityPlanner(settings.capacity.limits(settings.sources))
    keys = (["global"] if viewer.platform_wide else []) + [f"tenant:{t}" for t in viewer.tenants]
    keys += sorted(k for k in counters if k.startswith("key:") and counters[k] > 0
                   and (viewer.platform_wide or any(viewer.sees(t) for t in held_by.get(k, ()))))
    rows = []
    for key in keys:
        active, limit = counters.get(key, 0), counter_limit(key, planner)
        rows.append(CounterRow(key, active, limit, gauge(active, limit)))
    return rows


def last_hours(now: datetime, n: int = 24) -> list[str]:
    """The ``n`` UTC hours ending with the current one, oldest first, as ``YYYY-MM-DD HH``."""
    top = now.replace(minute=0, second=0, microsecond=0)
    return [(top - timedelta(hours=i)).strftime("%Y-%m-%d %H") for i in range(n - 1, -1, -1)]


def overview(engine: Engine, settings: Settings, viewer: Viewer, now: datetime) -> Overview:
    visible = viewer.visible
    hour = ledger.decision_counts(engine, now - timedelta(hours=1), visible)
    day = ledger.decision_counts(engine, now - timedelta(days=1), visible)
    hours = last_hours(now)
    by_hour = ledger.decisions_by_hour(engine, datetime.fromisoformat(hours[0] + ":00:00+00:00"), visible)
    status = gather(engine, ledger.BreakerBoard(engine, settings.capacity.breaker_policy()), now,
                    settings.capacity.aging_seconds)
    held_by: dict[str, set[str]] = {}
    for hold in ledger.CapacityLedger(engine).holds():
        held_by.setdefault(hold.slot_key, set()).add(hold.tenant)
    today = now.strftime("%Y-%m-%d")
    return Overview(
        now=now, day=today, hour_chart=bar_chart(hour), day_chart=bar_chart(day),
        columns=hourly_columns(by_hour, hours),
        counters=_counter_rows(settings, status.counters, held_by, viewer),
        active_by_tenant={t: keys for t, keys in sorted(status.active_by_tenant.items()) if viewer.sees(t)},
        queue=[q for q in status.queue if viewer.sees(q.tenant)],
        breakers=status.breakers,
        dead_open=ledger.open_dead_letter_counts(engine, visible),
        spend=spend_rows(settings, ledger.budget_days(engine, [today]), viewer, today))
