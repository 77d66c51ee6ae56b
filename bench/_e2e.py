"""Measurement 2: admitted deliveries per second end to end vs. bare signal-with-start.

Intake side: signed ``pull_request`` ``opened`` webhooks to ``POST /webhooks/github`` of the
real API process (dev stack, no worker), each for a distinct open pull request created
beforehand on the forge simulator; only 202 answers that say ``admitted`` count. Baseline:
``client.start_workflow("AgentLoop", ..., start_signal="work_order")`` from this process,
the admitter's own request (``TemporalAdmitter.start_request``: work order, search attributes,
priority and fairness key, summary, memo), unique ids, same concurrency, dev server and task queue. Second baseline, the *bare front*
(``bench/_e2e_front.py``): the same signed deliveries to a minimal FastAPI front that checks, parses and
makes one signal-with-start each; the three sides share rounds, order rotating. Nobody runs either side's workflows: the
stack's capacity limits are lifted (``CAPACITY``), so every delivery is admitted and the
measurement is about admission, not about slots freeing up (no worker drains). CPU meter and driver:
``bench/_e2e_cpu.py``; bare work orders and the verification: ``bench/_e2e_verify.py``.
"""

from __future__ import annotations

import tempfile
import uuid
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import httpx

from bench._common import BENCH_SCOPE, NO_CAPACITY_LIMITS, Comparison, SideRound, head_sha, signed_pull_request
from bench import _e2e_front
from bench._e2e_cpu import CpuMeter, drive, process_cpu
from bench._e2e_verify import bare_admission, verify
from bench._forge_reads import forge_counters, forge_reads_between
from sluicegate.devstack import DevStack, isolated_overrides
from sluicegate.temporal.admitter import TemporalAdmitter
from sluicegate.temporal.client import connect

__all__ = ["CAPACITY", "CpuMeter", "measure", "process_cpu", "run_dir", "start_stack"]
CAPACITY = ("limits lifted (global, per-repository and tenant limits, rate and burst all 1,000,000), no worker: "
            "admitted workflows wait in the task queue, as the bare starts do")
"""How capacity is configured for this measurement; printed and in the JSON."""


def start_stack(run_dir: Path) -> DevStack:
    """The real stack without a worker: workflows are admitted and then just wait in the queue."""
    env = {**isolated_overrides(run_dir), "SLUICEGATE_TELEMETRY_EXPORTER": "none", **BENCH_SCOPE, **NO_CAPACITY_LIMITS}
    return DevStack(env, headless=True, with_worker=False, log_dir=run_dir / "logs").start()


def run_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="sluicegate-bench-"))


async def measure(stack: DevStack, rounds: int, per_round: int, warmup: int, concurrency: int,
                  log: Callable[[str], None]) -> tuple[Comparison, tuple[dict[str, dict[str, float]], Comparison]]:
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
    front, front_outcomes = _e2e_front.comparison(0.9, 1.2), Counter[str]()
    front_url = _e2e_front.start(stack)  # before the CPU meter is made: its process is metered too

    forge = f"http://{s.simulators.forge.host}:{s.simulators.forge.port}"
    api = f"http://{s.webhook_api.host}:{s.webhook_api.port}/webhooks/github"
    # One client per target, sized at the concurrency: httpcore's pool checks every idle connection it holds
    # (a poll() each) whenever a request ends, so one pool shared by every target cost the load generator
    # ~11 ms of CPU per intake delivery at 64 in flight (py-spy, 2026-12-07): CPU the processes measured lost.
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    shas = [head_sha(run, n) for n in range(1, total + 1)]
    async with httpx.AsyncClient(timeout=60, limits=limits) as setup:
        # Untimed set-up: one open pull request per delivery, and every request pre-built and pre-signed.
        async def create(n: int) -> bool:
            r = await setup.post(f"{forge}/_sim/pulls/{owner}/{repo}/{n}", json={"head_sha": shas[n - 1], "state": "open"})
            r.raise_for_status()
            return True

        await drive(list(range(1, total + 1)), concurrency, create)
    async with httpx.AsyncClient(timeout=60, limits=limits) as http, \
            httpx.AsyncClient(timeout=60, limits=limits) as front_http:
        deliveries = [signed_pull_request(secret, owner, repo, n, shas[n - 1]) for n in range(1, total + 1)]
        fronted = [signed_pull_request(secret, _e2e_front.OWNER, repo, n, shas[n - 1]) for n in range(1, total + 1)]
        client = await connect(s)
        admitter = TemporalAdmitter(client, s)
        starts = [admitter.start_request(bare_admission(s, secret, bare_owner, repo, n, shas[n - 1]))
                  for n in range(1, total + 1)]
        log(f"  set-up: {total} open pull requests on the forge simulator, {total} signed deliveries, "
            f"{total} bare start requests (the admitter's own), {total} signed deliveries for the bare front")

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

        async def start(request: dict[str, Any]) -> bool:
            try:
                await client.start_workflow(**request)
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
                result = await drive(chunk, concurrency, call)
                meter.record(name, before, result.ops)
                return result
            return run_round

        counters = forge_counters(forge)  # untimed; only intake touches the forge (no worker runs)
        await drive(deliveries[:warmup], concurrency, post)
        await drive(starts[:warmup], concurrency, start)
        post_front = _e2e_front.poster(front_http, front_url, front_outcomes)
        await drive(fronted[:warmup], concurrency, post_front)
        await _e2e_front.interleave3(rounds, {"intake": side("intake", deliveries, post),
                                              "baseline": side("baseline", starts, start),
                                              "front": side("front", fronted, post_front)}, cmp, front, log)
        cmp.forge_reads = forge_reads_between(counters, forge_counters(forge), total, total)
        cmp.checks.append(cmp.forge_reads.line() + " (one new version per delivery)")

    cmp.checks.append("answers: " + ", ".join(f"{k} x{v}" for k, v in sorted(outcomes.items())))
    await verify(cmp, s, client, f"{tenant}/github:{owner}/{repo}#", total, outcomes)
    await _e2e_front.verify(front, client, total, front_outcomes)
    return cmp, ({side: meter.per_op(side) for side in ("intake", "baseline", "front")}, front)
