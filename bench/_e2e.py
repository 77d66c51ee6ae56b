"""Measurement 2: admitted deliveries per second end to end vs. bare signal-with-start.

Intake side: signed ``pull_request`` ``opened`` webhooks to ``POST /webhooks/github`` of the
real API process (dev stack, no worker), each for a distinct open pull request created
beforehand on the forge simulator; only 202 answers that say ``admitted`` count. Baseline:
``client.start_workflow("AgentLoop", ..., start_signal="work_order")`` from this process,
with the same work-order payload and search attributes the admitter sends, unique ids,
same concurrency, same dev server and task queue. Nobody runs either side's workflows: the
stack's capacity limits are lifted (``CAPACITY``), so every delivery is admitted and the
measurement is about admission, not about slots freeing up (no worker drains).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Awaitable, Callable

import httpx
from sqlalchemy import func, select

import ledger
from bench._forge_reads import forge_counters, forge_reads_between
from bench._common import (BENCH_SCOPE, NO_CAPACITY_LIMITS, BenchError, Comparison, SideRound, head_sha, interleave,
                           now, signed_pull_request)
from intake.decision import IntakeDecision, Outcome, Reason
from intake.github import parse_github_delivery
from intake.identity import workflow_id_for
from intake.ports import Admission
from sluicegate.temporal.admitter import work_order_for
from ledger import Receipt, WorkVersion
from sluicegate.devstack import DevStack, isolated_overrides
from sluicegate.temporal.client import connect
from workflows import search_attributes as sa
from workflows.contracts import AGENT_WORKFLOW, WORK_ORDER_SIGNAL, AgentLoopStart

ROOT = Path(__file__).resolve().parents[1]
CPU_TICK = os.sysconf("SC_CLK_TCK")
CAPACITY = ("limits lifted (global, per-repository and tenant limits, rate and burst all 1,000,000), no worker: "
            "admitted workflows wait in the task queue, as the bare starts do")
"""How capacity is configured for this measurement; printed and in the JSON."""


def start_stack(run_dir: Path) -> DevStack:
    """The real stack without a worker: workflows are admitted and then just wait in the queue."""
    env = {**isolated_overrides(run_dir), "SLUICEGATE_TELEMETRY_EXPORTER": "none", **BENCH_SCOPE, **NO_CAPACITY_LIMITS}
    return DevStack(env, headless=True, with_worker=False, log_dir=run_dir / "logs").start()


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of one process (all its threads)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CPU_TICK


class CpuMeter:
    """CPU seconds used per stack process (and this process) while one side ran."""

    def __init__(self, stack: DevStack) -> None:
        self.pids = {name: p.proc.pid for name, p in stack.processes.items() if p.proc is not None}
        self.pids["bench"] = os.getpid()
        self.samples: dict[str, list[dict[str, float]]] = {"intake": [], "baseline": []}

    def snapshot(self) -> dict[str, float]:
        return {name: process_cpu(pid) for name, pid in self.pids.items()}

    def record(self, side: str, before: dict[str, float], ops: int) -> None:
        after = self.snapshot()
        if ops:
            self.samples[side].append({k: (after[k] - before[k]) * 1000 / ops for k in after})

    def per_op(self, side: str) -> dict[str, float]:
        """Median over rounds of CPU milliseconds per operation, by process."""
        rows = self.samples[side]
        return {k: sorted(r[k] for r in rows)[len(rows) // 2] for k in (rows[0] if rows else {})}


async def _drive(items: list, concurrency: int, call: Callable[[Any], Awaitable[bool]]) -> SideRound:
    """Run ``call`` over ``items`` with ``concurrency`` in flight; ops = calls that returned True."""
    it = iter(items)
    ok, lat = 0, []

    async def worker() -> None:
        nonlocal ok
        for item in it:
            t = now()
            good = await call(item)
            lat.append(now() - t)
            ok += good

    start = now()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return SideRound(ok, now() - start, lat)


async def measure(stack: DevStack, rounds: int, per_round: int, warmup: int, concurrency: int,
                  log: Callable[[str], None]) -> tuple[Comparison, dict[str, dict[str, float]]]:
    s = stack.settings
    run = uuid.uuid4().hex[:8]
    owner, repo, bare_owner = "bench", f"e2e-{run}", "bench-bare"
    secret, tenant = s.sources["github"].secret, s.sources["github"].tenant
    total = warmup + rounds * per_round
    cmp = Comparison("end-to-end admissions", target=0.9, unit="admits/s", base_unit="starts/s", capacity=CAPACITY)
    c = s.capacity
    cmp.checks.append(f"capacity in effect in the stack: global {c.global_active_runs}, per repository "
                      f"{c.concurrency_limit}, tenant max_active_runs {c.tenant_defaults.max_active_runs}, "
                      f"rate {c.tenant_defaults.rate_per_second}/s; worker: "
                      f"{'running' if stack.processes.get('worker') else 'none'}")
    outcomes: Counter[str] = Counter()

    forge = f"http://{s.simulators.forge.host}:{s.simulators.forge.port}"
    api = f"http://{s.webhook_api.host}:{s.webhook_api.port}/webhooks/github"
    limits = httpx.Limits(max_connections=concurrency * 2, max_keepalive_connections=concurrency * 2)
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:
        # Untimed set-up: one open pull request per delivery, and every request pre-built and pre-signed.
        shas = [head_sha(run, n) for n in range(1, total + 1)]

        async def create(n: int) -> bool:
            r = await http.post(f"{forge}/_sim/pulls/{owner}/{repo}/{n}", json={"head_sha": shas[n - 1], "state": "open"})
            r.raise_for_status()
            return True

        await _drive(list(range(1, total + 1)), concurrency, create)
        deliveries = [signed_pull_request(secret, owner, repo, n, shas[n - 1]) for n in range(1, total + 1)]
        starts = [_bare_start(s, secret, bare_owner, repo, n, shas[n - 1]) for n in range(1, total + 1)]
        log(f"  set-up: {total} open pull requests on the forge simulator, {total} signed deliveries, "
            f"{total} bare work orders")

        client = await connect(s)
        tq = s.temporal.task_queue

        async def post(item: tuple[dict[str, str], bytes]) -> bool:
            headers, body = item
            try:
                r = await http.post(api, content=body, headers=headers)
                answer = r.json()
                key = f"{r.status_code} {answer.get('outcome')}/{answer.get('reason')}"
                admitted = r.status_code == 202 and answer.get("admitted") is True
                outcomes[key + ("" if admitted or r.status_code != 202 else " (not admitted)")] += 1
                return admitted
            except Exception as exc:  # noqa: BLE001 - counted and reported as an error
                outcomes[f"intake error {type(exc).__name__}"] += 1
                return False

        async def start(item: tuple[str, AgentLoopStart, Any, Any]) -> bool:
            wid, arg, order, attrs = item
            try:
                await client.start_workflow(AGENT_WORKFLOW, arg, id=wid, task_queue=tq, start_signal=WORK_ORDER_SIGNAL,
                                            start_signal_args=[order], search_attributes=attrs)
                outcomes["bare started"] += 1
                return True
            except Exception as exc:  # noqa: BLE001
                outcomes[f"bare error {type(exc).__name__}"] += 1
                return False

        meter = CpuMeter(stack)

        def side(name: str, items: list, call):
            async def run_round(n: int) -> SideRound:
                before = meter.snapshot()
                chunk = items[warmup + n * per_round: warmup + (n + 1) * per_round]
                result = await _drive(chunk, concurrency, call)
                meter.record(name, before, result.ops)
                return result
            return run_round

        counters = forge_counters(forge)  # untimed; only intake touches the forge (no worker runs)
        await _drive(deliveries[:warmup], concurrency, post)
        await _drive(starts[:warmup], concurrency, start)
        await interleave(rounds, side("intake", deliveries, post), side("baseline", starts, start), cmp, log)
        cmp.forge_reads = forge_reads_between(counters, forge_counters(forge), total, total)
        cmp.checks.append(cmp.forge_reads.line() + " (one new version per delivery)")

    cmp.checks.append("answers: " + ", ".join(f"{k} x{v}" for k, v in sorted(outcomes.items())))
    await _verify(cmp, s, client, f"{tenant}/github:{owner}/{repo}#", total, outcomes)
    return cmp, {side: meter.per_op(side) for side in ("intake", "baseline")}


def _bare_start(settings, secret: str, owner: str, repo: str, n: int, sha: str):
    """The same workflow id scheme, argument, work order and search attributes the admitter sends."""
    headers, body = signed_pull_request(secret, owner, repo, n, sha)
    parsed = parse_github_delivery(headers, body, source="github", tenant=settings.sources["github"].tenant,
                                   secrets=[secret], received_at=datetime.now(UTC))
    cand = parsed.candidate
    decision = IntakeDecision(Outcome.ACCEPT, str(Reason.ADMITTED), "bench", uuid.uuid4().hex, cand.work_key,
                              sha, generation=1)
    order = work_order_for(Admission(decision, parsed.envelope, cand), settings)
    attrs = sa.at_admission(order.work_key, order.tenant, order.trigger_kind, order.input_version)
    return workflow_id_for(order.work_key), AgentLoopStart(order.work_key, order.tenant), order, attrs


async def _verify(cmp: Comparison, settings, client, key_prefix: str, sent: int, outcomes: Counter) -> None:
    admitted = outcomes.get("202 accept/admitted", 0)
    started = outcomes.get("bare started", 0)
    engine = ledger.make_engine(settings.ledger_url())
    try:
        with engine.connect() as conn:
            ours = Receipt.work_key.like(key_prefix + "%")
            accepts = conn.execute(select(func.count()).select_from(Receipt).where(
                ours, Receipt.outcome == str(Outcome.ACCEPT))).scalar_one()
            with_wf = conn.execute(select(func.count()).select_from(Receipt).where(
                ours, Receipt.outcome == str(Outcome.ACCEPT), Receipt.workflow_id.is_not(None))).scalar_one()
            others = conn.execute(select(func.count()).select_from(Receipt).where(
                ours, Receipt.outcome != str(Outcome.ACCEPT))).scalar_one()
            versions = conn.execute(select(func.count()).select_from(WorkVersion).where(
                WorkVersion.work_key.like(key_prefix + "%"), WorkVersion.status == "admitted")).scalar_one()
    finally:
        engine.dispose()
    running = await _running_workflows(client, admitted + started)
    cmp.checks.append(f"ledger: {accepts} accept receipts ({with_wf} with a workflow id, {others} other outcomes), "
                      f"{versions} work versions admitted; expected {admitted} (of {sent} sent)")
    cmp.checks.append(f"temporal: {running} AgentLoop workflows running; expected {admitted} admitted + "
                      f"{started} bare = {admitted + started}")
    problems = [f"{k} x{v}" for k, v in outcomes.items() if k not in ("202 accept/admitted", "bare started")]
    if admitted != sent or started != sent:
        problems.append(f"{admitted} admitted and {started} bare starts of {sent} each")
    if not accepts == with_wf == versions == admitted or others:
        problems.append("ledger counts do not match the admitted answers")
    if running != admitted + started:
        problems.append(f"{running} running workflows, expected {admitted + started}")
    if problems:
        raise BenchError("verification failed: " + "; ".join(problems))


async def _running_workflows(client, expected: int, timeout: float = 30.0) -> int:
    """Running AgentLoop workflows on the (fresh) dev server; visibility lags, so poll a while."""
    query = f'WorkflowType = "{AGENT_WORKFLOW}" AND ExecutionStatus = "Running"'
    deadline = now() + timeout
    while True:
        count = (await client.count_workflows(query)).count
        if count == expected or now() > deadline:
            return count
        await asyncio.sleep(0.5)


def run_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="sluicegate-bench-"))
