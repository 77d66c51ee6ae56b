"""The model-response journal on SQLite and PostgreSQL: one answer per step, the first wins,
a different question replaces it (old rows go by retention: tests/ledger/test_retention.py)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from ledger import ModelJournal, ModelJournalEntry


def _entry(key: str, step: int, digest: str, answer: str, attempt: int = 1, **kw) -> ModelJournalEntry:
    return ModelJournalEntry(work_key=key, input_version="v1", generation=2, step=step, request_digest=digest,
                             response={"response_id": answer}, cost_usd=0.01, attempt=attempt,
                             created_at=kw.get("created_at", datetime.now(UTC)))


def test_an_answer_is_found_by_its_step(engine):
    journal, key = ModelJournal(engine), f"wk-{uuid.uuid4().hex[:8]}"
    assert journal.find(key, "v1", 2, 1) is None
    stored = journal.record(_entry(key, 1, "d1", "first"))
    assert stored.response == {"response_id": "first"} and stored.attempt == 1
    assert journal.find(key, "v1", 2, 1).response == {"response_id": "first"}
    assert journal.find(key, "v1", 2, 2) is None and journal.find(key, "v1", 3, 1) is None


def test_two_attempts_answering_the_same_request_keep_the_first_answer(engine):
    journal, key = ModelJournal(engine), f"wk-{uuid.uuid4().hex[:8]}"
    journal.record(_entry(key, 1, "d1", "first", attempt=1))
    stored = journal.record(_entry(key, 1, "d1", "second", attempt=2))
    assert (stored.response, stored.attempt) == ({"response_id": "first"}, 1)


def test_a_different_request_for_the_same_step_replaces_the_answer(engine):
    journal, key = ModelJournal(engine), f"wk-{uuid.uuid4().hex[:8]}"
    journal.record(_entry(key, 1, "d1", "old run"))
    stored = journal.record(_entry(key, 1, "d2", "new run", attempt=1))
    assert (stored.request_digest, stored.response) == ("d2", {"response_id": "new run"})
    assert journal.find(key, "v1", 2, 1).request_digest == "d2"

