"""The two measurements of ``bench/loop_bench.py``, on one dev stack.

* :func:`measure_overhead` -- the real ``AgentLoop`` (real worker wiring, ``create_worker``)
  against in-process forge and model simulators, vs. ``bench._bare_workflow`` (5 no-op
  activities per order), both run by in-process workers on the stack's Temporal dev server,
  in interleaved rounds.
* :func:`measure_restart` -- the stack's own worker process is SIGKILLed while reviews
  admitted through the webhook API are mid-flight on a slow model simulator, a new worker
  is started, and the model simulator's counters are compared with the steps the runs
  recorded and with Temporal's activity attempts.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import httpx
from temporalio.api.enums.v1 import EventType
from temporalio.worker import Worker

import ledger
from bench._bare_workflow import BARE_WORKFLOW, BareLoopWorkflow, BareResult, BareStart, bare_model, bare_tool
from bench._common import BenchError, SideRound, head_sha, median, now, percentile, signed_pull_request
from bench._e2e import process_cpu
from demo.outcome import TERMINAL, wait_for_runs
from simulators import ServerThread
from simulators.forge import create_forge_app
from simulators.model import create_model_app
from sluicegate.config.settings import load_settings
from sluicegate.devstack import DevStack
from sluicegate.temporal.client import connect
from tests.support.agent_runs import start_order, work_order
from worker import create_worker
from workflows.agent_loop import MODEL_ACTIVITY
from workflows.contracts import AgentLoopResult

Log = Callable[[str], None]
MODEL_STEPS, TOOL_STEPS = 3, 2
"""The simulator's reviewer: model -> get diff -> model -> post comment -> model (stop)."""
DIFF = ("diff --git a/src/app.py b/src/app.py\n--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,3 @@\n"
        " import os\n+import sys\n def main():\n")
FORGE_TOKEN, MODEL_KEY = "bench-forge-token", "bench-model-key"


# -- measurement 1: per-step overhead ------------------------------------------------------

@dataclass
class Overhead:
    orders: int
    concurrency: int
    loop: list[SideRound] = field(default_factory=list)
    bare: list[SideRound] = field(default_factory=list)
    cpu: dict[str, dict[str, list[float]]] = field(default_factory=lambda: {"loop": {}, "bare": {}})
    """side -> process -> per-round CPU ms per model step."""
    checks: list[str] = field(default_factory=list)
    events: dict[str, dict[str, float]] = field(default_factory=dict)
    """side -> Temporal history events per model step, counted over the last round's orders (what dominates)."""
    sims_in_process: bool = False
    """The forge and model simulators ran as threads of the bench process (sharing its GIL with the
    workers), not as the stack's own simulator processes."""

    @property
    def bench_proc(self) -> str:
        """The CPU key of the bench process (both workers, the client; the simulators when in process)."""
        return "bench (workers, sims)" if self.sims_in_process else "bench (workers)"

    def per_step_ms(self, side: str) -> float:
        """Median over rounds of wall ms per model step (orders x 3 steps per round)."""
        return median([r.seconds * 1000 / r.ops for r in getattr(self, side) if r.ops])

    def latency_per_step_ms(self, side: str, pct: float) -> float:
        """Median over rounds of the per-order latency percentile, divided by 3 steps."""
        return median([percentile(r.latencies, pct) * 1000 / MODEL_STEPS for r in getattr(self, side)])

    @property
    def ratios(self) -> list[float]:
        """Per round: loop ms/step / bare ms/step (the two sides ran back to back)."""
        return [(lo.seconds / lo.ops) / (b.seconds / b.ops) for lo, b in zip(self.loop, self.bare, strict=False)
                if lo.ops and b.ops]

    def cpu_ms(self, side: str, proc: str) -> float:
        return median(self.cpu[side].get(proc, []))


async def _drive(n: int, concurrency: int, one: Callable[[int], Any]) -> SideRound:
    """Run ``one(i)`` for i in range(n), ``concurrency`` at a time; latencies per call."""
    sem = asyncio.Semaphore(concurrency)
    lat: list[float] = []

    async def run(i: int) -> None:
        async with sem:
            t = now()
            await one(i)
            lat.append(now() - t)

    start = now()
    await asyncio.gather(*(run(i) for i in range(n)))
    return SideRound(n * MODEL_STEPS, now() - start, lat)


