"""GitHub rate limits on every forge path of a run and of intake: retried after the server's delay.

Real parts: the forge simulator answering primary and secondary limits as GitHub does, the real
worker wiring on the Temporal dev server (its histories record each attempt's last failure and
the delay it asked for; the time-skipping server's do not), the real intake pipeline, both ledgers. Each test works
on a pull request under an owner of its own, so runs on the shared ledger never meet.
"""

from __future__ import annotations

import uuid
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta

from sqlmodel import Session, select

import ledger
from intake.decision import Outcome, Reason
from intake.envelope import Envelope, PullRequestRef, TriggerKind
from intake.forge_reader import ForgeTargetReader
from intake.identity import review_candidate
from intake.scope import ScopeRules
from intake.service import IntakeService
from sluicegate.temporal.admitter import TemporalAdmitter
from intake.unread import UnreadPolicy
from ledger import DeadLetter, DeferredItem, Delivery, SideEffect
from ledger._sql import as_utc
from sluicegate.forge.client import ForgeClient
from sluicegate.forge.errors import SECONDARY_LIMIT_DEFAULT_DELAY
from sluicegate.forge.retry_after import JITTER_FRACTION
from tests.support.agent_runs import copy_of_pr42, start_order, work_order
from tests.support.histories import last_attempts
from tests.support.sims import FORGE_TOKEN, settings_for
from worker import create_worker
from workflows.names import GET_DIFF_ACTIVITY, POST_COMMENT_ACTIVITY

POST = POST_COMMENT_ACTIVITY
DIFF = GET_DIFF_ACTIVITY


def _within_jitter(delay: timedelta | float | None, base: float) -> bool:
    seconds = delay.total_seconds() if isinstance(delay, timedelta) else delay
    return seconds is not None and base <= seconds <= base * (1 + JITTER_FRACTION) + 0.001


async def _run(env, settings, task_queue, order):
    async with AsyncExitStack() as stack:
        worker = await create_worker(env.client, settings, stack, task_queue, search_attributes=False)
        async with worker:
            handle = await start_order(env.client, task_queue, order)
            result = await handle.result()
            return result, await handle.fetch_history()


async def test_secondary_limit_on_posting_the_comment_is_retried_not_dead_lettered(
        sims, ledger_url, dev_env, task_queue):
    sims.reset()
    owner, head = copy_of_pr42(sims)
    sims.forge_ctl("POST", "/rate_limits/inject", json={"kind": "secondary", "method": "POST",
                                                        "path": f"/{owner}/api/issues/42/comments$",
                                                        "retry_after": 2})
    settings = settings_for(sims, ledger_url)
    order = work_order(settings, owner=owner, version=head)
    result, history = await _run(dev_env, settings, task_queue, order)

    assert result.orders[0].status == "done"
    [post] = last_attempts(history, POST)
    assert (post.attempt, post.failure_type) == (2, "ToolRateLimited")
    assert "secondary rate limit" in post.message and _within_jitter(post.next_retry_delay, 2)
    assert [c["body"].count("sluicegate:op=") for c in sims.comments() if c["owner"] == owner] == [1]
    engine = ledger.make_engine(ledger_url)
    try:
        with Session(engine) as s:
            [effect] = s.exec(select(SideEffect).where(SideEffect.work_key == order.work_key)).all()
            letters = s.exec(select(DeadLetter).where(DeadLetter.work_key == order.work_key)).all()
    finally:
        engine.dispose()
    assert (effect.status, effect.attempts) == ("done", 2) and letters == []
    assert sims.forge_ctl("GET", "/rate_limits").json()["refusals"] == {"secondary": 1}


