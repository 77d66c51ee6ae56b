"""Drill: the forge down for a window during a stream. ``python starter.py drill forge-outage``.

A paced stream of signed deliveries (originals, redeliveries, same-version duplicates) for M
pull requests runs through the webhook API, the worker reviewing and the deferred-queue
dispatcher scheduled every 2 s. A fifth of the way in, the forge simulator answers 503 to every
request for the stream's repository (``--mode hang``: holds each request past the forge
client's timeout, then 503) for the outage window; intake's freshness read and the worker's
reads and writes all meet it. The sender plays GitHub's "redeliver": a delivery answered 5xx is
sent again later, same bytes and id, while the stream goes on.

Checked, whichever way intake answers a delivery it cannot check (503, nothing kept; or queued
and answered 202, decided later): no verified delivery is lost -- each was answered below 500
in the end, with a receipt the ledger holds, and the deferred queue holds nothing waiting;
after recovery every version (none moves: all are fresh) ended ``done`` with exactly one
comment. Figures: deliveries queued vs. answered 503, dead letters, deliveries per second.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass

import httpx
from sqlmodel import Session, select

from drills._harness import DrillReport, leftovers, run_drill, wait_until
from drills._stream import (
    NO_CAPACITY_LIMITS, Background, build_stream, check_answers, check_reviews, few, open_pulls, throughput,
    wait_finished,
)
from ledger import DeferredItem, make_engine
from sluicegate.devstack import DevStack, StackHttp

REPO = "acme/outage"
HANG_SECONDS = 15.0
"""``--mode hang``: longer than the forge client's timeout (``forge.timeout_seconds``, 10 s by default)."""
OVERRIDES = {**NO_CAPACITY_LIMITS, "SLUICEGATE__CAPACITY__DISPATCH_INTERVAL_SECONDS": "2"}


@dataclass(frozen=True)
class Sizes:
    deliveries: int = 500
    pulls: int = 100
    in_flight: int = 8
    seconds: float = 60.0
    """How long the stream would last without the outage (the senders are paced to it)."""
    outage_seconds: float = 120.0
    mode: str = "503"
    model_delay: float = 0.2
    seed: int = 9

    @classmethod
    def quick(cls) -> "Sizes":
        return cls(deliveries=40, pulls=6, seconds=8.0, outage_seconds=6.0)


def _apply_dispatcher(stack: DevStack) -> None:
    from sluicegate.temporal.schedules import DISPATCH_SCHEDULE, apply_schedules
    from sluicegate.temporal.client import connect

    async def apply() -> None:
        await apply_schedules(await connect(stack.settings), stack.settings, only=[DISPATCH_SCHEDULE])

    asyncio.run(apply())


def _outage(web: StackHttp, mode: str) -> None:
    fault = {"path": f"^/repos/{REPO}/", "status": 503, "times": None}
    if mode == "hang":
        fault["hang_seconds"] = HANG_SECONDS
    httpx.post(f"{web.forge}/_sim/faults", json=fault, timeout=10).raise_for_status()


def _waiting(stack: DevStack) -> list[str]:
    engine = make_engine(stack.settings.ledger_url())
    with Session(engine) as s:
        rows = [f"{d.work_key}: {d.last_error}" for d in s.exec(select(DeferredItem).where(
            DeferredItem.status == "waiting"))]
    engine.dispose()
    return rows


def _drill(sizes: Sizes, stack: DevStack, report: DrillReport) -> None:
    if sizes.mode not in ("503", "hang"):
        raise ValueError("mode must be 503 or hang")
    web = StackHttp(stack)
    _apply_dispatcher(stack)
    web.model_fault(delay_seconds=sizes.model_delay, times=None)
    pulls = open_pulls(web, REPO, sizes.pulls)
    stream = build_stream(stack.settings.sources["github"].secret, pulls, sizes.deliveries, 0.5, sizes.seed)
    pace = max(0.0, sizes.seconds * sizes.in_flight / len(stream) - 0.02)
    sender = Background(stack, stream, sizes.in_flight, redeliver_5xx=True, pace=pace,
                        give_up_after=sizes.outage_seconds + 180).start()
    report.inject(f"{len(stream)} signed deliveries for {sizes.pulls} pull requests, {sizes.in_flight} in flight, "
                  f"paced over ~{sizes.seconds:.0f} s; the sender redelivers whatever is answered 5xx")
    wait_until(lambda: sender.sent >= len(stream) // 5, sizes.seconds * 2, interval=0.05)
    at = sender.sent
    _outage(web, sizes.mode)
    t = time.monotonic()
    how = "answers 503" if sizes.mode == "503" else f"holds each request {HANG_SECONDS:.0f} s, then answers 503"
    report.inject(f"forge outage: the forge simulator {how} for every request on {REPO}, from delivery {at}")
    time.sleep(sizes.outage_seconds)
    httpx.delete(f"{web.forge}/_sim/faults", timeout=10).raise_for_status()
    report.inject(f"forge recovered after {time.monotonic() - t:.0f} s ({sender.sent} deliveries sent by then)")

    report.check("the stream ended", sender.join(sizes.outage_seconds + 240 + sizes.seconds))
    report.check("the sender ran without an error", sender.error is None, repr(sender.error) if sender.error else "")
    answers = sender.answers
    throughput(report, answers, sender.seconds)
    check_answers(report, stack, answers)
    rows = wait_finished(stack, pulls, timeout=180 + 2 * sizes.pulls)
    wait_until(lambda: not _waiting(stack), 60, interval=0.5)
    waiting = _waiting(stack)
    report.check("nothing left waiting in the deferred queue", not waiting, few(waiting))
    check_reviews(report, stack, web, pulls, rows, label=" (all fresh)")
    queued = [a for a in answers if a.body.get("queued") is True
              and a.body.get("reason") in ("source-unavailable", "freshness-deadline")]
    fives = Counter(f.split(" ")[0] for a in answers for f in a.failures)
    report.figure(f"deliveries queued (202 source-unavailable or freshness-deadline, decided later): {len(queued)}; answers 503 "
                  f"(redelivered): {fives.get('503', 0)} for {sum('503' in a.failures for a in answers)} deliveries"
                  + "".join(f"; {k} x{n}" for k, n in sorted(fives.items()) if k != "503"))
    letters = [x for p in pulls for x in leftovers(stack, p.work_key)[2]]
    report.figure(f"dead letters: {len(letters)}; versions by status: "
                  + ", ".join(f"{k} {n}" for k, n in sorted(Counter(v.status for v in rows).items())))
    admitted = Counter(a.delivery.pull for a in answers if a.body.get("outcome") == "accept")
    again = sum(n > 1 for n in admitted.values())
    report.figure(f"versions admitted more than once (a run failed on the outage, a later delivery re-ran it): "
                  f"{again}")


def run(keep: bool = False, sizes: Sizes | None = None) -> DrillReport:
    sizes = sizes or Sizes()
    return run_drill("forge-outage", lambda stack, report: _drill(sizes, stack, report), overrides=OVERRIDES,
                     keep=keep)
