"""Measurement 1: duplicate deliveries rejected per second by intake vs. a bare ledger insert.

Intake side: per delivery, what the webhook API does (``webhook_api/_app.py``): the signature check
(``verify_github``: headers, HMAC over the raw bytes), then ``IntakeService.known_delivery`` (an
authenticated redelivery whose original this process holds committed and final is answered before
the parse: ``intake/seen_deliveries.py``), and only when that does not answer, the parse
(``normalize_github``: JSON, pydantic) and ``IntakeService.submit`` with the real ``SqlIntakeStore``
(the early repeat check: one indexed read). The delivery id was decided before the run by another
``IntakeService`` (another API replica: this one's process cache starts empty), so the first call
reads the ledger and every later one is answered in process; each is answered with the original
receipt's id and no new row (a repeat is counted on a metric, not written: ``docs/security.md``;
the delivery's receipt stays queryable). ``ledger_path=True`` turns the in-process answers off
(``SeenDeliveries(0)``): every call parses and reads the ledger, the figure before the cache. Baseline: one ``INSERT ... ON CONFLICT DO NOTHING`` of a
fresh row per transaction into a deliveries-like table, through the same engine.

Both sides are a single sequential caller; rounds alternate which side goes first.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Callable

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

import ledger
from bench._bare_insert import bare_insert, bare_rows, create_table
from bench._common import BenchError, head_sha, signed_pull_request
from bench._forge_reads import ForgeReads
from bench._rounds import Comparison, interleave, timed
from bench._stack import postgres_database
from intake.decision import Outcome, Reason
from intake.freshness import TargetSnapshot
from intake.github import normalize_github, parse_github_delivery, verify_github
from intake.scope import ScopeRules
from intake.seen_deliveries import SeenDeliveries
from intake.service import IntakeService
from ledger import Delivery, Receipt, SqlIntakeStore

__all__ = ["measure", "postgres_database"]
"""``postgres_database`` moved to ``bench/_stack.py``; still importable from here."""

SOURCE, TENANT, SECRET = "github", "acme", "bench-webhook-secret"
WARMUP_SECONDS = 0.5


class MustNotBeCalled:
    """Target reader and admitter for the duplicate path: any call is a bug in the pipeline order."""

    def __init__(self) -> None:
        self.calls = 0

    async def read(self, ref, tenant=None):
        self.calls += 1
        raise AssertionError(f"target reader called for {ref} on the duplicate-delivery path")

    async def admit(self, admission):
        self.calls += 1
        raise AssertionError("admitter called on the duplicate-delivery path")


class _ClosedTarget:
    """Used once, to decide the delivery before the run (a target-closed reject records it)."""

    async def read(self, ref, tenant=None):
        return TargetSnapshot(exists=True, open=False, current_version=None)


async def _seed(store: SqlIntakeStore, headers: dict[str, str], body: bytes) -> str:
    parsed = parse_github_delivery(headers, body, source=SOURCE, tenant=TENANT, secrets=[SECRET],
                                   received_at=datetime.now(UTC))
    first = await IntakeService(store, _ClosedTarget(), MustNotBeCalled(), scope=ScopeRules.everything()).submit(parsed.envelope, parsed.candidate)
    if first.reason != Reason.TARGET_CLOSED:
        raise BenchError(f"seeding the delivery gave {first.outcome}/{first.reason}, expected reject/target-closed")
    return first.receipt_id


def _duplicate(service: IntakeService, headers: dict[str, str], body: bytes, original: str):
    """One operation of the intake side: a redelivery, as ``webhook_api/_app.py`` takes it (auth, known, parse)."""
    async def step() -> None:
        received_at = datetime.now(UTC)
        verified = verify_github(headers, body, [SECRET])
        decision = service.known_delivery(SOURCE, verified.delivery_id or "", TENANT, received_at,
                                          verified.event_type)
        if decision is None:
            parsed = normalize_github(verified, headers, body, source=SOURCE, tenant=TENANT, received_at=received_at)
            decision = await service.submit(parsed.envelope, parsed.candidate)
        if decision.outcome != Outcome.REJECT or decision.reason != Reason.DUPLICATE_DELIVERY:
            raise BenchError(f"expected a duplicate-delivery reject, got {decision.outcome}/{decision.reason}")
        if decision.receipt_id != original:
            raise BenchError(f"a duplicate answered receipt {decision.receipt_id}, not the original {original}")
    return step


async def measure(name: str, url: str, rounds: int, seconds: float, log: Callable[[str], None],
                  ledger_path: bool = False) -> Comparison:
    """Run the comparison on the (empty) database at ``url``; migrates it first. ``ledger_path``: no
    in-process answers (every duplicate parsed and read from the ledger)."""
    cmp = Comparison(name, target=0.5, unit="rejects/s", base_unit="inserts/s")
    ledger.upgrade(url)
    engine = ledger.make_engine(url)
    try:
        create_table(engine)
        store = SqlIntakeStore(engine)
        delivery_id = f"bench-dup-{uuid.uuid4()}"
        headers, body = signed_pull_request(SECRET, "bench", "dup", 1, head_sha("dup", delivery_id),
                                            delivery_id=delivery_id)
        original = await _seed(store, headers, body)
        guard = MustNotBeCalled()
        service = IntakeService(store, guard, guard, scope=ScopeRules.everything(),
                                seen=SeenDeliveries(0) if ledger_path else None)
        intake, bare = _duplicate(service, headers, body, original), bare_insert(engine, SOURCE)
        warm_i, warm_b = await timed(WARMUP_SECONDS, intake), await timed(WARMUP_SECONDS, bare)
        await interleave(rounds, lambda n: timed(seconds, intake), lambda n: timed(seconds, bare), cmp, log)
        _verify(cmp, engine, delivery_id, guard, warm_i.ops, warm_b.ops)
        answered = warm_i.ops + sum(r.ops for r in cmp.intake)
        cmp.forge_reads = ForgeReads(answered, 1, requests=guard.calls, freshness=guard.calls)
        cmp.checks.append(cmp.forge_reads.line() + " (counted by the reader that must not be called)")
    finally:
        engine.dispose()
    return cmp


def _verify(cmp: Comparison, engine: Engine, delivery_id: str, guard: MustNotBeCalled,
            warm_intake: int, warm_bare: int) -> None:
    answered = warm_intake + sum(r.ops for r in cmp.intake)
    expected_rows = warm_bare + sum(r.ops for r in cmp.baseline)
    with engine.connect() as conn:
        receipts = conn.execute(select(func.count()).select_from(Receipt).where(
            Receipt.source == SOURCE, Receipt.delivery_id == delivery_id)).scalar_one()
        deliveries = conn.execute(select(func.count()).select_from(Delivery).where(
            Delivery.delivery_id == delivery_id)).scalar_one()
    rows = bare_rows(engine)
    cmp.checks.append(f"{answered} duplicates answered with the original receipt; the ledger holds {receipts} "
                      f"receipt and {deliveries} delivery row for {delivery_id} (expected 1 and 1), {rows} bare "
                      f"rows (expected {expected_rows}); reader/admitter calls: {guard.calls}")
    problems = []
    if receipts != 1:
        problems.append(f"{receipts} receipts for the delivery, expected 1 (repeats write no row)")
    if deliveries != 1:
        problems.append(f"{deliveries} delivery rows, expected 1")
    if rows != expected_rows:
        problems.append(f"{rows} bare rows, expected {expected_rows}")
    if guard.calls:
        problems.append(f"target reader/admitter called {guard.calls} times")
    if problems:
        raise BenchError("verification failed: " + "; ".join(problems))