async def measure_overhead(stack: DevStack, tmp: Path, rounds: int, orders: int, concurrency: int,
                           warmup: int, log: Log, sims_in_process: bool = False) -> Overhead:
    result = Overhead(orders, concurrency, sims_in_process=sims_in_process)
    s = stack.settings
    if sims_in_process:
        forge = ServerThread(create_forge_app(token=FORGE_TOKEN), name="bench-forge").start()
        model = ServerThread(create_model_app(api_key=MODEL_KEY), name="bench-model").start()
        forge_token, model_key = FORGE_TOKEN, MODEL_KEY
    else:  # the stack's simulator processes: external services, as GitHub and the model provider are
        forge = _External(f"http://{s.simulators.forge.host}:{s.simulators.forge.port}")
        model = _External(f"http://{s.simulators.model.host}:{s.simulators.model.port}")
        forge_token = s.forge.token.get_secret_value() if s.forge.token else ""
        model_key = s.model.api_key.get_secret_value()
        httpx.post(f"{model.base_url}/_sim/reset", timeout=10).raise_for_status()
    try:
        env = {**stack.env, "FORGE_BASE_URL": forge.base_url, "FORGE_TOKEN": forge_token,
               "OPENAI_BASE_URL": f"{model.base_url}/v1", "OPENAI_API_KEY": model_key,
               "SLUICEGATE_LEDGER_URL": f"sqlite:///{tmp / 'loop-ledger.sqlite'}",
               # Orders are signalled straight in (this measures the loop, not intake), so no
               # accept receipt backs them: the claim's admission check is off for this worker only.
               "SLUICEGATE__TEMPORAL__REQUIRE_ADMISSION": "false"}
        settings = load_settings(env=env)
        ledger.upgrade(settings.ledger_url())
        run = uuid.uuid4().hex[:6]
        total = warmup + rounds * orders
        shas = [head_sha("loop", run, n) for n in range(total)]
        with httpx.Client(base_url=forge.base_url, timeout=10) as http:
            for n, sha in enumerate(shas):
                http.post(f"/_sim/pulls/bench/loop-{run}/{n + 1}",
                          json={"head_sha": sha, "state": "open", "title": f"Loop bench #{n + 1}",
                                "diff": DIFF}).raise_for_status()
        client = await connect(settings)
        loop_tq, bare_tq = f"bench-loop-{run}", f"bench-bare-{run}"
        outcomes: dict[str, list[tuple[str, int]]] = {"loop": [], "bare": []}
        temporal_pid = stack.processes["temporal"].proc.pid
        pids = {"temporal": temporal_pid, result.bench_proc: os.getpid()}
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
                    await _drive(warmup, min(concurrency, warmup), loop_one)
                    await _drive(warmup, min(concurrency, warmup), bare_one)
                    log(f"  warm-up: {warmup} orders per side in {now() - t:.1f}s")
                for r in range(rounds):
                    order = ["loop", "bare"] if r % 2 == 0 else ["bare", "loop"]
                    for side in order:
                        before = {k: process_cpu(p) for k, p in pids.items()}
                        sr = await _drive(orders, concurrency, sides[side])
                        after = {k: process_cpu(p) for k, p in pids.items()}
                        for k in pids:
                            result.cpu[side].setdefault(k, []).append((after[k] - before[k]) * 1000 / sr.ops)
                        getattr(result, side).append(sr)
                        log(f"  overhead round {r + 1}/{rounds} {side:<4} {orders} orders ({sr.ops} model steps) "
                            f"in {sr.seconds:5.2f}s = {sr.seconds * 1000 / sr.ops:6.1f} ms/step")
            for side in ("loop", "bare"):
                result.events[side] = await _events_per_step(handles[side][-orders:])
        stats = httpx.get(f"{model.base_url}/_sim/stats", timeout=10).json()
    finally:
        forge.stop()
        model.stop()

    # Verification: every loop order done in 3 steps, every bare order ran its 5 activities,
    # and the model simulator saw exactly 3 calls per loop order.
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
    return result


