"""What the mixed-stream bench reads back: work versions and receipts (ledger), AgentLoop executions
(Temporal), waiting until every admitted version has finished."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Callable

from sqlmodel import Session, select

from bench._common import now
from ledger import Receipt, WorkVersion
from workflows.contracts import AGENT_WORKFLOW, RunStatus

TERMINAL = frozenset(RunStatus)
Log = Callable[[str], None]


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
