"""Reconcile trusts only its own comments: by the bot, with a marker signed under the server secret.

An attempt that reached the forge and died leaves its side effect ``in_flight``; the next attempt
pages through the pull request's comments before posting. Real parts: the agent workflow with
the real worker wiring, the forge simulator recording each comment's author per token, both
ledgers. Each test works on a pull request under an owner of its own.
"""

from __future__ import annotations

import httpx
import pytest
from sqlmodel import Session

import ledger
from activities.keys import marker_for, operation_key
from activities.markers import CommentMarks
from ledger import SideEffect, SideEffectLedger
from tests.support.agent_runs import copy_of_pr42, run_orders, work_order
from tests.support.sims import FORGE_TOKEN, settings_for

SECRET, OLD_SECRET, OTHER_SECRET = "marker-secret-current-0001", "marker-secret-retired-0001", "not-our-secret-000001"
MALLORY = "ghp_mallory_can_comment"


def _comment(sims, owner: str, body: str, token: str) -> dict:
    r = httpx.post(f"{sims.forge.base_url}/repos/{owner}/api/issues/42/comments", json={"body": body},
                   headers={"Authorization": f"token {token}"})
    return r.raise_for_status().json()


async def _run_after_a_crashed_attempt(sims, ledger_url, temporal_env, task_queue, planted: list[tuple[str, str]],
                                       **env: str):
    """Leave the post ``in_flight`` as a dead attempt would, plant ``planted`` (marker kind, author
    token) comments, run the order; returns (outcome, comments on the pull, side-effect row)."""
    sims.reset()
    sims.forge_ctl("POST", "/users", json={"token": MALLORY, "login": "mallory"})
    owner, head = copy_of_pr42(sims)
    settings = settings_for(sims, ledger_url, SLUICEGATE_MARKER_SECRET=SECRET,
                            SLUICEGATE__FORGE__MARKER_OLD_SECRETS=f"[{OLD_SECRET}]", **env)
    order = work_order(settings, owner=owner, version=head)
    op = operation_key(order.work_key, "post_review_comment", head)
    markers = {"unsigned": f"<!-- sluicegate:op={op} -->", "bad-signature": CommentMarks((OTHER_SECRET.encode(),),
                                                                                         "x").marker(op),
               "genuine": CommentMarks((SECRET.encode(),), "x").marker(op),
               "old-secret": CommentMarks((OLD_SECRET.encode(),), "x").marker(op)}
    engine = ledger.make_engine(ledger_url)
    try:
        SideEffectLedger(engine).begin(op, work_key=order.work_key, operation="post_review_comment",
                                       target_version=head, generation=order.generation)
        planted_ids = [_comment(sims, owner, f"LGTM\n{markers[kind]}", token)["id"] for kind, token in planted]
        [outcome] = (await run_orders(temporal_env.client, settings, task_queue, order)).orders
        with Session(engine) as s:
            effect = s.get(SideEffect, op)
    finally:
        engine.dispose()
    comments = [c for c in sims.comments() if c["owner"] == owner]
    return outcome, comments, effect, planted_ids, op


@pytest.mark.parametrize("planted", [
    [("unsigned", MALLORY)],          # a valid operation key, no signature, by another user
    [("bad-signature", MALLORY)],     # signed with a secret that is not ours
    [("genuine", MALLORY)],           # a correctly signed marker pasted by someone else
    [("unsigned", FORGE_TOKEN), ("bad-signature", FORGE_TOKEN)],  # by the bot's own account, not signed by us
], ids=["unsigned", "bad-signature", "genuine-by-another-user", "bot-account-unsigned"])
async def test_a_planted_marker_does_not_suppress_the_review(sims, ledger_url, temporal_env, task_queue, planted):
    outcome, comments, effect, planted_ids, op = await _run_after_a_crashed_attempt(
        sims, ledger_url, temporal_env, task_queue, planted)
    assert outcome.status == "done"
    [ours] = [c for c in comments if c["id"] not in planted_ids]
    assert ours["user"]["login"] == "sluicegate-bot" and marker_for(op) in ours["body"]
    assert CommentMarks((SECRET.encode(),), "sluicegate-bot").is_effect_of(ours, op)
    assert (effect.status, effect.external_id) == ("done", str(ours["id"]))
    assert len(comments) == len(planted) + 1


@pytest.mark.parametrize("kind", ["genuine", "old-secret"])
async def test_our_own_comment_is_reconciled_not_posted_again(sims, ledger_url, temporal_env, task_queue, kind):
    outcome, comments, effect, planted_ids, _ = await _run_after_a_crashed_attempt(
        sims, ledger_url, temporal_env, task_queue, [("unsigned", MALLORY), (kind, FORGE_TOKEN)])
    assert outcome.status == "done" and [c["id"] for c in comments] == planted_ids  # nothing new posted
    assert (effect.status, effect.external_id) == ("done", str(planted_ids[1]))


async def test_without_a_bot_login_nothing_is_trusted(sims, ledger_url, temporal_env, task_queue):
    outcome, comments, effect, planted_ids, _ = await _run_after_a_crashed_attempt(
        sims, ledger_url, temporal_env, task_queue, [("genuine", FORGE_TOKEN)], SLUICEGATE__FORGE__BOT_LOGIN="null")
    assert outcome.status == "done" and len(comments) == 2  # posted again: a duplicate, never a suppression
    assert effect.external_id != str(planted_ids[0])
