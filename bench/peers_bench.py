"""Peers bench: one duplicate storm sent to Sluicegate, naive Temporal and DBOS, side by side in one run.

    .venv/bin/python -m bench.peers_bench            # 1,000 deliveries for 50 PRs, 32 in flight, 2 rounds
    .venv/bin/python -m bench.peers_bench --quick    # verification run: 120 deliveries for 8 PRs, 1 round
    .venv/bin/python -m bench.peers_bench --json     # one JSON document on stdout

The storm is the duplicate-storm drill's (``drills._stream.build_stream``): signed GitHub
deliveries, one original per pull request, the rest exact redeliveries and same-version
duplicates, shuffled, ``--in-flight`` at once. Each peer gets the same storm shape on pull
requests of its own (so no peer sees another's state), in one run, the order rotating per round:

* **sluicegate** -- the real webhook API of a dev stack (capacity limits lifted, no worker);
* **naive** -- ``bench/_peer_front.py --peer naive``: same FastAPI + signature front, one
  signal-with-start per delivery, workflow id = work key@version (Temporal's id dedupe);
* **dbos** -- ``bench/_peer_front.py --peer dbos``: same front, ``SetWorkflowID(work key@version)``
  and ``DBOS.start_workflow_async`` on a SQLite system database (DBOS 3.4.0).

Counted per side: deliveries/s, p50/p95 (client-observed), forge requests (the forge simulator's
per-repository count), *runs started* (Sluicegate: admitted versions in the ledger and AgentLoop
workflows in Temporal; naive: NaiveReview executions in Temporal; DBOS: workflows in its system
database and executions of its one fake agent step) and model calls seen by the model simulator
(0 everywhere: no agent runs here, so runs started is the honest proxy for the model calls a
review would make). Verification (exit 1): every delivery answered below 300, and exactly one run
started per unique (work key, version) on every side.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import sys
import time
from pathlib import Path

import httpx

from bench import _e2e
from bench._common import BENCH_SCOPE, NO_CAPACITY_LIMITS, percentile
from bench._harness import BenchReport, Measurement, config_of, finish, parser, stage
from drills._stream import Pull, build_stream, open_pulls, send_all
from intake.identity import workflow_id_for
from ledger import Receipt, WorkVersion, make_engine
from sluicegate.devstack import DevStack, StackHttp, isolated_overrides
from sluicegate.devstack._processes import ManagedProcess, free_port
from sluicegate.temporal.client import connect
from sqlmodel import Session, select
from workflows.contracts import AGENT_WORKFLOW

from bench._peer_front import NAIVE_WORKFLOW

SIDES = ("sluicegate", "naive", "dbos")
CAPACITY = ("limits lifted (NO_CAPACITY_LIMITS), no worker: Sluicegate's admitted runs and naive Temporal's "
            "runs wait in their task queues; DBOS runs its one-step workflow in the front process at once")


def _log(line: str) -> None:
    print(line, flush=True)


def parse_args(argv: list[str] | None = None):
    p = parser(__doc__)
    p.add_argument("--deliveries", type=int, default=None, help="deliveries per storm (default 1000; quick 120)")
    p.add_argument("--pulls", type=int, default=None, help="pull requests per storm (default 50; quick 8)")
    p.add_argument("--in-flight", type=int, default=None, help="requests in flight (default 32; quick 16)")
    p.add_argument("--rounds", type=int, default=None, help="storms per side, order rotating (default 2; quick 1)")
    p.add_argument("--redeliver-share", type=float, default=0.5, help="share of copies that are exact redeliveries")
    p.add_argument("--seed", type=int, default=9)
    a = p.parse_args(argv)
    a.deliveries = a.deliveries or (120 if a.quick else 1000)
    a.pulls = a.pulls or (8 if a.quick else 50)
    a.in_flight = a.in_flight or (16 if a.quick else 32)
    a.rounds = a.rounds or (1 if a.quick else 2)
    if not 0 < a.pulls <= a.deliveries or min(a.in_flight, a.rounds) < 1:
        p.error("need 0 < --pulls <= --deliveries, --in-flight and --rounds >= 1")
    return a


def _front(stack: DevStack, peer: str, tmp: Path) -> str:
    port = free_port()
    argv = [sys.executable, "-m", "bench._peer_front", "--peer", peer, "--port", str(port),
            "--dbos-db", str(tmp / "dbos-system.sqlite")]
    proc = ManagedProcess(f"{peer}-front", argv, stack.log_dir / f"{peer}-front.log", stack.env,
                          stack.settings.base_dir)
    stack.processes[proc.name] = proc  # stopped with the stack, its CPU metered with it
    proc.start()
    base = f"http://127.0.0.1:{port}"
    proc.wait_until(lambda: _ok(f"{base}/healthz"), 60)
    return base


def _ok(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


async def _temporal_runs(stack: DevStack, workflow_type: str, ids: set[str], timeout: float = 30.0) -> int:
    """Executions of ``workflow_type`` whose id is in ``ids`` (visibility lags: poll until it settles)."""
    client = await connect(stack.settings)
    deadline, last = time.monotonic() + timeout, -1
    while True:
        n = 0
        async for wf in client.list_workflows(f'WorkflowType = "{workflow_type}"'):
            n += wf.id in ids
        if n == len(ids) or (n == last and time.monotonic() > deadline - timeout / 2) or time.monotonic() > deadline:
            return n
        last = n
        await asyncio.sleep(0.5)


def _dbos_runs(tmp: Path, ids: set[str], front: str, before: int, timeout: float = 30.0) -> tuple[int, int]:
    """(workflows in DBOS's system database with these ids, fake agent steps run since ``before``)."""
    deadline = time.monotonic() + timeout
    while True:
        steps = httpx.get(f"{front}/_peer/stats", timeout=10).json()["runs"] - before
        if steps >= len(ids) or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    with sqlite3.connect(tmp / "dbos-system.sqlite") as db:
        rows = {r[0] for r in db.execute("SELECT workflow_uuid FROM workflow_status")}
    return len(rows & ids), steps


def _runs(side: str, stack: DevStack, pulls: list[Pull], tmp: Path, fronts: dict, steps_before: int) -> dict:
    versions = {f"{p.work_key}@{p.sha}" for p in pulls}
    if side == "sluicegate":
        engine = make_engine(stack.settings.ledger_url())
        keys = [p.work_key for p in pulls]
        with Session(engine) as s:
            rows = list(s.exec(select(WorkVersion).where(WorkVersion.work_key.in_(keys))))
            # Runs started = accept receipts (one per admission, each a work order signalled into the
            # run): WorkVersion has one row per version whatever happens, and a second admission of a
            # version is a signal into the open workflow, not a new execution, so neither can show it.
            accepts = list(s.exec(select(Receipt).where(Receipt.work_key.in_(keys), Receipt.outcome == "accept")))
        engine.dispose()
        wfs = asyncio.run(_temporal_runs(stack, AGENT_WORKFLOW, {workflow_id_for(p.work_key) for p in pulls}))
        return {"runs_started": len(accepts), "ledger_versions": len({(r.work_key, r.input_version) for r in rows}),
                "temporal_workflows": wfs}
    if side == "naive":
        return {"runs_started": asyncio.run(_temporal_runs(stack, NAIVE_WORKFLOW, versions))}
    wfs, steps = _dbos_runs(tmp, versions, fronts["dbos"], steps_before)
    return {"runs_started": wfs, "agent_steps_run": steps}


def _storm(side: str, rnd: int, a, stack: DevStack, web: StackHttp, fronts: dict, tmp: Path) -> dict:
    repo = f"acme/peers-{side}-r{rnd}"
    pulls = open_pulls(web, repo, a.pulls)
    stream = build_stream(stack.settings.sources["github"].secret, pulls, a.deliveries, a.redeliver_share,
                          a.seed + rnd)
    url = (f"{web.api}/webhooks/github" if side == "sluicegate" else f"{fronts[side]}/webhooks/github")
    forge0, model0 = web.forge_reads(repo), web.model_stats()["calls"]
    steps0 = httpx.get(f"{fronts['dbos']}/_peer/stats", timeout=10).json()["runs"]
    meter = _e2e.CpuMeter(stack)
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
           "cpu_ms_per_delivery": {k: round(v, 2) for k, v in cpu.items() if v > 0.005}}
    out.update(_runs(side, stack, pulls, tmp, fronts, steps0))
    _log(f"  round {rnd} {side:<10} {len(stream)} deliveries in {seconds:5.2f}s = {out['deliveries_per_s']:7.1f}/s "
         f"p95 {out['p95_ms']:6.0f} ms, runs started {out['runs_started']} for {len(pulls)} versions, "
         f"forge requests {out['forge_requests']}, not 2xx {len(bad)}")
    return out


