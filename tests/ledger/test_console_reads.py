"""The console's read queries (ledger/_reads.py) on both ledgers, against rows written here."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta

from sqlmodel import Session

import ledger
from ledger import Receipt


def _receipts(url: str, rows: list[tuple[datetime, str, str, str | None]]) -> list[Receipt]:
    """Write receipts ``(created_at, outcome, reason, tenant)``; returns them."""
    engine = ledger.make_engine(url)
    made = [Receipt(id=uuid.uuid4().hex, created_at=at, outcome=o, reason=r, trigger_kind="event", source="github",
                    received_at=at, tenant=t, delivery_id=str(uuid.uuid4()), work_key=f"{t or 'x'}/github:a/b#1:review")
            for at, o, r, t in rows]
    with Session(engine, expire_on_commit=False) as s, s.begin():
        s.add_all(made)
    engine.dispose()
    return made


def test_keyset_pages_visit_every_receipt_once_newest_first_even_with_equal_times(fresh_ledger_url):
    now = datetime.now(UTC).replace(microsecond=0)
    same = now - timedelta(minutes=5)  # five receipts at the very same instant: the id breaks the tie
    made = _receipts(fresh_ledger_url, [(same, "accept", "admitted", "acme")] * 5 +
                     [(now - timedelta(minutes=i), "reject", "stale-version", "acme") for i in range(1, 9)] +
                     [(now, "accept", "admitted", "beta")])
    engine = ledger.make_engine(fresh_ledger_url)
    seen, cursor, pages = [], None, 0
    while True:
        page = ledger.receipts_page(engine, ledger.ReceiptQuery(visible=frozenset({"acme"}), before=cursor, limit=3))
        seen += [r.id for r in page.rows]
        pages += 1
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    mine = sorted((r for r in made if r.tenant == "acme"), key=lambda r: (r.created_at, r.id), reverse=True)
    assert seen == [r.id for r in mine] and pages == 5  # 13 rows, 3 a page

    stale = ledger.receipts_page(engine, ledger.ReceiptQuery(reason="stale-version", since=now - timedelta(minutes=4),
                                                             limit=50))
    assert sorted(r.id for r in stale.rows) == sorted(r.id for r in made if r.reason == "stale-version"
                                                      and r.created_at >= now - timedelta(minutes=4))
    everyone = ledger.receipts_page(engine, ledger.ReceiptQuery(limit=1000))
    assert len(everyone.rows) == len(made) and everyone.next_cursor is None
    engine.dispose()


def test_decision_counts_and_hours_count_what_was_decided_in_the_window(fresh_ledger_url):
    now = datetime.now(UTC)
    made = _receipts(fresh_ledger_url, [(now - timedelta(minutes=10), "accept", "admitted", "acme"),
                                        (now - timedelta(minutes=20), "reject", "duplicate-work", "acme"),
                                        (now - timedelta(hours=3), "accept", "admitted", "acme"),
                                        (now - timedelta(hours=3), "defer", "capacity", "beta"),
                                        (now - timedelta(hours=3), "reject", "bad-input", None),
                                        (now - timedelta(days=2), "accept", "admitted", "acme")])
    engine = ledger.make_engine(fresh_ledger_url)
    for since, visible in ((now - timedelta(hours=1), None), (now - timedelta(days=1), None),
                           (now - timedelta(days=1), frozenset({"acme"}))):
        expected = Counter((r.outcome, r.reason) for r in made if r.created_at >= since
                           and (visible is None or r.tenant in visible))
        assert {(o, r): n for o, r, n in ledger.decision_counts(engine, since, visible)} == dict(expected)
    hours = ledger.decisions_by_hour(engine, now - timedelta(days=1), None)
    expected_hours = Counter((r.created_at.astimezone(UTC).strftime("%Y-%m-%d %H"), r.outcome) for r in made
                             if r.created_at >= now - timedelta(days=1))
    assert {(h, o): n for h, o, n in hours} == dict(expected_hours)
    engine.dispose()


def test_a_dead_letter_closes_once_whoever_asks_second(fresh_ledger_url):
    engine = ledger.make_engine(fresh_ledger_url)
    letters = ledger.DeadLetters(engine)
    outcome = {"work_key": "acme/github:acme/api#9:review", "input_version": "ab" * 20, "generation": 1,
               "tenant": "acme", "source": "github", "reason": "model-error", "retries": 3}
    with Session(engine) as s, s.begin():
        letters.record(s, outcome, "acme-reviews-team", "agent/acme/github:acme/api#9:review")
    [letter] = ledger.dead_letters_page(engine, "open", frozenset({"acme"}))
    assert ledger.dead_letters_page(engine, "open", frozenset({"beta"})) == []
    assert letters.close(letter.id, "resolved", "resolved by carol: fixed by hand")
    assert not letters.close(letter.id, "retried", "retried by bob (receipt r1): again")
    closed = letters.get(letter.id)
    assert (closed.status, closed.note) == ("resolved", "resolved by carol: fixed by hand")
    assert ledger.open_dead_letter_counts(engine, None) == []
    engine.dispose()
