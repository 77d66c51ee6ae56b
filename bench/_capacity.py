"""The capacity bench's burst: submit it through the real intake and gate, then drain it.

Real: ``IntakeService`` + ``SqlIntakeStore`` + ``CapacityGate`` + ``dispatch_once`` and the
forge simulator over HTTP. Simulated: the runs (``bench/_capacity_sim.py``). The workload is in
``bench/_capacity_workload.py``; this module re-exports what ``bench/_priority_flood.py`` uses.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

from bench._capacity_sim import CounterSampler, Dispatcher, SimulatedRuns
from bench._capacity_workload import FLOODER, FORGE_TOKEN, Delivery, admission_waits, burst, create_pulls
from bench._harness import every, stage
from bench._tables import log as _log
from intake.capacity import CapacityPlanner
from intake.capacity.gate import CapacityGate
from intake.envelope import Envelope, TriggerKind, WorkCandidate
from intake.forge_reader import ForgeTargetReader
from intake.identity import review_candidate
from intake.scope import ScopeRules
from intake.service import IntakeService
from ledger import BreakerBoard, CapacityLedger, DeferredQueue, SqlIntakeStore
from sluicegate.config.capacity import CapacityConfig
from sluicegate.forge.client import ForgeClient

__all__ = ["FLOODER", "FORGE_TOKEN", "CounterSampler", "Delivery", "Dispatcher", "Result", "SimulatedRuns",
           "admission_waits", "burst", "create_pulls", "drive"]


@dataclass
class Result:
    drain_seconds: float = 0.0
    burst_seconds: float = 0.0
    forge_reads: int = 0
    answers: Counter = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)


def _envelope(d: Delivery) -> tuple[Envelope, WorkCandidate]:
    now = datetime.now(UTC)
    env = Envelope(id=f"bench-{d.work_key}", source="github", type="pull_request.opened", subject=d.ref.target_id,
                   time=now, received_at=now, trigger_kind=TriggerKind.EVENT, tenant=d.tenant)
    return env, review_candidate(d.tenant, d.ref, d.head)


async def drive(a, items: list[Delivery], engine, forge_url: str, cfg: CapacityConfig):
    forge = ForgeClient(forge_url, FORGE_TOKEN, timeout_seconds=10)
    capacity, queue = CapacityLedger(engine), DeferredQueue(engine)
    gate = CapacityGate(CapacityPlanner(cfg.limits({})), BreakerBoard(engine, cfg.breaker_policy()),
                        cfg.breaker_policy(), cfg.breaker.gating_providers, cfg.defer_retry_seconds)
    dispatcher = Dispatcher(queue, capacity, a.batch)
    runs = SimulatedRuns(capacity, dispatcher, random.Random(a.seed + 1), (a.run_ms[0] / 1000, a.run_ms[1] / 1000))
    service = IntakeService(SqlIntakeStore(engine), ForgeTargetReader(forge), runs, gate, scope=ScopeRules.everything())
    dispatcher.service = service
    sampler = CounterSampler(capacity)
    res = Result()
    todo: asyncio.Queue = asyncio.Queue()
    for d in items:
        todo.put_nowait(d)

    async def submitter() -> None:
        while not todo.empty():
            d = todo.get_nowait()
            try:
                decision = await service.submit(*_envelope(d))
                res.answers[f"{decision.outcome}/{decision.reason}"] += 1
            except Exception as exc:  # noqa: BLE001 - reported, and fails the bench
                res.failures.append(f"submit {d.work_key}: {type(exc).__name__}: {exc}")

    sampler.start()
    started = time.perf_counter()
    try:
        async with every(a.tick, lambda: dispatcher.run_pass("scheduled")):
            stage(f"capacity: submitting {len(items)} deliveries")
            await asyncio.gather(*(submitter() for _ in range(a.concurrency)))
            res.burst_seconds = time.perf_counter() - started
            _log(f"  burst submitted in {res.burst_seconds:.1f}s: {dict(res.answers)}")
            next_log = time.perf_counter() + 10
            while True:
                counts = await asyncio.to_thread(queue.counts)
                waiting = sum(n for (_, status), n in counts.items() if status == "waiting")
                if not waiting and not runs.busy:
                    break
                stage(f"capacity: draining, {len(runs.started)}/{len(items)} admitted, {waiting} waiting")
                if time.perf_counter() - started > a.timeout:
                    res.failures.append(f"not drained after {a.timeout:.0f}s: {waiting} waiting")
                    break
                if time.perf_counter() >= next_log:
                    _log(f"  {time.perf_counter() - started:5.0f}s: {len(runs.started)} admitted, {waiting} waiting, "
                         f"{runs.in_flight['global']} running, {sum(dispatcher.passes.values())} passes")
                    next_log += 10
                await asyncio.sleep(0.25)
            res.drain_seconds = time.perf_counter() - started
    finally:
        sampler.stop()
        await forge.aclose()
    res.failures += dispatcher.errors + runs.errors
    return res, runs, sampler, dispatcher, capacity
