"""Measurement 1 of ``bench/loop_bench.py``: the per-step overhead of the real ``AgentLoop``.

The real workflow with the real worker wiring (``create_worker``) against the forge and model
simulators (``bench/_loop_sims.py``), vs. ``bench._bare_workflow`` (5 no-op activities per order),
both run by workers of this process on the stack's Temporal dev server, in interleaved rounds;
CPU per model step by process (Temporal, this process, the simulators).
"""

from __future__ import annotations

import os
import uuid
from contextlib import AsyncExitStack
from pathlib import Path

import httpx
from temporalio.worker import Worker

import ledger
from bench._bare_workflow import BARE_WORKFLOW, BareLoopWorkflow, BareResult, BareStart, bare_model, bare_tool
from bench._common import BenchError, head_sha, now
from bench._e2e import process_cpu
from bench._loop import MODEL_STEPS, Log, Overhead, drive
from bench._loop_history import events_per_step
from bench._loop_sims import open_pulls, start_sims
from sluicegate.config.settings import load_settings
from sluicegate.devstack import DevStack
from sluicegate.temporal.client import connect
from tests.support.agent_runs import start_order, work_order
from worker import create_worker
from workflows.contracts import AgentLoopResult


async def measure_overhead(stack: DevStack, tmp: Path, rounds: int, orders: int, concurrency: int,
                           warmup: int, log: Log, sims_in_process: bool = False) -> Overhead:
    result = Overhead(orders, concurrency, sims_in_process=sims_in_process)
    sims = start_sims(stack, sims_in_process)
    total = warmup + rounds * orders
    outcomes: dict[str, list[tuple[str, int]]] = {"loop": [], "bare": []}
    try:
        settings = load_settings(env={
            **stack.env, **sims.env(), "SLUICEGATE_LEDGER_URL": f"sqlite:///{tmp / 'loop-ledger.sqlite'}",
            # Orders are signalled straight in (this measures the loop, not intake), so no
            # accept receipt backs them: the claim's admission check is off for this worker only.
            "SLUICEGATE__TEMPORAL__REQUIRE_ADMISSION": "false"})
        ledger.upgrade(settings.ledger_url())
        run = uuid.uuid4().hex[:6]
        shas = [head_sha("loop", run, n) for n in range(total)]
        open_pulls(sims.forge.base_url, f"loop-{run}", shas)
        client = await connect(settings)
        loop_tq, bare_tq = f"bench-loop-{run}", f"bench-bare-{run}"
        pids = {"temporal": stack.processes["temporal"].proc.pid, result.bench_proc: os.getpid()}
        if not sims_in_process:
            pids.update({"forge simulator": stack.processes["forge-simulator"].proc.pid,
                         "model simulator": stack.processes["model-simulator"].proc.pid})
        next_order = iter(range(total))
        handles: dict[str, list] = {"loop": [], "bare": []}

        async def loop_one(_: int) -> None:
            n = next(next_order)
            order = work_order(settings, search_attributes=True, owner="bench", repo=f"loop-{run}", number=n + 1,
                               version=shas[n])
            handle = await start_order(client, loop_tq, order)
            handles["loop"].append(handle)
            res: AgentLoopResult = await handle.result()
            outcomes["loop"] += [(o.status, o.steps) for o in res.orders]

        async def bare_one(i: int) -> None:
            handle = await client.start_workflow(BARE_WORKFLOW, BareStart(f"bare-{run}-{uuid.uuid4().hex[:8]}"),
                                                 id=f"bench-bare/{run}/{uuid.uuid4().hex[:12]}", task_queue=bare_tq,
                                                 result_type=BareResult)
            handles["bare"].append(handle)
            res: BareResult = await handle.result()
            outcomes["bare"].append(("done" if res.activities == 5 else "short", res.model_calls))

        sides = {"loop": loop_one, "bare": bare_one}
        async with AsyncExitStack() as resources:
            loop_worker = await create_worker(client, settings, resources, loop_tq)
            bare_worker = Worker(client, task_queue=bare_tq, workflows=[BareLoopWorkflow],
                                 activities=[bare_model, bare_tool])
            async with loop_worker, bare_worker:
                if warmup:
                    t = now()
                    await drive(warmup, min(concurrency, warmup), loop_one)
                    await drive(warmup, min(concurrency, warmup), bare_one)
                    log(f"  warm-up: {warmup} orders per side in {now() - t:.1f}s")
                for r in range(rounds):
                    for side in (["loop", "bare"] if r % 2 == 0 else ["bare", "loop"]):
                        before = {k: process_cpu(p) for k, p in pids.items()}
                        sr = await drive(orders, concurrency, sides[side])
                        after = {k: process_cpu(p) for k, p in pids.items()}
                        for k in pids:
                            result.cpu[side].setdefault(k, []).append((after[k] - before[k]) * 1000 / sr.ops)
                        getattr(result, side).append(sr)
                        log(f"  overhead round {r + 1}/{rounds} {side:<4} {orders} orders ({sr.ops} model steps) "
                            f"in {sr.seconds:5.2f}s = {sr.seconds * 1000 / sr.ops:6.1f} ms/step")
            for side in ("loop", "bare"):
                result.events[side] = await events_per_step(handles[side][-orders:], MODEL_STEPS)
        stats = httpx.get(f"{sims.model.base_url}/_sim/stats", timeout=10).json()
    finally:
        sims.stop()
    _verify(result, outcomes, stats, total)
    return result


def _verify(result: Overhead, outcomes: dict[str, list[tuple[str, int]]], stats: dict, total: int) -> None:
    """Every loop order done in 3 steps, every bare order ran its 5 activities, and the model
    simulator saw exactly 3 calls per loop order."""
    want = total * MODEL_STEPS
    loop_bad = [o for o in outcomes["loop"] if o != ("done", MODEL_STEPS)]
    bare_bad = [o for o in outcomes["bare"] if o != ("done", MODEL_STEPS)]
    result.checks.append(f"loop: {len(outcomes['loop'])} orders, {len(loop_bad)} not (done, 3 steps); "
                         f"model simulator: {stats['calls']} calls, {stats['completed']} completed "
                         f"(expected {want})")
    result.checks.append(f"bare: {len(outcomes['bare'])} orders, {len(bare_bad)} not 5 activities / 3 model")
    problems = []
    if len(outcomes["loop"]) != total or loop_bad:
        problems.append(f"loop orders off: {len(outcomes['loop'])}/{total}, bad {loop_bad[:3]}")
    if len(outcomes["bare"]) != total or bare_bad:
        problems.append(f"bare orders off: {len(outcomes['bare'])}/{total}, bad {bare_bad[:3]}")
    if stats["calls"] != want or stats["completed"] != want:
        problems.append(f"model simulator saw {stats['calls']} calls / {stats['completed']} completed, want {want}")
    if problems:
        raise BenchError("overhead verification failed: " + "; ".join(problems))
