"""The scale-out bench's steps: the API and worker processes each step adds, the round-robin storm,
and one step's measurement (deliveries/s, p50/p95, CPU per process kind, the verification). Entry
point and options: ``bench/scale_bench.py``; CPU outside our processes: ``bench/_host_cpu.py``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections import Counter

import httpx

from bench import _e2e
from bench._common import percentile
from bench._harness import Measurement, stage
from bench._host_cpu import backend_cpu, backend_seconds, busy_share, machine_ticks
from drills._stream import build_stream, open_pulls, wait_finished
from sluicegate.devstack import DevStack, StackHttp
from sluicegate.devstack._processes import ManagedProcess, free_port

CAPACITY = "limits lifted (NO_CAPACITY_LIMITS); the step's workers drain every admitted run before the next step"


def _log(line: str) -> None:
    print(line, flush=True)


class Processes:
    """The APIs and workers beyond the stack's first API: started as steps need them, stopped with the stack."""

    def __init__(self, stack: DevStack) -> None:
        self.stack = stack
        self.apis = [f"http://{stack.settings.webhook_api.host}:{stack.settings.webhook_api.port}/webhooks/github"]
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


async def round_robin(urls: list[str], stream: list, in_flight: int, budget: float) -> tuple[list, float]:
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


def step(a, stack: DevStack, procs: Processes, web: StackHttp, n_api: int, n_workers: int,
         index: int) -> Measurement:
    name = f"{n_api} API x {n_workers} worker{'s' * (n_workers > 1)}"
    stage(f"scale-out {name}: starting processes")
    procs.grow(n_api, n_workers)
    pulls = open_pulls(web, f"acme/scale-{n_api}x{n_workers}", a.pulls)
    stream = build_stream(stack.settings.sources["github"].secret, pulls, a.deliveries, 0.5,
                          a.seed + index)  # delivery ids of its own per step
    meter, ledger_url = _e2e.CpuMeter(stack), stack.env["SLUICEGATE_LEDGER_URL"]
    cpu0, pg0, machine0 = meter.snapshot(), backend_cpu(ledger_url), machine_ticks()
    stage(f"scale-out {name}: sending {len(stream)} deliveries")
    answers, seconds = asyncio.run(round_robin(procs.apis[:n_api], stream, a.in_flight, a.step_timeout))
    cpu = {k: v - cpu0.get(k, 0.0) for k, v in meter.snapshot().items()}
    cpu["postgres"] = backend_seconds(pg0, backend_cpu(ledger_url))  # the backends serving the ledger
    machine = busy_share(machine0, machine_ticks())
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
        by_kind[k.rsplit("-", 1)[0] if k.rsplit("-", 1)[-1].isdigit() else k] += v  # webhook-api-2: webhook-api
    cores = os.cpu_count() or 1
    figures = {"apis": n_api, "workers": n_workers, "deliveries": len(stream), "sent": len(sent),
               "unique_versions": len(pulls), "seconds": seconds, "deliveries_per_s": len(sent) / seconds,
               "p50_ms": percentile(lat, 50) * 1000, "p95_ms": percentile(lat, 95) * 1000,
               "answers": dict(labels), "drain_seconds_after_send": drain,
               "cpu_seconds_during_send": {k: round(v, 2) for k, v in by_kind.items() if v >= 0.01},
               "machine_cpu_share_during_send": sum(cpu.values()) / seconds / cores, "cores": cores,
               "machine_busy_share_during_send": machine, "load_average_1m_after_send": os.getloadavg()[0]}
    not_done = [f"#{r.work_key.rsplit('#', 1)[-1]}={r.status}" for r in rows if r.status != "done"]
    problems = _problems(a, stream, sent, labels, [p.number for p in pulls if accepts.get(p, 0) != 1],
                         (len(rows), len(pulls), not_done))
    _log(f"  {name}: {len(sent)} deliveries in {seconds:6.1f}s = {figures['deliveries_per_s']:7.1f}/s, "
         f"p50 {figures['p50_ms']:5.0f} ms, p95 {figures['p95_ms']:5.0f} ms, CPU share (ours, ledger backends "
         f"included) {figures['machine_cpu_share_during_send']:.0%} of {cores} cores, machine busy {machine:.0%} "
         f"(load {os.getloadavg()[0]:.1f}), drained in {drain:.1f}s "
         f"{'OK' if not problems else 'FAILED: ' + '; '.join(problems)}")
    _log(f"    CPU s during send: {figures['cpu_seconds_during_send']}")
    checks = [(f"{len(sent)}/{len(stream)} sent; answers {dict(labels)}; {sum(accepts.values())} accepts for "
               f"{len(pulls)} versions; {len(rows) - len(not_done)} versions done")] + problems
    return Measurement(f"scale-out: {name}", CAPACITY, figures, {}, not problems, checks)


def _problems(a, stream: list, sent: list, labels: Counter, wrong: list[int], done: tuple) -> list[str]:
    """The verification: every delivery sent and answered 200/202, one accept per version, all done."""
    rows, pulls, not_done = done
    bad = sum(n for k, n in labels.items() if not k.startswith(("200 ", "202 ")))
    return ([f"{len(stream) - len(sent)} deliveries not sent within --step-timeout {a.step_timeout:.0f}s"]
            * (len(sent) != len(stream)) + [f"{bad} answers not 200/202"] * bool(bad)
            + [f"{len(wrong)} versions not accepted exactly once: {wrong[:5]}"] * bool(wrong)
            + [f"{rows} of {pulls} versions recorded, not done: {not_done[:5]}"] * (rows != pulls or bool(not_done)))
