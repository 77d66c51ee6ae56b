"""Crash drill: the worker dies after the forge accepted the comment, before the activity completed.

On restart the run finishes, the forge holds exactly one comment, the side-effect ledger
records the reconcile, and no model call is repeated (replay reads results from history).
"""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlmodel import Session, select

from activities.keys import operation_key
from demo.github_payloads import delivery_headers, encode, pull_request_payload
from demo.outcome import wait_for_runs
from ledger import SideEffect, make_engine
from sluicegate.devstack import wait_for

pytestmark = pytest.mark.e2e


def test_worker_killed_between_side_effect_and_checkpoint(stack_factory):
    stack = stack_factory(SLUICEGATE__ACTIVITIES__TOOL_HEARTBEAT_SECONDS="2",
                          SLUICEGATE__ACTIVITIES__TOOL_START_TO_CLOSE_SECONDS="60")
    s = stack.settings
    forge = f"http://{s.simulators.forge.host}:{s.simulators.forge.port}"
    # The forge stores the comment, then never answers: the activity cannot complete.
    httpx.post(f"{forge}/_sim/faults", json={"method": "POST", "path": "/comments$", "after_commit": True,
                                             "hang_seconds": 120, "times": 1}).raise_for_status()
    head = httpx.get(f"{forge}/repos/acme/api/pulls/44", headers={"Authorization": f"Bearer {s.forge.token.get_secret_value()}"}).json()
    body = encode(pull_request_payload("acme", "api", 44, head["head"]["sha"]))
    r = httpx.post(f"http://{s.webhook_api.host}:{s.webhook_api.port}/webhooks/github", content=body,
                   headers=delivery_headers(s.sources["github"].secret, body, delivery_id=str(uuid.uuid4())))
    assert r.status_code == 202, r.text

    comments = lambda: httpx.get(f"{forge}/_sim/comments").json()  # noqa: E731
    assert wait_for(lambda: len(comments()) == 1, timeout=60), "the forge never received the comment"
    stack.kill_worker()
    httpx.delete(f"{forge}/_sim/faults").raise_for_status()
    stack.start_worker()

    [version] = wait_for_runs(s, timeout=90)
    assert version.status == "done", version.result
    assert len(comments()) == 1
    op = operation_key("acme/github:acme/api#44:review", "post_review_comment", head["head"]["sha"])
    engine = make_engine(s.ledger_url())
    with Session(engine) as session:
        [effect] = session.exec(select(SideEffect)).all()
    engine.dispose()
    assert (effect.operation_key, effect.status) == (op, "done")
    assert effect.attempts >= 2 and effect.external_id == str(comments()[0]["id"])
    model = httpx.get(f"http://{s.simulators.model.host}:{s.simulators.model.port}/_sim/stats").json()
    assert model["calls"] == version.result["steps"] == 3


def _model_calls(s, work_key: str) -> int:
    stats = httpx.get(f"http://{s.simulators.model.host}:{s.simulators.model.port}/_sim/stats").json()
    return sum(n for work, n in stats["by_work"].items() if work.startswith(f"{work_key}@"))


def test_worker_killed_after_the_model_answered_makes_no_second_provider_call(stack_factory, postgres_ledger):
    """The kill lands after the answer arrived and was journaled, before Temporal heard of it: the
    retried attempt returns the journaled answer. Counted at the model simulator, per work key."""
    from ledger import BudgetReservation, ModelJournalEntry
    from tests.e2e.conftest import StackHttp
    from tests.support.crash import held_after_the_answer

    stack = stack_factory(SLUICEGATE_LEDGER_URL=postgres_ledger, SLUICEGATE__ACTIVITIES__MODEL_HEARTBEAT_SECONDS="2")
    s, http = stack.settings, StackHttp(stack)
    key = "acme/github:acme/api#44:review"
    http.model_fault(delay_seconds=1.5, times=1)  # the first call is slow enough to take the lock first
    assert http.send_opened("acme/api", 44).status_code == 202
    with held_after_the_answer(s.ledger_url(), [key], step=1) as [held]:
        assert _model_calls(s, key) == 1
        stack.kill_worker()
    stack.start_worker()

    [version] = wait_for_runs(s, timeout=90)
    engine = make_engine(s.ledger_url())
    with Session(engine) as session:
        step1 = session.exec(select(BudgetReservation).where(BudgetReservation.step == 1)).all()
        [answer] = session.exec(select(ModelJournalEntry).where(ModelJournalEntry.step == 1)).all()
    engine.dispose()
    assert version.status == "done" and version.result["steps"] == 3
    assert _model_calls(s, key) == 3  # one per step: the answer received before the kill was not asked again
    assert version.result["retries"] >= 1  # step 1 did run a second attempt...
    [reservation] = step1  # ...which reserved nothing and settled the first attempt's hold from the journal
    assert (reservation.id, reservation.attempt, reservation.status) == (held, 1, "settled")
    assert reservation.spent_usd == answer.cost_usd and "from the journal" in reservation.note
    assert len(http.comments()) == 1