def _median(rows: list[dict], key: str) -> float:
    vals = sorted(r[key] for r in rows)
    return vals[len(vals) // 2] if len(vals) % 2 else (vals[len(vals) // 2 - 1] + vals[len(vals) // 2]) / 2


def _measurement(side: str, rows: list[dict], base: list[dict] | None) -> Measurement:
    problems = [f"round {i + 1}: {r['not_2xx']} answers not 2xx" for i, r in enumerate(rows) if r["not_2xx"]]
    problems += [f"round {i + 1}: {r['runs_started']} runs started for {r['unique_versions']} unique versions"
                 for i, r in enumerate(rows) if r["runs_started"] != r["unique_versions"]]
    if side == "sluicegate":
        problems += [f"round {i + 1}: {r['temporal_workflows']} AgentLoop workflows for {r['unique_versions']}"
                     for i, r in enumerate(rows) if r["temporal_workflows"] != r["unique_versions"]]
    if side == "dbos":
        problems += [f"round {i + 1}: fake agent step ran {r['agent_steps_run']} times"
                     for i, r in enumerate(rows) if r["agent_steps_run"] != r["unique_versions"]]
    figures = {k: _median(rows, k) for k in ("deliveries_per_s", "p50_ms", "p95_ms")}
    figures.update({k: sum(r[k] for r in rows) for k in ("deliveries", "unique_versions", "runs_started",
                                                          "forge_requests", "model_calls_seen")})
    figures["forge_requests_per_unique_version"] = figures["forge_requests"] / figures["unique_versions"]
    figures["rounds"] = rows
    ratios = {}
    if base:  # Sluicegate over each peer, each the median of per-round figures
        for peer, prow in base:
            ratios[f"throughput_vs_{peer}"] = figures["deliveries_per_s"] / _median(prow, "deliveries_per_s")
            ratios[f"throughput_vs_{peer}_target_min"] = 1.0  # issue 11 item 5: faster than both peers
            ratios[f"p95_vs_{peer}"] = figures["p95_ms"] / _median(prow, "p95_ms")
        ratios["forge_requests_per_unique_version"] = figures["forge_requests_per_unique_version"]
        ratios["forge_requests_per_unique_version_target_max"] = 1.1  # issue 11 item 3
    checks = [(f"{figures['runs_started']} runs started for {figures['unique_versions']} unique versions "
               f"({figures['deliveries']} deliveries); model calls seen {figures['model_calls_seen']}")]
    return Measurement(f"duplicate storm: {side}", CAPACITY, figures, ratios, not problems,
                       checks + problems)


def _run(a) -> BenchReport:
    tmp = Path(_e2e.run_dir())
    rep = BenchReport("peers_bench", config_of(a))
    env = {**isolated_overrides(tmp), "SLUICEGATE_TELEMETRY_EXPORTER": "none", **BENCH_SCOPE, **NO_CAPACITY_LIMITS}
    stack = DevStack(env, headless=True, with_worker=False, log_dir=tmp / "logs")
    _log(f"peers bench{' (quick: verification, not speed)' if a.quick else ''}: {a.deliveries} deliveries for "
         f"{a.pulls} PRs, {a.in_flight} in flight, {a.rounds} round(s); capacity: {CAPACITY}; tmp={tmp}")
    try:
        stage("peers bench: starting the dev stack and the peers")
        stack.start()
        fronts = {peer: _front(stack, peer, tmp) for peer in ("naive", "dbos")}
        web = StackHttp(stack)
        results: dict[str, list[dict]] = {s: [] for s in SIDES}
        for rnd in range(1, a.rounds + 1):
            order = SIDES[rnd - 1:] + SIDES[:rnd - 1]
            for side in order:
                stage(f"duplicate storm: round {rnd}/{a.rounds}, {side}")
                results[side].append(_storm(side, rnd, a, stack, web, fronts, tmp))
        peers = [(p, results[p]) for p in ("naive", "dbos")]
        for side in SIDES:
            rep.add(_measurement(side, results[side], peers if side == "sluicegate" else None))
        _table(rep)
    finally:
        stack.stop()
        left = stack.leftover()
        if left:
            rep.errors.append(f"processes still running after stop: {left}")
        if a.keep:
            _log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return rep


def _table(rep: BenchReport) -> None:
    _log(f"{'side':<11}{'deliv/s':>9}{'p50 ms':>9}{'p95 ms':>9}{'runs':>7}{'versions':>9}{'forge req':>10}"
         f"{'model':>7}  verified")
    for m in rep.measurements:
        f = m.figures
        _log(f"{m.name.split(': ')[1]:<11}{f['deliveries_per_s']:>9.1f}{f['p50_ms']:>9.0f}{f['p95_ms']:>9.0f}"
             f"{f['runs_started']:>7}{f['unique_versions']:>9}{f['forge_requests']:>10}{f['model_calls_seen']:>7}"
             f"  {m.verified}")
        for line in m.checks:
            _log(f"  check [{m.name}] {line}")
        if m.ratios:
            _log("  sluicegate / peer: " + ", ".join(f"{k} {v:.2f}" for k, v in m.ratios.items()))
    for m in rep.measurements:
        _log(f"  cpu ms/delivery [{m.name}] round 1: {m.figures['rounds'][0]['cpu_ms_per_delivery']}")


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    return finish(a, lambda: _run(a), "peers_bench")


if __name__ == "__main__":
    sys.exit(main())