async def test_primary_limit_on_reading_the_diff_waits_for_the_reset(sims, ledger_url, dev_env, task_queue):
    sims.reset()
    owner, head = copy_of_pr42(sims)
    sims.forge_ctl("POST", "/rate_limits/inject", json={"kind": "primary", "method": "GET", "status": 403,
                                                        "path": f"/{owner}/api/pulls/42$", "reset_in_seconds": 3})
    settings = settings_for(sims, ledger_url)
    result, history = await _run(dev_env, settings, task_queue, work_order(settings, owner=owner, version=head))

    assert result.orders[0].status == "done"
    [diff] = last_attempts(history, DIFF)
    assert (diff.attempt, diff.failure_type) == (2, "ToolRateLimited")
    assert "API rate limit exceeded" in diff.message
    # x-ratelimit-reset is whole epoch seconds (rounded up): the wait is 3-4 s before jitter.
    seconds = diff.next_retry_delay.total_seconds()
    assert 2.5 <= seconds <= 4.0 * (1 + JITTER_FRACTION)
    assert sims.forge_ctl("GET", "/rate_limits").json()["refusals"] == {"primary": 1}


async def test_freshness_read_defers_for_the_rate_limits_own_delay(sims, ledger_url, temporal_env):
    sims.reset()
    settings = settings_for(sims, ledger_url)
    engine = ledger.make_engine(ledger_url)
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN, timeout_seconds=5)
    service = IntakeService(ledger.SqlIntakeStore(engine), ForgeTargetReader(forge),
                            TemporalAdmitter(temporal_env.client, settings, search_attributes=False),
                            scope=ScopeRules.everything())  # the owner is this test's own; scope is not the subject

    def event():
        now = datetime.now(UTC)
        env = Envelope(id=str(uuid.uuid4()), source="github", type="pull_request.opened", subject=ref.target_id,
                       time=now, received_at=now, trigger_kind=TriggerKind.EVENT, tenant="acme")
        return env, review_candidate("acme", ref, head)

    first_wait = UnreadPolicy().retry_seconds  # the queue's own first wait (15 s) when the limit asks less
    try:
        for kind, extra, expected in (("secondary", {}, SECONDARY_LIMIT_DEFAULT_DELAY),
                                      ("secondary", {"retry_after": 9}, max(9.0, first_wait)),
                                      ("primary", {"reset_in_seconds": 600}, None)):
            owner, head = copy_of_pr42(sims)  # a PR of its own per limit: each delivery is queued, not a duplicate
            ref = PullRequestRef(owner, "api", 42)
            sims.forge_ctl("POST", "/rate_limits/inject", json={"kind": kind, "path": f"/{owner}/api/pulls/42$",
                                                                **extra})
            env, cand = event()
            deferred = await service.submit(env, cand)
            assert (deferred.outcome, deferred.reason) == (Outcome.DEFER, Reason.SOURCE_UNAVAILABLE), kind
            if expected is None:  # the reset is whole epoch seconds, rounded up: 600-601 s before jitter,
                # honoured past the queue's backoff cap (300 s)
                assert 599 <= deferred.retry_after_seconds <= 601 * (1 + JITTER_FRACTION)
            else:
                assert _within_jitter(deferred.retry_after_seconds, expected)
            with Session(engine) as s:  # recorded and queued: re-checked no sooner than the limit allows
                assert s.get(Delivery, ("github", env.id)) is not None
                [item] = s.exec(select(DeferredItem).where(DeferredItem.work_key == cand.work_key)).all()
            assert (item.status, item.blocked_on, item.tenant) == ("waiting", "source-unavailable", "acme")
            waits = (as_utc(item.next_attempt_at) - as_utc(item.updated_at)).total_seconds()
            assert abs(waits - deferred.retry_after_seconds) < 0.01
        owner, head = copy_of_pr42(sims)
        ref = PullRequestRef(owner, "api", 42)
        env, cand = event()
        accepted = await service.submit(env, cand)
        assert (accepted.outcome, accepted.reason) == (Outcome.ACCEPT, Reason.ADMITTED)
        await temporal_env.client.get_workflow_handle(accepted.workflow_id).terminate("test done")
    finally:
        await forge.aclose()
        engine.dispose()
