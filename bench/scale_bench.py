"""Scale-out curve on PostgreSQL: deliveries/s and p95 at 1, 2 and 4 API processes with 1-2 workers.

    .venv/bin/python -m bench.scale_bench            # 10,000 deliveries per step, 200 PRs, 64 in flight
    .venv/bin/python -m bench.scale_bench --quick    # verification: 100 deliveries per step, 6 PRs, 1x1 and 2x2 (~50 s)
    .venv/bin/python -m bench.scale_bench --deliveries 2000 --pulls 40   # a moderate run

One dev stack (Temporal dev server, simulators) with its ledger on a private PostgreSQL database
(created on ``--postgres-url``, dropped at the end), capacity limits lifted. Steps, in order, each
adding processes to the previous one: 1 API + 1 worker, 2 APIs + 1 worker, 4 APIs + 1 worker,
4 APIs + 2 workers (``--steps``). Every API is ``python -m webhook_api`` on its own loopback port,
all on the one ledger and Temporal; the client sends a duplicate storm (``drills._stream``: one
original per PR, the rest redeliveries and same-version duplicates, shuffled) round-robin over
the APIs, ``--in-flight`` at once, one connection per delivery. The workers drain what is admitted
(one review per unique version, model and forge simulators); a step waits for its runs to finish
before the next starts. Bounded: ``--step-timeout`` seconds of sending per step (what is not sent
by then is counted as not sent and fails the verification), loopback only.

Per step: deliveries/s over the send window, p50/p95, CPU seconds per process kind over the step
and the machine's share used (of ``os.cpu_count()`` cores). Verification (exit 1): every delivery
sent and answered below 300; exactly one accept per unique version; every version finished ``done``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

import httpx

from bench import _e2e
from bench._common import BENCH_SCOPE, NO_CAPACITY_LIMITS, percentile
from bench._dup import postgres_database
from bench._harness import BenchReport, Measurement, config_of, finish, parser, stage
from drills._stream import build_stream, open_pulls, wait_finished
from sluicegate.devstack import DevStack, StackHttp, isolated_overrides
from sluicegate.devstack._processes import ManagedProcess, free_port

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/postgres"
CAPACITY = "limits lifted (NO_CAPACITY_LIMITS); the step's workers drain every admitted run before the next step"


def _log(line: str) -> None:
    print(line, flush=True)


def parse_args(argv: list[str] | None = None):
    p = parser(__doc__)
    p.add_argument("--deliveries", type=int, default=None, help="deliveries per step (default 10000; quick 100)")
    p.add_argument("--pulls", type=int, default=None, help="pull requests per step (default 200; quick 6)")
    p.add_argument("--in-flight", type=int, default=None, help="requests in flight (default 64; quick 16)")
    p.add_argument("--steps", default=None, help="APIxWORKERS,... (default 1x1,2x1,4x1,4x2; quick 1x1,2x2)")
    p.add_argument("--step-timeout", type=float, default=600.0, help="seconds of sending per step, at most")
    p.add_argument("--postgres-url", default=os.environ.get("SLUICEGATE_BENCH_POSTGRES_URL", DEFAULT_PG),
                   help="admin URL; a private database is created and dropped (default %(default)s)")
    p.add_argument("--seed", type=int, default=11)
    a = p.parse_args(argv)
    a.deliveries = a.deliveries or (100 if a.quick else 10000)
    a.pulls = a.pulls or (6 if a.quick else 200)
    a.in_flight = a.in_flight or (16 if a.quick else 64)
    a.steps = a.steps or ("1x1,2x2" if a.quick else "1x1,2x1,4x1,4x2")
    try:
        a.plan = [tuple(int(x) for x in s.split("x")) for s in a.steps.split(",")]
    except ValueError:
        p.error("--steps is APIxWORKERS,... e.g. 1x1,2x1")
    if any(not (1 <= n <= 4 and 1 <= w <= 2) for n, w in a.plan) or not 0 < a.pulls <= a.deliveries:
        p.error("steps: 1-4 APIs, 1-2 workers; need 0 < --pulls <= --deliveries")
    return a


class Processes:
    """The APIs and workers beyond the stack's first API: started as steps need them, stopped with the stack."""

    def __init__(self, stack: DevStack) -> None:
        self.stack = stack
        s = stack.settings
        self.apis = [f"http://{s.webhook_api.host}:{s.webhook_api.port}/webhooks/github"]
        self.workers = 0

    def _start(self, name: str, argv: list[str], env: dict[str, str], ready) -> ManagedProcess:
        proc = ManagedProcess(name, argv, self.stack.log_dir / f"{name}.log", {**self.stack.env, **env},
                              self.stack.settings.base_dir)
        self.stack.processes[name] = proc
        proc.start()
        proc.wait_until(ready, 60)
        return proc

    def grow(self, apis: int, workers: int) -> None:
        while len(self.apis) < apis:
            port = free_port()
            self._start(f"webhook-api-{len(self.apis) + 1}", [sys.executable, "-m", "webhook_api"],
                        {"SLUICEGATE__WEBHOOK_API__PORT": str(port)}, lambda port=port: _ok(port))
            self.apis.append(f"http://127.0.0.1:{port}/webhooks/github")
        while self.workers < workers:
            self.workers += 1
            name = f"worker-{self.workers}"
            log = self.stack.log_dir / f"{name}.log"
            self._start(name, [sys.executable, str(self.stack.settings.base_dir / "worker.py")], {},
                        lambda log=log: log.exists() and b"worker polling" in log.read_bytes())


