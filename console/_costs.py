"""What work cost: per tenant and day, per task, tokens by category.

Two sources, each the authority for what it holds:

* **Money per day** comes from the day-budget rows (``budget_days``): what the model activity
  reserved and settled, including calls of unknown fate charged at their estimate — the number
  the day budget enforces.
* **Tokens by category and cost per task** come from each finished order's recorded outcome
  (``work_versions.result``: steps, usage by category, cost priced with the order's price table).
  A run that never recorded an outcome (still running, or closed before the reconciler ran) is
  not in these rows yet; its money is in the day rows already.

Bounded: at most :data:`MAX_RUNS` finished orders are read for a range (the page says when the
range held more); a range is at most :data:`MAX_DAYS` days.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy.engine import Engine

import ledger
from console._access import Viewer
from console._charts import Gauge, gauge
from console._overview import day_limit
from intake.identity import parse_work_key
from sluicegate.config.settings import Settings
from workflows.contracts import TokenUsage

MAX_DAYS = 31
MAX_RUNS = 5000
TOP_TASKS = 50
CATEGORIES = ("input", "cached_input", "output", "reasoning")


def usage_of(result: dict | None) -> TokenUsage:
    """Tokens by category from a recorded outcome (missing or odd values count as 0)."""
    usage = (result or {}).get("usage") or {}
    return TokenUsage(**{c: int(usage.get(c) or 0) if isinstance(usage.get(c), (int, float)) else 0
                         for c in CATEGORIES})


def cost_of(result: dict | None) -> float:
    cost = (result or {}).get("cost_usd")
    return float(cost) if isinstance(cost, (int, float)) else 0.0


@dataclass
class Tally:
    """Runs, steps, tokens and cost summed over some finished orders."""

    runs: int = 0
    steps: int = 0
    tokens: TokenUsage = field(default_factory=TokenUsage)
    cost: float = 0.0

    def add(self, result: dict | None) -> None:
        self.runs += 1
        steps = (result or {}).get("steps")
        self.steps += steps if isinstance(steps, int) else 0
        self.tokens = self.tokens.plus(usage_of(result))
        self.cost += cost_of(result)


@dataclass(frozen=True)
class DaySpend:
    day: str
    scope: str
    spent: float
    reserved: float
    limit: float
    gauge: Gauge


@dataclass(frozen=True)
class TaskRun:
    work_key: str
    tenant: str
    input_version: str
    generation: int
    status: str
    updated_at: datetime
    steps: int
    tokens: TokenUsage
    cost: float


@dataclass
class Costs:
    days: list[str]
    spend: list[DaySpend]
    by_tenant_day: list[tuple[str, str, Tally]]
    by_task: list[tuple[str, str, Tally]]
    """(tenant, task kind such as ``review``, tally)."""
    top_runs: list[TaskRun]
    total: Tally
    truncated: bool


def day_range(now: datetime, days: int) -> list[str]:
    return [(now - timedelta(days=i)).strftime("%Y-%m-%d") for i in range(min(days, MAX_DAYS) - 1, -1, -1)]


def costs(engine: Engine, settings: Settings, viewer: Viewer, now: datetime, days: int,
          tenant: str | None = None) -> Costs:
    day_names = day_range(now, days)
    scopes = (["global"] if viewer.platform_wide and tenant is None else []) + [
        f"tenant:{t}" for t in viewer.tenants if tenant in (None, t)]
    rows = {(r.day, r.scope): r for r in ledger.budget_days(engine, day_names)}
    spend = []
    for day in reversed(day_names):
        for scope in scopes:
            r = rows.get((day, scope))
            limit = r.limit_usd if r is not None else day_limit(settings, scope)
            spent, held = (r.spent_usd, r.reserved_usd) if r is not None else (0.0, 0.0)
            spend.append(DaySpend(day, scope.removeprefix("tenant:"), spent, held, limit, gauge(spent, limit, held)))
    since = datetime.fromisoformat(day_names[0] + "T00:00:00+00:00")
    runs = ledger.finished_runs(engine, since, viewer.visible, MAX_RUNS, tenant)
    by_day: dict[tuple[str, str], Tally] = {}
    by_task: dict[tuple[str, str], Tally] = {}
    total, top = Tally(), []
    for version, run_tenant in runs:
        result = version.result or {}
        by_day.setdefault((run_tenant, version.updated_at.strftime("%Y-%m-%d")), Tally()).add(result)
        by_task.setdefault((run_tenant, _task(version.work_key)), Tally()).add(result)
        total.add(result)
        steps = result.get("steps")
        top.append(TaskRun(version.work_key, run_tenant, version.input_version, version.generation, version.status,
                           version.updated_at, steps if isinstance(steps, int) else 0, usage_of(result),
                           cost_of(result)))
    top.sort(key=lambda r: (-r.cost, r.work_key))
    return Costs(day_names, spend, sorted(((t, d, v) for (t, d), v in by_day.items()), key=lambda x: (x[1], x[0]),
                                          reverse=True),
                 sorted(((t, k, v) for (t, k), v in by_task.items()), key=lambda x: (x[0], x[1])), top[:TOP_TASKS],
                 total, len(runs) >= MAX_RUNS)


def _task(work_key: str) -> str:
    try:
        return parse_work_key(work_key).task
    except ValueError:
        return "-"
