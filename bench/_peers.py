"""The peers bench's sides: starting a peer's front, counting the runs each side started, and the
per-side measurement and table (``bench/peers_bench.py`` sends the storms).
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import time
from pathlib import Path

import httpx
from sqlmodel import Session, select

from bench._harness import BenchReport, Measurement
from bench._peer_front import NAIVE_WORKFLOW
from drills._stream import Pull
from intake.identity import workflow_id_for
from ledger import Receipt, WorkVersion, make_engine
from sluicegate.devstack import DevStack
from sluicegate.devstack._processes import ManagedProcess, free_port
from sluicegate.temporal.client import connect
from workflows.contracts import AGENT_WORKFLOW

SERVER = ("every front (Sluicegate's webhook API and both peers') runs uvicorn with the same settings (one process, "
          "uvloop, h11, access log off, the same idle keep-alive: webhook_api._serving.uvicorn_options); none gets a setting the others lack")
CAPACITY = ("limits lifted (NO_CAPACITY_LIMITS), no worker: Sluicegate's admitted runs and naive Temporal's "
            "runs wait in their task queues; DBOS runs its one-step workflow in the front process at once")


def _log(line: str) -> None:
    print(line, flush=True)

def start_front(stack: DevStack, peer: str, tmp: Path) -> str:
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


def runs_started(side: str, stack: DevStack, pulls: list[Pull], tmp: Path, fronts: dict, steps_before: int) -> dict:
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


def _median(rows: list[dict], key: str) -> float:
    vals = sorted(r[key] for r in rows)
    return vals[len(vals) // 2] if len(vals) % 2 else (vals[len(vals) // 2 - 1] + vals[len(vals) // 2]) / 2


def measurement(side: str, rows: list[dict], base: list[dict] | None) -> Measurement:
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


def table(rep: BenchReport) -> None:
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
