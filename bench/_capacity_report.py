"""The capacity bench's report: the burst's summary, limits and waits tables (and their JSON figures),
and the priority flood's table."""

from __future__ import annotations

from collections import Counter, defaultdict

from bench._capacity import Result
from bench._capacity_checks import LIMITS, burst_checks, limit_seen
from bench._capacity_sim import CounterSampler, Dispatcher, SimulatedRuns
from bench._capacity_workload import FLOODER, Delivery, admission_waits
from bench._common import percentile
from bench._harness import Measurement
from bench._priority_flood import FloodRun, flood_rows
from bench._tables import console, log, record_checks, table
from ledger import CapacityLedger

out = console(140)


def report(a, items: list[Delivery], res: Result, runs: SimulatedRuns, sampler: CounterSampler,
           dispatcher: Dispatcher, capacity: CapacityLedger, engine, backend: str, m: Measurement) -> bool:
    """Print the burst's tables and checks, fill ``m``; True when every check passed."""
    per_tenant = Counter(d.tenant for d in items)
    waits, receipts = _waits_by_tenant(engine)
    checks = burst_checks(items, res, runs, capacity, engine)

    t = table(f"Capacity burst ({backend}): {len(items):,} deliveries, {a.tenants} tenants, "
              f"flooder {per_tenant[FLOODER]:,} ({a.flood_share:.0%})", ("measure", "value"))
    busy = sum(s.seconds for s in runs.started.values())
    floor = max(busy / a.global_limit, *(v / a.tenant_limit for v in _busy_by(runs, lambda s: s.tenant).values()),
                *(v / a.key_limit for v in _busy_by(runs, lambda s: s.repo).values()))
    t.add_row("time to drain (first submit -> last run ended, queue empty)", f"{res.drain_seconds:.1f} s")
    t.add_row("  of which submitting the burst", f"{res.burst_seconds:.1f} s")
    t.add_row("  floor: the limits alone (max of run-seconds / limit over every counter)", f"{floor:.1f} s")
    t.add_row("deliveries/s (deliveries / drain)", f"{len(items) / res.drain_seconds:,.1f}")
    t.add_row("global slot utilisation (run-seconds / (limit x drain))",
              f"{busy / (a.global_limit * res.drain_seconds):.0%}")
    t.add_row("answers to the burst", ", ".join(f"{k} {v:,}" for k, v in sorted(res.answers.items())))
    t.add_row("receipts", ", ".join(f"{k} {v:,}" for k, v in sorted(receipts.items())))
    t.add_row("forge reads (GET) per delivery", f"{res.forge_reads / len(items):.2f} ({res.forge_reads:,})")
    t.add_row("dispatch passes (release / scheduled)",
              f"{dispatcher.passes['release']:,} / {dispatcher.passes['scheduled']:,}")
    t.add_row("dispatch pass ms p50 / p95 / max (lock held)",
              " / ".join(f"{percentile(dispatcher.seconds, p) * 1000:,.0f}" for p in (50, 95, 100)))
    t.add_row("items re-decided per pass p50 / p95 / max",
              " / ".join(f"{percentile(dispatcher.rechecks, p):,.0f}" for p in (50, 95, 100)))
    t.add_row("dispatch outcomes", ", ".join(f"{k} {v:,}" for k, v in sorted(dispatcher.totals.items())))
    out.print(t)

    ok = _limits(a, runs, sampler, m) and not res.failures
    p95_flood, p95_others = _waits(items, per_tenant, runs, waits)
    m.figures.update(deliveries=len(items), drain_seconds=res.drain_seconds, burst_seconds=res.burst_seconds,
                     deliveries_per_second=len(items) / res.drain_seconds if res.drain_seconds else None,
                     forge_reads_per_delivery=res.forge_reads / len(items), wait_p95_flooder=p95_flood,
                     wait_p95_others=p95_others, answers=dict(res.answers))
    m.ratios = {"wait_p95_flooder_per_others": p95_flood / p95_others if p95_others else None}
    ok = record_checks(m, checks, out) and ok
    for line in res.failures[:20]:
        out.print(f"[red]ERROR[/] {line}", markup=True)
    log("Caveats: the runs are simulated (SimulatedRuns: a timer of "
        f"{a.run_ms[0]:.0f}-{a.run_ms[1]:.0f} ms, no Temporal, no model); the gate, the ledger transactions, "
        "the deferred queue and the dispatcher are real, and every delivery is re-read from the forge simulator "
        "over HTTP. The webhook HTTP layer (signature, parsing) is not in the path. "
        f"Scheduled passes run every {a.tick:g} s (production: 15), scaled to the simulated runs; most passes "
        "follow a run's end, as in production. Intake, dispatcher and runs share one Python process"
        + (" with the forge simulator (a thread)." if a.forge_thread else "; the forge simulator has its own."))
    return ok


