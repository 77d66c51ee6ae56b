"""Peers bench: one duplicate storm sent to Sluicegate, naive Temporal and DBOS, side by side in one run.

    .venv/bin/python -m bench.peers_bench            # 1,000 deliveries for 50 PRs, 32 in flight, 3 rounds
    .venv/bin/python -m bench.peers_bench --quick    # verification run: 120 deliveries for 8 PRs, 1 round
    .venv/bin/python -m bench.peers_bench --json     # one JSON document on stdout

The storm is the duplicate-storm drill's (``drills._stream.build_stream``): signed GitHub
deliveries, one original per pull request, the rest exact redeliveries and same-version
duplicates, shuffled, ``--in-flight`` at once. Each peer gets the same storm shape on pull requests
of its own, in one run, after an untimed warm-up storm, the order rotating per round, on an idle stack each:

* **sluicegate** -- the real webhook API of a dev stack (capacity limits lifted, no worker);
* **naive** -- ``bench/_peer_front.py --peer naive``: same FastAPI + signature front, one
  signal-with-start per delivery, workflow id = work key@version (Temporal's id dedupe);
* **dbos** -- ``bench/_peer_front.py --peer dbos``: same front, ``SetWorkflowID(work key@version)``
  and ``DBOS.start_workflow_async`` on a SQLite system database (DBOS 3.4.0).
Every front runs uvicorn with the same settings (fairness: ``bench._peers.SERVER``, printed).

Counted per side: deliveries/s, p50/p95 (client-observed), forge requests (the forge simulator's per-
repository count), *runs started* (Sluicegate: admitted versions in the ledger and AgentLoop workflows in
Temporal; naive: NaiveReview executions in Temporal; DBOS: workflows in its system database and executions of
its one fake agent step) and model calls seen by the model simulator (0 everywhere: no agent runs here, so
runs started is the honest proxy for the model calls a review would make). Verification (exit 1): every
delivery answered below 300, and exactly one run started per unique (work key, version) on every side.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from pathlib import Path

import httpx

from bench import _e2e
from bench._common import BENCH_SCOPE, NO_CAPACITY_LIMITS, percentile
from bench._harness import BenchReport, config_of, finish, parser, stage
from bench._peers import CAPACITY, SERVER, measurement, runs_started, start_front, table
from drills._stream import build_stream, open_pulls, send_all
from sluicegate.devstack import DevStack, StackHttp, isolated_overrides

SIDES = ("sluicegate", "naive", "dbos")


def _log(line: str) -> None:
    print(line, flush=True)

def parse_args(argv: list[str] | None = None):
    p = parser(__doc__)
    p.add_argument("--deliveries", type=int, default=None, help="deliveries per storm (default 1000; quick 120)")
    p.add_argument("--pulls", type=int, default=None, help="pull requests per storm (default 50; quick 8)")
    p.add_argument("--in-flight", type=int, default=None, help="requests in flight (default 32; quick 16)")
    p.add_argument("--rounds", type=int, default=None, help="storms per side, order rotating (default 3; quick 1)")
    p.add_argument("--warmup", type=int, default=None, help="untimed deliveries per side first (default 100; quick 0)")
    p.add_argument("--redeliver-share", type=float, default=0.5, help="share of copies that are exact redeliveries")
    p.add_argument("--seed", type=int, default=9)
    a = p.parse_args(argv)
    a.deliveries = a.deliveries or (120 if a.quick else 1000)
    a.pulls = a.pulls or (8 if a.quick else 50)
    a.in_flight = a.in_flight or (16 if a.quick else 32)
    a.rounds = a.rounds or (1 if a.quick else 3)
    a.warmup = (0 if a.quick else 100) if a.warmup is None else a.warmup
    if not 0 < a.pulls <= a.deliveries or min(a.in_flight, a.rounds) < 1 or a.warmup < 0:
        p.error("need 0 < --pulls <= --deliveries, --in-flight and --rounds >= 1")
    return a


def _warm(side: str, a, stack: DevStack, web: StackHttp, fronts: dict) -> None:
    """An untimed storm first, so no side's first timed round pays its process's cold start."""
    stage(f"duplicate storm: warming {side} up ({a.warmup} deliveries, untimed)")
    pulls = open_pulls(web, f"acme/peers-{side}-warm", max(1, a.warmup // 20))
    stream = build_stream(stack.settings.sources["github"].secret, pulls, a.warmup, a.redeliver_share, a.seed)
    url = (f"{web.api}/webhooks/github" if side == "sluicegate" else f"{fronts[side]}/webhooks/github")
    asyncio.run(send_all(url, stream, a.in_flight))


def _storm(side: str, rnd: int, a, stack: DevStack, web: StackHttp, fronts: dict, tmp: Path) -> dict:
    repo = f"acme/peers-{side}-r{rnd}"
    pulls = open_pulls(web, repo, a.pulls)
    stream = build_stream(stack.settings.sources["github"].secret, pulls, a.deliveries, a.redeliver_share,
                          a.seed + rnd)
    url = (f"{web.api}/webhooks/github" if side == "sluicegate" else f"{fronts[side]}/webhooks/github")
    forge0, model0 = web.forge_reads(repo), web.model_stats()["calls"]
    steps0 = httpx.get(f"{fronts['dbos']}/_peer/stats", timeout=10).json()["runs"]
    meter = _e2e.CpuMeter(stack)
    settled = meter.settle(limit=5.0 if a.quick else 30.0)  # quick: verification, not speed
    cpu0 = meter.snapshot()
    t = time.perf_counter()
    answers = asyncio.run(send_all(url, stream, a.in_flight))
    seconds = time.perf_counter() - t
    cpu = {k: (v - cpu0[k]) * 1000 / len(stream) for k, v in meter.snapshot().items()}
    lat = [x for ans in answers for x in ans.latencies]
    bad = [ans.status for ans in answers if ans.status is None or ans.status >= 300]
    out = {"deliveries": len(stream), "unique_versions": len(pulls), "seconds": seconds,
           "deliveries_per_s": len(stream) / seconds, "p50_ms": percentile(lat, 50) * 1000,
           "p95_ms": percentile(lat, 95) * 1000, "not_2xx": len(bad),
           "forge_requests": web.forge_reads(repo) - forge0,
           "model_calls_seen": web.model_stats()["calls"] - model0,
           "cpu_ms_per_delivery": {k: round(v, 2) for k, v in cpu.items() if v > 0.005}, "settled_s": round(settled, 1)}
    out.update(runs_started(side, stack, pulls, tmp, fronts, steps0))
    _log(f"  round {rnd} {side:<10} {len(stream)} deliveries in {seconds:5.2f}s = {out['deliveries_per_s']:7.1f}/s "
         f"p95 {out['p95_ms']:6.0f} ms, runs started {out['runs_started']} for {len(pulls)} versions, "
         f"forge requests {out['forge_requests']}, not 2xx {len(bad)}, stack idle after {settled:.1f}s")
    return out


def _run(a) -> BenchReport:
    tmp = Path(_e2e.run_dir())
    rep = BenchReport("peers_bench", config_of(a))
    env = {**isolated_overrides(tmp), "SLUICEGATE_TELEMETRY_EXPORTER": "none", **BENCH_SCOPE, **NO_CAPACITY_LIMITS}
    stack = DevStack(env, headless=True, with_worker=False, log_dir=tmp / "logs")
    _log(f"peers bench{' (quick: verification, not speed)' if a.quick else ''}: {a.deliveries} deliveries for "
         f"{a.pulls} PRs, {a.in_flight} in flight, {a.rounds} round(s); capacity: {CAPACITY}; server: {SERVER}; tmp={tmp}")
    try:
        stage("peers bench: starting the dev stack and the peers")
        stack.start()
        fronts = {peer: start_front(stack, peer, tmp) for peer in ("naive", "dbos")}
        web = StackHttp(stack)
        results: dict[str, list[dict]] = {s: [] for s in SIDES}
        for side in SIDES if a.warmup else ():
            _warm(side, a, stack, web, fronts)
        for rnd in range(1, a.rounds + 1):
            order = SIDES[rnd - 1:] + SIDES[:rnd - 1]
            for side in order:
                stage(f"duplicate storm: round {rnd}/{a.rounds}, {side}")
                results[side].append(_storm(side, rnd, a, stack, web, fronts, tmp))
        peers = [(p, results[p]) for p in ("naive", "dbos")]
        for side in SIDES:
            rep.add(measurement(side, results[side], peers if side == "sluicegate" else None))
        table(rep)
    finally:
        stack.stop()
        if left := stack.leftover():
            rep.errors.append(f"processes still running after stop: {left}")
        if a.keep:
            _log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return rep


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    return finish(a, lambda: _run(a), "peers_bench")


if __name__ == "__main__":
    sys.exit(main())
