"""Drill: the PostgreSQL ledger restarted mid-stream. ``python starter.py drill postgres-restart``.

The stack's ledger is a private PostgreSQL cluster (``drills/_postgres.py``: initdb into a
temporary directory, its own port; the machine's cluster is never touched). A paced stream of
signed deliveries (originals, redeliveries, same-version duplicates) for M pull requests runs
through the webhook API while the worker reviews; a third of the way in, the cluster is stopped
(``pg_ctl stop -m fast``) and started again after a pause. The sender plays GitHub's "redeliver":
anything answered 5xx (or dropped) is sent again, same bytes and delivery id, until decided.
Checked: every delivery eventually decided, with a receipt the ledger holds; every version
ended ``done`` with exactly one comment (a version whose start the restart cut off — accepted,
then the ledger gone before the kill check — is started by the sender's repeat); no dead letter;
the worker and API processes that were running before the restart are the ones that finished the
job; the API's ``/metrics`` counts every start a repeat set off as started or not, none dropped or
cut off.
Figures: the 5xx answers by status (and dropped connections), the versions a repeat started (from
the API's log, and its ``sluicegate_intake_repeat_starts_total``), deliveries per second, latency.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families

from drills._harness import DrillReport, leftovers, run_drill, wait_until
from drills._postgres import PrivateCluster
from drills._stream import (
    NO_CAPACITY_LIMITS, Background, build_stream, check_answers, check_reviews, few, open_pulls, throughput,
    wait_finished,
)
from sluicegate.devstack import DevStack, StackHttp, free_port

REPO = "acme/pg"


@dataclass(frozen=True)
class Sizes:
    deliveries: int = 400
    pulls: int = 40
    in_flight: int = 8
    seconds: float = 30.0
    """How long the stream should last (the senders are paced to it)."""
    down_seconds: float = 5.0
    model_delay: float = 0.2
    seed: int = 9

    @classmethod
    def quick(cls) -> "Sizes":
        return cls(deliveries=40, pulls=6, seconds=6.0, down_seconds=2.0)


def _processes(stack: DevStack) -> dict[str, int]:
    return {n: stack.processes[n].proc.pid for n in ("worker", "webhook-api")}


def _repeat_starts(metrics_port: int) -> dict[str, int]:
    """The API's ``sluicegate_intake_repeat_starts_total`` by outcome, scraped from its ``/metrics``."""
    text = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).raise_for_status().text
    return {sample.labels["outcome"]: int(sample.value) for family in text_string_to_metric_families(text)
            for sample in family.samples if sample.name == "sluicegate_intake_repeat_starts_total"}


def _drill(sizes: Sizes, cluster: PrivateCluster, stack: DevStack, report: DrillReport, metrics_port: int) -> None:
    web = StackHttp(stack)
    report.inject(f"ledger on a private PostgreSQL cluster at 127.0.0.1:{cluster.port} ({cluster.bin})")
    web.model_fault(delay_seconds=sizes.model_delay, times=None)
    pulls = open_pulls(web, REPO, sizes.pulls)
    stream = build_stream(stack.settings.sources["github"].secret, pulls, sizes.deliveries, 0.5, sizes.seed)
    before = _processes(stack)
    pace = max(0.0, sizes.seconds * sizes.in_flight / len(stream) - 0.02)
    sender = Background(stack, stream, sizes.in_flight, redeliver_5xx=True, pace=pace,
                        give_up_after=120 + sizes.down_seconds).start()
    report.inject(f"{len(stream)} signed deliveries for {sizes.pulls} pull requests, {sizes.in_flight} in flight, "
                  f"paced over ~{sizes.seconds:.0f} s; the sender redelivers whatever is answered 5xx")
    wait_until(lambda: sender.sent >= len(stream) // 3, sizes.seconds * 2, interval=0.05)
    at = sender.sent
    t = time.monotonic()
    cluster.stop("fast")
    report.inject(f"PostgreSQL stopped (pg_ctl stop -m fast) after {at} deliveries")
    time.sleep(sizes.down_seconds)
    cluster.start()
    report.inject(f"PostgreSQL started again after {time.monotonic() - t:.1f} s down")
    report.check("the stream ended", sender.join(240 + sizes.seconds))
    report.check("the sender ran without an error", sender.error is None, repr(sender.error) if sender.error else "")
    answers = sender.answers
    throughput(report, answers, sender.seconds)
    check_answers(report, stack, answers)
    rows = wait_finished(stack, pulls, timeout=120 + 2 * sizes.pulls)
    check_reviews(report, stack, web, pulls, rows)
    letters = [x for p in pulls for x in leftovers(stack, p.work_key)[2]]
    report.check("no dead letter", not letters, few(letters))
    after = _processes(stack)
    alive = [n for n in after if stack.processes[n].alive()]
    report.check("the worker and API recovered without a restart (same processes, alive)",
                 after == before and len(alive) == len(after), f"before {before}, after {after}, alive {alive}")
    silent = [p.number for p in pulls if not any(a.delivery.pull == p and a.body.get("admitted") is True
                                                  for a in answers)]
    report.figure(f"versions admitted by a delivery whose answer was lost to the restart (5xx or dropped; its "
                  f"redelivery answered duplicate): {len(silent)} {['#' + str(n) for n in silent]}")
    api_log = (stack.log_dir / "webhook-api.log").read_text(errors="replace")
    restarted = sorted({line.split(" started ", 1)[1].split(",", 1)[0] for line in api_log.splitlines()
                        if "accepted and never started, on a repeat" in line and " started " in line})
    counts: dict[str, int] = {}

    def settled() -> bool:  # every start set off has ended (none still running)
        counts.clear()
        counts.update(_repeat_starts(metrics_port))
        return bool(counts) and counts["set_off"] == counts["started"] + counts["not_started"] + counts["cut_off"]

    ended = wait_until(settled, 10, interval=0.2)
    report.figure(f"versions whose start the restart cut off, started by a repeat of their delivery "
                  f"(intake/starts_in_progress.py): {len(restarted)} {restarted}; the API's "
                  f"sluicegate_intake_repeat_starts_total: {counts}")
    report.check("the API exported its repeat-set-off starts, each started or not, none dropped or cut off",
                 ended and counts["dropped"] == counts["cut_off"] == 0 and counts["started"] >= len(restarted),
                 str(counts))
    failures = Counter(f.split(" ")[0] for a in answers for f in a.failures)
    report.figure("answers at or above 500 during the restart, redelivered: "
                  + (", ".join(f"{k} x{n}" for k, n in sorted(failures.items())) or "none")
                  + f"; {failures.get('503', 0)} were 503; {sum(bool(a.failures) for a in answers)} deliveries "
                    f"needed a redelivery")


def run(keep: bool = False, sizes: Sizes | None = None) -> DrillReport:
    sizes = sizes or Sizes()
    cluster = PrivateCluster().create()
    report = None
    metrics_port = free_port()
    try:
        report = run_drill("postgres-restart", lambda stack, rep: _drill(sizes, cluster, stack, rep, metrics_port),
                           overrides={**NO_CAPACITY_LIMITS, "SLUICEGATE_LEDGER_URL": cluster.url,
                                      "SLUICEGATE__TELEMETRY__PROMETHEUS__API_BIND": f"127.0.0.1:{metrics_port}"},
                           keep=keep)
    finally:
        cluster.destroy(keep=report is None or not report.ok or keep)
    if report.kept is not None:
        report.figure(f"PostgreSQL cluster directory kept: {cluster.root} (postgres.log)")
    return report
