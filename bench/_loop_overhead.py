"""Measurement 1 of ``bench/loop_bench.py``: the per-step overhead of the real ``AgentLoop``.

The real workflow with the real worker wiring (``create_worker``) against the forge and model
simulators (``bench/_loop_sims.py``), vs. ``bench._bare_workflow`` (5 no-op activities per order),
and vs. ``bench._bare_agent`` (the same shape making the same model and forge calls, no runtime),
all run by workers of this process on the stack's Temporal dev server, in interleaved rounds;
CPU per model step by process (Temporal, this process, the simulators). Verified in
``bench/_loop_verify.py``.
"""

from __future__ import annotations

import os
import uuid
from contextlib import AsyncExitStack
from pathlib import Path

import httpx
from temporalio.client import Client
from temporalio.converter import DataConverter
from temporalio.worker import Worker

import ledger
from bench._bare_agent import AGENT_WORKFLOW, AgentResult, AgentStart, BareAgentWorkflow
from bench._bare_agent_acts import BareAgentActivities, agent_start
from bench._bare_workflow import BARE_WORKFLOW, BareLoopWorkflow, BareResult, BareStart, bare_model, bare_tool
from bench._common import head_sha, now
from bench._e2e import process_cpu
from bench._loop import MODEL_STEPS, SIDES, Log, Overhead, drive
from bench._loop_history import events_per_step
from bench._loop_sims import open_pulls, start_sims
from bench._loop_verify import verify
from activities.model_credentials import openai_client
from sluicegate.forge.client import ForgeClient
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
    agent_results: list[AgentResult] = []
    agent_starts: dict[str, AgentStart] = {}
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
        agent_shas = [head_sha("agent", run, n) for n in range(total)]
        open_pulls(sims.forge.base_url, f"agent-{run}", agent_shas)
        client = await connect(settings)
        # The baselines are bare Temporal: the SDK's own data converter, not Sluicegate's
        # (sluicegate/temporal/converter.py); same connection and interceptors.
        bare = Client(**{**client.config(), "data_converter": DataConverter.default})
        loop_tq, bare_tq, agent_tq = f"bench-loop-{run}", f"bench-bare-{run}", f"bench-agent-{run}"
        pids = {"temporal": stack.processes["temporal"].proc.pid, result.bench_proc: os.getpid()}
        if not sims_in_process:
            pids.update({"forge simulator": stack.processes["forge-simulator"].proc.pid,
                         "model simulator": stack.processes["model-simulator"].proc.pid})
        next_order, next_agent = iter(range(total)), iter(range(total))
        handles: dict[str, list] = {s: [] for s in SIDES}

        async def loop_one(_: int) -> None:
            n = next(next_order)
            order = work_order(settings, search_attributes=True, owner="bench", repo=f"loop-{run}", number=n + 1,
                               version=shas[n])
            handle = await start_order(client, loop_tq, order)
            handles["loop"].append(handle)
            res: AgentLoopResult = await handle.result()
            outcomes["loop"] += [(o.status, o.steps) for o in res.orders]

        async def bare_one(i: int) -> None:
            handle = await bare.start_workflow(BARE_WORKFLOW, BareStart(f"bare-{run}-{uuid.uuid4().hex[:8]}"),
                                                 id=f"bench-bare/{run}/{uuid.uuid4().hex[:12]}", task_queue=bare_tq,
                                                 result_type=BareResult)
            handles["bare"].append(handle)
            res: BareResult = await handle.result()
            outcomes["bare"].append(("done" if res.activities == 5 else "short", res.model_calls))

        async def agent_one(_: int) -> None:
            n = next(next_agent)
            order = work_order(settings, owner="bench", repo=f"agent-{run}", number=n + 1, version=agent_shas[n])
            start = agent_start(order, f"bare-agent/{run}/{n + 1}", settings.budgets.step_max_output_tokens)
            agent_starts[start.key] = start
            handle = await bare.start_workflow(AGENT_WORKFLOW, start, id=f"bench-agent/{run}/{n + 1}",
                                                 task_queue=agent_tq, result_type=AgentResult)
            handles["bare_agent"].append(handle)
            agent_results.append(await handle.result())

        sides = {"loop": loop_one, "bare": bare_one, "bare_agent": agent_one}
        async with AsyncExitStack() as resources:
            loop_worker = await create_worker(client, settings, resources, loop_tq)
            bare_worker = Worker(bare, task_queue=bare_tq, workflows=[BareLoopWorkflow],
                                 activities=[bare_model, bare_tool])
            model = openai_client(settings.model.base_url, settings.model.api_key.get_secret_value(),
                                  settings.model.timeout_seconds)
            resources.push_async_callback(model.close)
            forge = ForgeClient(settings.forge.base_url, settings.forge.token.get_secret_value()
                                if settings.forge.token else None, timeout_seconds=settings.forge.timeout_seconds)
            resources.push_async_callback(forge.aclose)
            agent_worker = Worker(bare, task_queue=agent_tq, workflows=[BareAgentWorkflow],
                                  activities=BareAgentActivities(model, forge, "acme").activities)
            async with loop_worker, bare_worker, agent_worker:
                if warmup:
                    t = now()
                    for side in SIDES:
                        await drive(warmup, min(concurrency, warmup), sides[side])
                    log(f"  warm-up: {warmup} orders per side in {now() - t:.1f}s")
                for r in range(rounds):
                    for side in SIDES[r % 3:] + SIDES[:r % 3]:  # who goes first rotates
                        before = {k: process_cpu(p) for k, p in pids.items()}
                        sr = await drive(orders, concurrency, sides[side])
                        after = {k: process_cpu(p) for k, p in pids.items()}
                        for k in pids:
                            result.cpu[side].setdefault(k, []).append((after[k] - before[k]) * 1000 / sr.ops)
                        getattr(result, side).append(sr)
                        log(f"  overhead round {r + 1}/{rounds} {side:<10} {orders} orders ({sr.ops} model steps) "
                            f"in {sr.seconds:5.2f}s = {sr.seconds * 1000 / sr.ops:6.1f} ms/step")
            for side in SIDES:
                result.events[side] = await events_per_step(handles[side][-orders:], MODEL_STEPS)
        stats = httpx.get(f"{sims.model.base_url}/_sim/stats", timeout=10).json()
    finally:
        sims.stop()
    verify(result, outcomes, agent_results, agent_starts, stats, total)
    return result
