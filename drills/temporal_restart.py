"""Drill: the Temporal server restarted mid-run. ``python starter.py drill temporal-restart``.

Six pull requests are reviewed by a model that takes 1.5 s a call (a review is three calls), so
every run is inside a model call when the dev server is stopped (SIGTERM). One more delivery
arrives while Temporal is down: it is recorded, its admission fails ("admission pending"). The
server restarts on the same database file; the outbox relay admits the pending delivery; every
run carries on from its history. Checked: every version ended ``done`` — recorded by its own
run — with exactly one comment; no dead letter; nothing left accepted or admitted; no capacity
held; a reconcile pass finds nothing to settle; every agent workflow closed COMPLETED. Figures:
model calls per pull request (three without the restart; a call cut off by it is made again).
"""

from __future__ import annotations

import asyncio
import time

from drills._harness import (
    DrillReport, brief, comments_for, leftovers, run_drill, starter, tail, versions, wait_until,
)
from sluicegate.devstack import DevStack, StackHttp

REPO = "acme/api"
BEFORE = tuple(range(60, 66))
DURING = 66
DOWN_SECONDS = 5.0
MODEL_SECONDS = 1.5


def _closed_statuses(stack: DevStack) -> dict[str, str]:
    async def listing() -> dict[str, str]:
        from sluicegate.temporal.client import connect

        client = await connect(stack.settings)
        return {wf.id: wf.status.name if wf.status else "unknown"
                async for wf in client.list_workflows('WorkflowType = "AgentLoop"')}

    return asyncio.run(listing())


def _restart(stack: DevStack, web: StackHttp, report: DrillReport) -> None:
    stats = web.model_stats()
    stack.stop_temporal()
    report.inject(f"Temporal dev server stopped (SIGTERM) with {stats['calls'] - stats['completed']} model "
                  f"call(s) in flight")
    late = web.send_opened(REPO, DURING).json()
    report.inject(f"a delivery for {REPO}#{DURING} while Temporal was down")
    report.check("the delivery during the outage was recorded, its admission left pending",
                 (late.get("outcome"), late.get("admitted")) == ("accept", False),
                 f"{brief(late)}, admitted={late.get('admitted')}")
    time.sleep(DOWN_SECONDS)
    started = time.monotonic()
    stack.start_temporal()
    report.inject(f"Temporal dev server restarted on the same database file (down ≥ {DOWN_SECONDS:.0f} s, "
                  f"back after {time.monotonic() - started:.1f} s)")
    relay = starter(stack, "outbox", "relay", "--grace-seconds", "0")
    report.check("the outbox relay admitted the pending delivery", relay.returncode == 0 and "admitted 1" in relay.stdout,
                 tail(relay))


def _finished(stack: DevStack) -> bool:
    rows = versions(stack)
    return len(rows) == len(BEFORE) + 1 and all(v.status not in ("accepted", "admitted") for v in rows)


def _drill(stack: DevStack, report: DrillReport) -> None:
    web = StackHttp(stack)
    for n in (*BEFORE, DURING):
        web.put_pull(REPO, n, f"{n:040x}")
    web.model_fault(delay_seconds=MODEL_SECONDS, times=None)
    report.inject(f"the model simulator answers every call after {MODEL_SECONDS} s (a review is 3 calls)")
    answers = [web.send_opened(REPO, n).json() for n in BEFORE]
    report.check("every delivery before the restart admitted",
                 all((a.get("outcome"), a.get("admitted")) == ("accept", True) for a in answers),
                 ", ".join(brief(a) for a in answers))
    wait_until(lambda: web.model_stats()["calls"] >= len(BEFORE), 60)
    _restart(stack, web, report)
    wait_until(lambda: _finished(stack), 180, interval=0.5)

    rows = versions(stack)
    keys = sorted({v.work_key for v in rows})
    report.check("every version has a recorded outcome", _finished(stack), f"{len(rows)} versions")
    not_done = [f"{v.work_key}@{v.input_version[:8]}={v.status}" for v in rows if v.status != "done"]
    report.check("every version ended done", not not_done, ", ".join(not_done))
    per_version = {f"{v.work_key}": comments_for(web, v.work_key, v.input_version) for v in rows}
    report.check("exactly one comment per version", all(n == 1 for n in per_version.values())
                 and len(web.comments()) == len(rows), ", ".join(f"{k}: {n}" for k, n in per_version.items() if n != 1))
    left = {k: leftovers(stack, k) for k in keys}
    report.check("no dead letter", not any(letters for _, _, letters in left.values()))
    report.check("no capacity slot or day-budget hold left", not any(slots or holds for slots, holds, _ in left.values()))
    reconcile = starter(stack, "reconcile", "--grace-seconds", "0")
    report.check("a reconcile pass finds nothing stranded", reconcile.returncode == 0 and "0 settled" in reconcile.stdout,
                 tail(reconcile))
    closed = _closed_statuses(stack)
    wrong = {wf: st for wf, st in closed.items() if st != "COMPLETED"}
    report.check("every agent workflow closed COMPLETED", len(closed) == len(keys) and not wrong,
                 str(wrong) if wrong else f"{len(closed)} workflows")
    calls = {k.split("@")[0]: n for k, n in web.model_stats()["by_work"].items()}
    report.figure("model calls per pull request: " + ", ".join(f"#{k.split('#')[1].split(':')[0]}={n}"
                                                               for k, n in sorted(calls.items())))
    report.figure(f"model calls in total: {sum(calls.values())} for {len(rows)} reviews (3 each without a restart)")


def run(keep: bool = False) -> DrillReport:
    return run_drill("temporal-restart", _drill, keep=keep)