@dataclass
class _External:
    """A simulator the dev stack runs in its own process (nothing to stop here)."""
    base_url: str

    def stop(self) -> None:
        pass


COUNTED_EVENTS = {
    "activities": EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
    "workflow_tasks": EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    "search_attribute_upserts": EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
    "memo_upserts": EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED,
    "timers": EventType.EVENT_TYPE_TIMER_STARTED,
    "signals": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
}
MARKERS = {"core_patch": "patch_markers", "core_local_activity": "local_activities"}
"""Markers by name: a ``workflow.patched`` marker, a local activity's result."""


async def _events_per_step(handles: list) -> dict[str, float]:
    """History events per model step over these finished workflows, by kind, and all events."""
    counts = dict.fromkeys([*COUNTED_EVENTS, *MARKERS.values(), "all history events"], 0)
    for handle in handles:
        for e in (await handle.fetch_history()).events:
            counts["all history events"] += 1
            for name, kind in COUNTED_EVENTS.items():
                counts[name] += e.event_type == kind
            if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED:
                name = MARKERS.get(e.marker_recorded_event_attributes.marker_name)
                if name:
                    counts[name] += 1
    steps = len(handles) * MODEL_STEPS
    return {k: v / steps for k, v in counts.items()} if steps else counts


# -- measurement 2: worker restart mid-run -------------------------------------------------

@dataclass
class Restart:
    reviews: int
    delay: float
    admitted: int = 0
    at_kill: dict[str, int] = field(default_factory=dict)
    """Model simulator counters read right after the SIGKILL (the dead worker's calls are final)."""
    drained: dict[str, int] = field(default_factory=dict)
    """... and once every call the dead worker left in flight had been answered (before the new worker)."""
    final: dict[str, Any] = field(default_factory=dict)
    steps: int = 0
    """Sum of ``steps`` recorded by the runs (work_versions.result)."""
    statuses: dict[str, int] = field(default_factory=dict)
    history_completed: int = 0
    """Model activities completed in Temporal history."""
    history_retries: int = 0
    """Sum over model activities of (attempt - 1), from history."""
    kill_after: float = 0.0
    restart_seconds: float = 0.0
    finish_seconds: float = 0.0
    comments: int = 0

    @property
    def calls(self) -> int:
        return int(self.final.get("calls", 0))

    @property
    def completed(self) -> int:
        return int(self.final.get("completed", 0))

    @property
    def cut_off(self) -> int:
        """Calls in flight at the model simulator when the worker died."""
        return self.at_kill.get("calls", 0) - self.at_kill.get("completed", 0)

    @property
    def late(self) -> int:
        """Calls the simulator completed after the kill, before the new worker: answered to no worker."""
        return self.drained.get("completed", 0) - self.at_kill.get("completed", 0)


