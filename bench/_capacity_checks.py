"""The capacity burst's verification: every delivery admitted exactly once, the deferred queue
drained, every slot given back, no errors; and each limit held (max runs and max counter)."""

from __future__ import annotations

from collections import Counter

from sqlmodel import Session, select

from bench._capacity import Result
from bench._capacity_sim import CounterSampler, SimulatedRuns
from bench._capacity_workload import Delivery
from ledger import CapacityLedger, DeferredItem

LIMITS = (("global active runs", "global", "global_limit"),
          ("tenant max_active_runs (worst tenant)", "tenant:", "tenant_limit"),
          ("concurrency_limit per repo (worst repo)", "key:", "key_limit"))
"""Per limit: its name, the prefix of its counter keys, the option that configures it."""


def burst_checks(items: list[Delivery], res: Result, runs: SimulatedRuns, capacity: CapacityLedger,
                 engine) -> list[tuple[str, bool, str]]:
    """(name, passed, detail) per check."""
    twice = [k for k, n in runs.admits.items() if n > 1]
    missing = {d.work_key for d in items} - set(runs.started)
    states = Counter(i.status for i in _items(engine))
    leftover = {k: v for k, v in capacity.counters().items() if v}
    return [("every delivery admitted exactly once", not missing and not twice,
             f"{len(runs.started)} admitted, {len(missing)} never, {len(twice)} twice"),
            ("deferred queue drained", states.get("waiting", 0) == 0 and not states.get("dead"),
             ", ".join(f"{k} {v}" for k, v in sorted(states.items())) or "never used"),
            ("every slot released", not leftover and not capacity.holds(), f"non-zero counters: {leftover}"),
            ("no errors", not res.failures, f"{len(res.failures)} errors")]


def limit_seen(prefix: str, runs: SimulatedRuns, sampler: CounterSampler) -> tuple[int, int]:
    """The maximum runs in flight and the maximum ledger counter over the keys of one limit."""
    return (max((v for k, v in runs.max_seen.items() if k.startswith(prefix)), default=0),
            max((v for k, v in sampler.max_seen.items() if k.startswith(prefix)), default=0))


def _items(engine) -> list[DeferredItem]:
    with Session(engine) as s:
        return list(s.exec(select(DeferredItem)).all())