def _ok(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


async def _round_robin(urls: list[str], stream: list, in_flight: int, budget: float) -> tuple[list, float]:
    """Send every delivery, the i-th to ``urls[i % len(urls)]``; stop taking new ones after ``budget`` s.
    Returns (per delivery: (status or None, answer body, latency), wall seconds)."""
    out: list = [None] * len(stream)
    todo = iter(range(len(stream)))
    # One connection per delivery, as GitHub sends them: reusing a keep-alive connection races the
    # server closing it (a 2,000-delivery run lost 7 requests that way, answered by nobody).
    limits = httpx.Limits(max_connections=in_flight, max_keepalive_connections=0)
    start = time.perf_counter()
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:
        async def sender() -> None:
            for i in todo:
                if time.perf_counter() - start > budget:
                    return
                d, t = stream[i], time.perf_counter()
                try:
                    r = await http.post(urls[i % len(urls)], content=d.body, headers=d.headers)
                    out[i] = (r.status_code, r.json(), time.perf_counter() - t)
                except (httpx.HTTPError, ValueError) as exc:
                    out[i] = (None, {"error": type(exc).__name__}, time.perf_counter() - t)
        await asyncio.gather(*(sender() for _ in range(in_flight)))
    return out, time.perf_counter() - start


def _kind(name: str) -> str:
    return name.rsplit("-", 1)[0] if name.rsplit("-", 1)[-1].isdigit() else name


def _step(a, stack: DevStack, procs: Processes, web: StackHttp, n_api: int, n_workers: int,
          index: int) -> Measurement:
    name = f"{n_api} API x {n_workers} worker{'s' * (n_workers > 1)}"
    stage(f"scale-out {name}: starting processes")
    procs.grow(n_api, n_workers)
    pulls = open_pulls(web, f"acme/scale-{n_api}x{n_workers}", a.pulls)
    stream = build_stream(stack.settings.sources["github"].secret, pulls, a.deliveries, 0.5,
                          a.seed + index)  # delivery ids of its own per step
    meter = _e2e.CpuMeter(stack)
    cpu0 = meter.snapshot()
    stage(f"scale-out {name}: sending {len(stream)} deliveries")
    answers, seconds = asyncio.run(_round_robin(procs.apis[:n_api], stream, a.in_flight, a.step_timeout))
    cpu = {k: v - cpu0.get(k, 0.0) for k, v in meter.snapshot().items()}
    sent = [x for x in answers if x is not None]
    lat = [x[2] for x in sent]
    labels = Counter(f"{x[0]} {x[1].get('outcome')}/{x[1].get('reason')}" if x[0] else f"no answer: {x[1]['error']}"
                     for x in sent)
    accepts = Counter(stream[i].pull for i, x in enumerate(answers) if x and x[1].get("outcome") == "accept")
    t = time.perf_counter()
    stage(f"scale-out {name}: waiting for {len(pulls)} pull requests' runs")
    rows = wait_finished(stack, pulls, timeout=120 + 3 * a.pulls)
    drain = time.perf_counter() - t
    by_kind: Counter[str] = Counter()
    for k, v in cpu.items():
        by_kind[_kind(k)] += v
    cores = os.cpu_count() or 1
    figures = {"apis": n_api, "workers": n_workers, "deliveries": len(stream), "sent": len(sent),
               "unique_versions": len(pulls), "seconds": seconds, "deliveries_per_s": len(sent) / seconds,
               "p50_ms": percentile(lat, 50) * 1000, "p95_ms": percentile(lat, 95) * 1000,
               "answers": dict(labels), "drain_seconds_after_send": drain,
               "cpu_seconds_during_send": {k: round(v, 2) for k, v in by_kind.items() if v >= 0.01},
               "machine_cpu_share_during_send": sum(cpu.values()) / seconds / cores, "cores": cores,
               "load_average_1m_after_send": os.getloadavg()[0]}
    problems = []
    if len(sent) != len(stream):
        problems.append(f"{len(stream) - len(sent)} deliveries not sent within --step-timeout {a.step_timeout:.0f}s")
    bad = sum(n for k, n in labels.items() if not k.startswith(("200 ", "202 ")))
    if bad:
        problems.append(f"{bad} answers not 200/202")
    wrong = [p.number for p in pulls if accepts.get(p, 0) != 1]
    if wrong:
        problems.append(f"{len(wrong)} versions not accepted exactly once: {wrong[:5]}")
    not_done = [f"#{r.work_key.rsplit('#', 1)[-1]}={r.status}" for r in rows if r.status != "done"]
    if len(rows) != len(pulls) or not_done:
        problems.append(f"{len(rows)} of {len(pulls)} versions recorded, not done: {not_done[:5]}")
    _log(f"  {name}: {len(sent)} deliveries in {seconds:6.1f}s = {figures['deliveries_per_s']:7.1f}/s, "
         f"p50 {figures['p50_ms']:5.0f} ms, p95 {figures['p95_ms']:5.0f} ms, CPU share "
         f"{figures['machine_cpu_share_during_send']:.0%} of {cores} cores (load {os.getloadavg()[0]:.1f}), "
         f"drained in {drain:.1f}s "
         f"{'OK' if not problems else 'FAILED: ' + '; '.join(problems)}")
    _log(f"    CPU s during send: {figures['cpu_seconds_during_send']}")
    checks = [(f"{len(sent)}/{len(stream)} sent; answers {dict(labels)}; {sum(accepts.values())} accepts for "
               f"{len(pulls)} versions; {len(rows) - len(not_done)} versions done")] + problems
    return Measurement(f"scale-out: {name}", CAPACITY, figures, {}, not problems, checks)


def _run(a) -> BenchReport:
    rep = BenchReport("scale_bench", config_of(a))
    db = postgres_database(a.postgres_url)
    if isinstance(db, str):
        rep.add(Measurement("scale-out", CAPACITY, skipped=db))
        _log(f"SKIPPED: {db}")
        return rep
    url, drop = db
    tmp = Path(_e2e.run_dir())
    env = {**isolated_overrides(tmp), "SLUICEGATE_LEDGER_URL": url, "SLUICEGATE_TELEMETRY_EXPORTER": "none",
           **BENCH_SCOPE, **NO_CAPACITY_LIMITS}
    stack = DevStack(env, headless=True, with_worker=False, log_dir=tmp / "logs")
    _log(f"scale bench{' (quick: verification, not speed)' if a.quick else ''}: PostgreSQL ledger (private database), "
         f"{a.deliveries} deliveries for {a.pulls} PRs per step, {a.in_flight} in flight, steps {a.steps}; tmp={tmp}")
    try:
        stage("scale bench: starting the dev stack")
        stack.start()
        procs, web = Processes(stack), StackHttp(stack)
        for index, (n_api, n_workers) in enumerate(a.plan):
            rep.add(_step(a, stack, procs, web, n_api, n_workers, index))
        base = rep.measurements[0].figures["deliveries_per_s"] if rep.measurements else 0
        for m in rep.measurements:
            m.ratios = {"throughput_vs_first_step": m.figures["deliveries_per_s"] / base if base else float("nan")}
        _log("curve (deliveries/s relative to the first step): " + ", ".join(
            f"{m.name.split(': ')[1]} {m.ratios['throughput_vs_first_step']:.2f}" for m in rep.measurements))
    finally:
        stack.stop()
        if stack.leftover():
            rep.errors.append(f"processes still running after stop: {stack.leftover()}")
        drop()
        _log("  dropped the private PostgreSQL database")
        if a.keep:
            _log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return rep


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    return finish(a, lambda: _run(a), "scale_bench")


if __name__ == "__main__":
    sys.exit(main())