async def measure_restart(stack: DevStack, reviews: int, delay: float, timeout: float, log: Log) -> Restart:
    s = stack.settings
    res = Restart(reviews, delay)
    forge = f"http://{s.simulators.forge.host}:{s.simulators.forge.port}"
    model = f"http://{s.simulators.model.host}:{s.simulators.model.port}"
    api = f"http://{s.webhook_api.host}:{s.webhook_api.port}/webhooks/github"
    secret = s.sources["github"].secret
    run = uuid.uuid4().hex[:6]
    repo = f"restart-{run}"
    async with httpx.AsyncClient(timeout=30) as http:
        async def stats() -> dict[str, Any]:
            return (await http.get(f"{model}/_sim/stats")).raise_for_status().json()

        (await http.post(f"{model}/_sim/reset")).raise_for_status()
        (await http.post(f"{model}/_sim/faults", json={"delay_seconds": delay, "times": None})).raise_for_status()
        shas = [head_sha("restart", run, n) for n in range(1, reviews + 1)]
        for n, sha in enumerate(shas, 1):
            (await http.post(f"{forge}/_sim/pulls/bench/{repo}/{n}",
                             json={"head_sha": sha, "state": "open", "title": f"Restart #{n}", "diff": DIFF})
             ).raise_for_status()
        t0 = time.monotonic()
        for n, sha in enumerate(shas, 1):
            headers, body = signed_pull_request(secret, "bench", repo, n, sha)
            r = await http.post(api, content=body, headers=headers)
            answer = r.json()
            if r.status_code != 202 or not answer.get("admitted"):
                raise BenchError(f"review {n} not admitted: {r.status_code} {answer}")
            res.admitted += 1
        log(f"  restart: {reviews} reviews admitted through the webhook API; model simulator delays every "
            f"call {delay}s")

        # Kill once every run's first model call has been answered AND its second one is in flight
        # (calls >= 2K): the first steps are in history, the second ones are mid-call.
        target = 2 * reviews
        deadline = time.monotonic() + timeout
        while (await stats())["calls"] < target:
            if time.monotonic() > deadline:
                raise BenchError(f"model calls never reached {target} before the kill")
            await asyncio.sleep(0.05)
        before = await stats()
        stack.kill_worker()
        res.kill_after = time.monotonic() - t0
        res.at_kill = {k: v for k, v in (await stats()).items() if k in ("calls", "completed")}
        log(f"  restart: worker SIGKILLed {res.kill_after:.1f}s after the first admission; model simulator just "
            f"before: {before['calls']} calls / {before['completed']} completed, just after: "
            f"{res.at_kill['calls']} / {res.at_kill['completed']}")
        # Give every call the dead worker had in flight time to finish at the simulator (it would be
        # answered to nobody) before the new worker starts, so late completions can be told apart.
        await asyncio.sleep(delay + 1.0)
        st = await stats()
        res.drained = {"calls": st["calls"], "completed": st["completed"]}
        t = time.monotonic()
        await asyncio.to_thread(stack.start_worker)
        res.restart_seconds = time.monotonic() - t
        log(f"  restart: {delay + 1.0:.1f}s after the kill: {st['calls']} calls / {st['completed']} completed; "
            f"new worker polling after {res.restart_seconds:.1f}s more")
        versions = await asyncio.to_thread(wait_for_runs, s, timeout)
        res.finish_seconds = time.monotonic() - t0
        res.final = await stats()
        res.comments = sum(1 for c in (await http.get(f"{forge}/_sim/comments")).json()  # this measurement's repo
                           if (c["owner"], c["repo"]) == ("bench", repo))  # (the overhead posts on the same forge)

    ours = [v for v in versions if f"bench/{repo}#" in v.work_key]
    if len(ours) != reviews:
        raise BenchError(f"{len(ours)} work versions for {reviews} admitted reviews")
    unfinished = [v for v in ours if v.status not in TERMINAL]
    if unfinished:
        raise BenchError(f"{len(unfinished)} runs unfinished after {timeout:.0f}s: "
                         + ", ".join(f"{v.work_key}={v.status}" for v in unfinished[:3]))
    res.steps = sum((v.result or {}).get("steps", 0) for v in ours)
    res.statuses = {}
    for v in ours:
        res.statuses[v.status] = res.statuses.get(v.status, 0) + 1
    await _history(stack, ours, res)
    return res


async def _history(stack: DevStack, versions, res: Restart) -> None:
    """Model activities completed, and their retried attempts, from each run's Temporal history."""
    client = await connect(stack.settings)
    scheduled: dict[int, str] = {}
    for v in versions:
        handle = client.get_workflow_handle(v.workflow_id, run_id=v.run_id)
        history = await handle.fetch_history()
        scheduled.clear()
        for e in history.events:
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                scheduled[e.event_id] = e.activity_task_scheduled_event_attributes.activity_type.name
            elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
                a = e.activity_task_started_event_attributes
                if scheduled.get(a.scheduled_event_id) == MODEL_ACTIVITY:
                    res.history_retries += a.attempt - 1
            elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
                a = e.activity_task_completed_event_attributes
                if scheduled.get(a.scheduled_event_id) == MODEL_ACTIVITY:
                    res.history_completed += 1
