"""The two phases of the mixed-stream benchmark, on one dev stack with a worker.

* **intake**: the stream's signed deliveries go to ``POST /webhooks/github`` (the real API
  process) at the given concurrency while the worker runs whatever is admitted; then we
  wait until every admitted work version is finished and read the ledger, Temporal and
  both simulators.
* **naive**: both simulators are reset (the forge's pull requests are re-created), and
  for every delivery of the same stream one ``AgentLoop`` workflow is started directly
  with a work order of its own (unique work key suffix, generation 1) -- "no intake";
  we wait for all of them and read the simulators again.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Callable

import httpx
from sqlmodel import Session, select

import ledger
from bench._common import delivery_headers, now, percentile, pull_request_payload
from bench._e2e import process_cpu
from bench._stream import Item, Pull, Stream
from intake.identity import workflow_id_for
from ledger import Receipt, WorkVersion
from sluicegate.config.settings import Settings
from sluicegate.devstack import DevStack
from sluicegate.temporal.client import connect
from workflows.contracts import (
    AGENT_WORKFLOW, WORK_ORDER_SIGNAL, AgentLoopResult, AgentLoopStart, Price, RunStatus, RuntimeOptions, TaskBudget,
    WorkOrder,
)

TERMINAL = frozenset(RunStatus)
CATEGORIES = ("accept", "reject:duplicate-delivery", "reject:duplicate-work", "reject:stale-version", "other")
DIFF = ("diff --git a/src/app.py b/src/app.py\n--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,3 @@\n"
        " import os\n+import sys\n def main():\n")
Log = Callable[[str], None]


@dataclass
class Answer:
    status: int | None = None
    outcome: str | None = None
    reason: str | None = None
    admitted: bool = False
    seconds: float = 0.0
    error: str | None = None

    @property
    def category(self) -> str:
        if self.error is not None:
            return "other"
        if self.outcome == "accept" and self.admitted and self.status == 202:
            return "accept"
        key = f"{self.outcome}:{self.reason}"
        return key if key in CATEGORIES and self.status == 200 else "other"

    @property
    def label(self) -> str:
        if self.error is not None:
            return f"error {self.error}"
        extra = "" if self.outcome != "accept" or self.admitted else " (not admitted)"
        return f"{self.status} {self.outcome}/{self.reason}{extra}"


@dataclass
class Phase:
    """What one phase observed."""

    name: str
    seconds_to_finish: float = 0.0
    """From the first request to every run finished."""
    model: dict[str, Any] = field(default_factory=dict)
    comments: list[dict[str, Any]] = field(default_factory=list)
    executions: set[tuple[str, str]] = field(default_factory=set)
    """(workflow id, run id) of the AgentLoop executions this phase started."""
    cpu: dict[str, float] = field(default_factory=dict)
    """CPU seconds per stack process (and this process) during the phase."""

    @property
    def calls(self) -> int:
        return int(self.model.get("calls", 0))

    @property
    def tokens(self) -> int:
        return sum(self.model.get("tokens", {}).values())


@dataclass
class IntakeResult:
    phase: Phase
    answers: list[Answer]
    send_seconds: float
    versions: list[WorkVersion] = field(default_factory=list)
    receipts: Counter = field(default_factory=Counter)
    workflow_ids: set[str] = field(default_factory=set)


@dataclass
class NaiveResult:
    phase: Phase
    starts: int = 0
    start_seconds: float = 0.0
    statuses: Counter = field(default_factory=Counter)
    steps: int = 0
    errors: list[str] = field(default_factory=list)


class Endpoints:
    def __init__(self, s: Settings) -> None:
        self.api = f"http://{s.webhook_api.host}:{s.webhook_api.port}/webhooks/github"
        self.forge = f"http://{s.simulators.forge.host}:{s.simulators.forge.port}"
        self.model = f"http://{s.simulators.model.host}:{s.simulators.model.port}"


class CpuClock:
    def __init__(self, stack: DevStack) -> None:
        self.pids = {n: p.proc.pid for n, p in stack.processes.items() if p.proc is not None}
        self.pids["bench"] = os.getpid()

    def snapshot(self) -> dict[str, float]:
        return {n: process_cpu(pid) for n, pid in self.pids.items()}

    def since(self, before: dict[str, float]) -> dict[str, float]:
        after = self.snapshot()
        return {n: after[n] - before[n] for n in after}


# -- set-up -------------------------------------------------------------------------------

async def setup_pulls(http: httpx.AsyncClient, ep: Endpoints, pulls: list[Pull], final: bool,
                      concurrency: int) -> None:
    """Create (or re-create after a forge reset) every pull request, open, at its first or last head."""
    sem = asyncio.Semaphore(concurrency)

    async def one(p: Pull) -> None:
        async with sem:
            r = await http.post(f"{ep.forge}/_sim/pulls/{p.owner}/{p.repo}/{p.number}",
                                json={"head_sha": p.heads[-1] if final else p.heads[0], "state": "open",
                                      "title": f"Bench change #{p.number}", "diff": DIFF})
            r.raise_for_status()

    await asyncio.gather(*(one(p) for p in pulls))


def signed_bodies(stream: Stream, secret: str) -> list[tuple[dict[str, str], bytes]]:
    """Headers and body per item; a redelivery is byte-for-byte its original (same signature and id)."""
    out: list[tuple[dict[str, str], bytes]] = []
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # event time: intake refuses events > max age
    for it in stream.items:
        if it.origin is not None:
            out.append(out[it.origin])
            continue
        payload = pull_request_payload(it.owner, it.repo, it.number, it.sha, action=it.action)
        payload["pull_request"]["updated_at"] = stamp
        # Each item is a distinct event, as GitHub's bodies are: the same bytes under a new
        # delivery id would be a replay (replayed-body), not the stale or new event meant here.
        payload["bench_event"] = it.index
        body = json.dumps(payload).encode()
        out.append((delivery_headers(secret, body, delivery_id=it.delivery_id), body))
    return out


# -- intake phase -------------------------------------------------------------------------

async def send_stream(http: httpx.AsyncClient, ep: Endpoints, items: list[Item],
                      bodies: list[tuple[dict[str, str], bytes]], concurrency: int) -> tuple[list[Answer], float]:
    """Send every item with ``concurrency`` senders, honouring per-pull-request ``deps``."""
    done = [asyncio.Event() for _ in items]
    answers: list[Answer] = [Answer(error="not sent") for _ in items]
    queue = iter(items)

    async def sender() -> None:
        for it in queue:
            try:
                for j in it.deps:
                    await done[j].wait()
                if it.move_to is not None:
                    r = await http.post(f"{ep.forge}/_sim/pulls/{it.owner}/{it.repo}/{it.number}",
                                        json={"head_sha": it.move_to})
                    r.raise_for_status()
                headers, body = bodies[it.index]
                t = now()
                r = await http.post(ep.api, content=body, headers=headers)
                elapsed = now() - t
                data = r.json()
                answers[it.index] = Answer(r.status_code, data.get("outcome"), data.get("reason"),
                                           data.get("admitted") is True, elapsed)
            except Exception as exc:  # noqa: BLE001 - reported per item and in the exit status
                answers[it.index] = Answer(error=f"{type(exc).__name__}: {exc}"[:200])
            finally:
                done[it.index].set()

    start = now()
    await asyncio.gather(*(sender() for _ in range(concurrency)))
    return answers, now() - start


def read_versions(engine) -> list[WorkVersion]:
    with Session(engine) as s:
        return list(s.exec(select(WorkVersion)).all())


def read_receipts(engine) -> Counter:
    with Session(engine) as s:
        rows = s.exec(select(Receipt.outcome, Receipt.reason).where(Receipt.source == "github")).all()
    return Counter(f"{o}:{r}" for o, r in rows)


async def wait_versions(engine, expected: int, timeout: float, log: Log) -> list[WorkVersion]:
    """Poll ``work_versions`` until ``expected`` rows exist and all are finished."""
    deadline, last_log = now() + timeout, now()
    while True:
        versions = await asyncio.to_thread(read_versions, engine)
        open_ = [v for v in versions if v.status not in TERMINAL]
        if len(versions) >= expected and not open_:
            return versions
        if now() > deadline:
            raise TimeoutError(f"after {timeout:.0f}s: {len(versions)} work versions (expected {expected}), "
                               f"{len(open_)} unfinished: {Counter(v.status for v in open_)}")
        if now() - last_log > 10:
            log(f"    waiting for runs: {len(versions) - len(open_)}/{expected} finished "
                f"({Counter(v.status for v in versions)})")
            last_log = now()
        await asyncio.sleep(0.25)


async def agent_loops(client, expected: int, timeout: float = 30.0) -> tuple[set[tuple[str, str]], int]:
    """(workflow id, run id) of every AgentLoop execution, and how many still run.

    Visibility lags behind the server, so poll until ``expected`` closed executions show up
    (or the timeout passes, and the caller compares what it got)."""
    deadline = now() + timeout
    while True:
        seen, running = set(), 0
        async for wf in client.list_workflows(f'WorkflowType = "{AGENT_WORKFLOW}"'):
            seen.add((wf.id, wf.run_id))
            running += wf.status is not None and wf.status.name == "RUNNING"
        if (len(seen) >= expected and running == 0) or now() > deadline:
            return seen, running
        await asyncio.sleep(0.5)


async def sim_state(http: httpx.AsyncClient, ep: Endpoints) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    stats = (await http.get(f"{ep.model}/_sim/stats")).raise_for_status().json()
    comments = (await http.get(f"{ep.forge}/_sim/comments")).raise_for_status().json()
    return stats, comments


async def intake_phase(stack: DevStack, stream: Stream, concurrency: int, timeout: float, log: Log
                       ) -> IntakeResult:
    s = stack.settings
    ep = Endpoints(s)
    cpu = CpuClock(stack)
    engine = ledger.make_engine(s.ledger_url())
    client = await connect(s)
    limits = httpx.Limits(max_connections=concurrency * 2, max_keepalive_connections=concurrency * 2)
    try:
        async with httpx.AsyncClient(timeout=60, limits=limits) as http:
            await setup_pulls(http, ep, stream.pulls, final=False, concurrency=concurrency)
            bodies = signed_bodies(stream, s.sources["github"].secret)
            log(f"  set-up: {len(stream.pulls)} open pull requests on the forge simulator, "
                f"{len(stream.items)} signed deliveries")
            before = cpu.snapshot()
            t0 = now()
            answers, send_seconds = await send_stream(http, ep, stream.items, bodies, concurrency)
            cats = Counter(a.category for a in answers)
            log(f"  intake: {len(answers)} deliveries answered in {send_seconds:.2f}s "
                f"({len(answers) / send_seconds:.1f}/s): " + ", ".join(f"{k} {v}" for k, v in sorted(cats.items())))
            admitted = sum(a.category == "accept" for a in answers)
            versions = await wait_versions(engine, admitted, timeout, log)
            finished = now() - t0
            log(f"  intake: {len(versions)} admitted runs finished {finished:.1f}s after the first delivery "
                f"({Counter(v.status for v in versions)})")
            runs = {(v.workflow_id, v.run_id) for v in versions}
            executions, running = await agent_loops(client, len(runs))
            if running:
                log(f"  WARNING: {running} AgentLoop executions still running after every version finished")
            phase = Phase("intake", finished, executions=executions, cpu=cpu.since(before))
            phase.model, phase.comments = await sim_state(http, ep)
            receipts = await asyncio.to_thread(read_receipts, engine)
        return IntakeResult(phase, answers, send_seconds, versions, receipts, {w for w, _ in executions})
    finally:
        engine.dispose()


# -- naive phase --------------------------------------------------------------------------

def naive_order(s: Settings, it: Item, tenant: str) -> WorkOrder:
    """One work order per delivery, as ``tests/support/agent_runs.work_order`` builds them, with a
    work key of its own (suffix) so nothing -- not even the side-effect ledger -- dedupes it."""
    price = s.model.prices[s.model.name]
    rt = RuntimeOptions(**{**s.activities.model_dump(), "search_attributes": False})
    return WorkOrder(work_key=f"{it.work_key}~naive-{it.index:05d}", tenant=tenant, owner=it.owner, repo=it.repo,
                     number=it.number, input_version=it.sha, generation=1, trigger_kind="event", source="github",
                     receipt_id=uuid.uuid4().hex, model=s.model.name, price=Price(**price.model_dump()),
                     budget=TaskBudget(**s.budgets.per_task.model_dump()), delivery_id=it.delivery_id, runtime=rt)


async def naive_phase(stack: DevStack, stream: Stream, concurrency: int, timeout: float, log: Log,
                      intake_executions: set[tuple[str, str]]) -> NaiveResult:
    s = stack.settings
    ep = Endpoints(s)
    cpu = CpuClock(stack)
    client = await connect(s)
    tenant = s.sources["github"].tenant
    async with httpx.AsyncClient(timeout=60) as http:
        for url in (f"{ep.model}/_sim/reset", f"{ep.forge}/_sim/reset"):
            (await http.post(url)).raise_for_status()
        # The forge reset re-seeds its fixtures: our pull requests are gone. Re-create them (final heads).
        await setup_pulls(http, ep, stream.pulls, final=True, concurrency=concurrency)
        stats, comments = await sim_state(http, ep)
        if stats.get("calls") or comments:
            raise RuntimeError(f"simulators not reset: {stats.get('calls')} model calls, {len(comments)} comments")
        orders = [(f"naive/{o.work_key}", o) for o in (naive_order(s, it, tenant) for it in stream.items)]
        log(f"  naive: simulators reset, {len(stream.pulls)} pull requests re-created, {len(orders)} work orders")
        result = NaiveResult(Phase("naive"))
        handles, queue = [], iter(orders)

        async def starter() -> None:
            for wid, order in queue:
                try:
                    handles.append(await client.start_workflow(
                        AGENT_WORKFLOW, AgentLoopStart(order.work_key, order.tenant), id=wid,
                        task_queue=s.temporal.task_queue, start_signal=WORK_ORDER_SIGNAL,
                        start_signal_args=[order], result_type=AgentLoopResult))
                except Exception as exc:  # noqa: BLE001
                    result.errors.append(f"start {wid}: {type(exc).__name__}: {exc}"[:200])

        before = cpu.snapshot()
        t0 = now()
        await asyncio.gather(*(starter() for _ in range(concurrency)))
        result.starts, result.start_seconds = len(handles), now() - t0
        log(f"  naive: {len(handles)} workflows started in {result.start_seconds:.2f}s "
            f"({len(handles) / max(result.start_seconds, 1e-9):.1f}/s)")
        try:
            outcomes = await asyncio.wait_for(
                asyncio.gather(*(h.result() for h in handles), return_exceptions=True), timeout)
        except TimeoutError:
            raise TimeoutError(f"naive runs not finished after {timeout:.0f}s") from None
        result.phase.seconds_to_finish = now() - t0
        for h, out in zip(handles, outcomes, strict=True):
            if isinstance(out, BaseException):
                result.errors.append(f"{h.id}: {type(out).__name__}: {out}"[:200])
                continue
            for o in out.orders:
                result.statuses[o.status] += 1
                result.steps += o.steps
        log(f"  naive: {len(handles)} runs finished {result.phase.seconds_to_finish:.1f}s after the first start "
            f"({dict(result.statuses)})")
        result.phase.cpu = cpu.since(before)
        every, _ = await agent_loops(client, len(intake_executions) + len(handles))
        result.phase.executions = every - intake_executions
        result.phase.model, result.phase.comments = await sim_state(http, ep)
    return result


def latency_ms(answers: list[Answer], category: str | None, pct: float) -> float:
    vals = [a.seconds for a in answers if a.error is None and (category is None or a.category == category)]
    return percentile(vals, pct) * 1000 if vals else float("nan")


def expected_workflow_ids(versions: list[WorkVersion]) -> set[str]:
    return {workflow_id_for(v.work_key) for v in versions}


__all__ = ["Answer", "CATEGORIES", "IntakeResult", "NaiveResult", "Phase", "intake_phase", "latency_ms",
           "naive_phase", "expected_workflow_ids"]