def _limits(a, runs: SimulatedRuns, sampler: CounterSampler, m: Measurement) -> bool:
    lim = table("Maximum concurrency observed vs. limits (runs: SimulatedRuns in flight; "
                f"counters: ledger, sampled every 50 ms, {sampler.samples:,} samples)",
                ("limit", "configured", "max runs", "max counter", "verdict"), left=("limit", "verdict"))
    ok = True
    for name, prefix, option in LIMITS:
        limit = getattr(a, option)
        seen_runs, seen_ctr = limit_seen(prefix, runs, sampler)
        within = seen_runs <= limit and seen_ctr <= limit
        ok &= within
        verdict = "[red]FAIL[/]" if not within else "[green]OK[/]" if max(seen_runs, seen_ctr) == limit else \
            "[yellow]OK, never reached[/] (the check proves little)"
        lim.add_row(name, str(limit), str(seen_runs), str(seen_ctr), verdict)
        m.checks.append(f"{'PASS' if within else 'FAIL'} {name}: limit {limit}, max runs {seen_runs}, "
                        f"max counter {seen_ctr}")
        m.figures.setdefault("max_concurrency", {})[name] = {"limit": limit, "runs": seen_runs, "counter": seen_ctr}
    out.print(lim)
    return ok


def _waits(items, per_tenant: Counter, runs: SimulatedRuns, waits: dict[str, list[float]]) -> tuple[float, float]:
    """Print the waits per tenant; the flooder's p95 and the other tenants' pooled p95."""
    ten = table("Wait per tenant, s (admission receipt - first receipt)",
                ("tenant", "deliveries", "max running", "wait p50", "wait p95", "wait max"))
    for tenant in sorted(per_tenant):
        w = waits.get(tenant, [])
        ten.add_row(tenant + (" (flooder)" if tenant == FLOODER else ""), f"{per_tenant[tenant]:,}",
                    str(runs.max_seen[f"tenant:{tenant}"]), f"{percentile(w, 50):.2f}", f"{percentile(w, 95):.2f}",
                    f"{max(w, default=float('nan')):.2f}")
    others = [x for t_, w in waits.items() if t_ != FLOODER for x in w]
    p95_flood, p95_others = percentile(waits.get(FLOODER, []), 95), percentile(others, 95)
    ten.add_row("others, pooled", f"{len(others):,}", "-", f"{percentile(others, 50):.2f}", f"{p95_others:.2f}",
                f"{max(others, default=float('nan')):.2f}")
    out.print(ten)
    log(f"flooder p95 / others p95 = {p95_flood:.2f} / {p95_others:.2f} = "
        f"{p95_flood / p95_others if p95_others else float('inf'):.1f}x")
    return p95_flood, p95_others


def flood_table(a, aged: FloodRun, strict: FloodRun, backend: str) -> None:
    t = table(f"Wait by priority, s ({backend}; admission receipt - first receipt): aged "
              f"(aging_seconds {a.aging:g}) vs strict",
              ("priority", "deliveries", "aged p95", "aged max", "strict p95", "strict max"), left=())
    for row in flood_rows(aged, strict):
        t.add_row(*row)
    out.print(t)


def _waits_by_tenant(engine) -> tuple[dict[str, list[float]], Counter]:
    """Per tenant: admission time (the accept receipt) - first receipt time, in seconds."""
    waits, reasons = admission_waits(engine)
    by_tenant: dict[str, list[float]] = defaultdict(list)
    for tenant, wait in waits.values():
        by_tenant[tenant].append(wait)
    return by_tenant, reasons


def _busy_by(runs: SimulatedRuns, key) -> Counter:
    """Run-seconds per tenant or per repository."""
    busy: Counter = Counter()
    for s in runs.started.values():
        busy[key(s)] += s.seconds
    return busy
