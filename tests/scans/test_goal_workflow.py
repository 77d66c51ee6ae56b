"""GoalWorkflow under time skipping: the condition holds after N polls (intake runs), or a bound ends it."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from temporalio.client import WorkflowFailureError

from tests.scans.conftest import agent_results, eventually, running_worker
from workflows.scan_contracts import (
    GOAL_BOUND_REACHED, GOAL_PROGRESS_QUERY, GOAL_WORKFLOW, GoalCondition, GoalRequest, GoalResult,
)

PR44_HEAD = "bfc1b2c6a7697af60a9acbd1352b4c663a990925"
FIX_HEAD = "c0ffee00" * 5


def _unit(env) -> float:
    """The poll interval: a minute under time skipping, a second on a real-time server (--temporal-env)."""
    return 60.0 if env.supports_time_skipping else 1.0


def _goal(ctx, condition: GoalCondition, **kw) -> GoalRequest:
    return GoalRequest(**{"tenant": "acme", "owner": ctx.owner, "repo": "api", "number": 44, "condition": condition,
                          "poll_seconds": 60, "max_polls": 10, "deadline_seconds": 3600, **kw})


async def _start(client, ctx, req: GoalRequest):
    return await client.start_workflow(GOAL_WORKFLOW, req, id=f"goal/{uuid.uuid4().hex[:8]}",
                                       task_queue=ctx.task_queue, result_type=GoalResult)


async def _polls(handle) -> int:
    return (await handle.query(GOAL_PROGRESS_QUERY))["polls"]


async def test_condition_met_after_three_polls_runs_intake_once(temporal_env, ctx, sims):
    client = temporal_env.client
    poll = _unit(temporal_env)
    async with running_worker(client, ctx, search_attributes=False):
        handle = await _start(client, ctx, _goal(ctx, GoalCondition("head", FIX_HEAD), poll_seconds=poll))
        await eventually(lambda: _polls_at_least(handle, 1))
        await temporal_env.sleep(timedelta(seconds=poll + 1))
        await eventually(lambda: _polls_at_least(handle, 2))
        assert sims.model_stats()["calls"] == 0  # nothing admitted while the condition does not hold
        ctx.push("api", 44, head_sha=FIX_HEAD)  # the awaited push
        result = await handle.result()
        assert (result.met, result.polls, result.bound) == (True, 3, None)
        d = result.decision
        assert (d.outcome, d.reason, d.work_key, d.input_version) == ("accept", "admitted", ctx.key("api", 44),
                                                                      FIX_HEAD)
        [run] = await agent_results(client, [d.workflow_id])
    assert [(o.input_version, o.status) for o in run.orders] == [(FIX_HEAD, "done")]
    [receipt] = ctx.receipts(source="goal")
    assert (receipt.id, receipt.trigger_kind, receipt.event_type, receipt.outcome) == (
        result.receipt_id, "goal", "goal.head", "accept")
    assert sims.model_stats()["calls"] == 3


async def _polls_at_least(handle, n: int) -> bool:
    return await _polls(handle) >= n


async def test_max_polls_bound_ends_with_a_no_work_receipt_and_no_model_call(temporal_env, ctx, sims):
    client = temporal_env.client
    async with running_worker(client, ctx, search_attributes=False):
        result = await client.execute_workflow(
            GOAL_WORKFLOW, _goal(ctx, GoalCondition("comment", "/sluicegate review"), max_polls=3,
                                 poll_seconds=_unit(temporal_env)),
            id=f"goal/{uuid.uuid4().hex[:8]}", task_queue=ctx.task_queue, result_type=GoalResult)
    assert (result.met, result.polls, result.bound, result.decision) == (False, 3, "max-polls", None)
    [receipt] = ctx.receipts(source="goal")
    assert (receipt.id, receipt.outcome, receipt.reason, receipt.work_key, receipt.trigger_kind) == (
        result.receipt_id, "no-work", GOAL_BOUND_REACHED, ctx.key("api", 44), "goal")
    assert "after 3 polls (max-polls reached" in receipt.message and "no comment contains" in receipt.message
    assert sims.model_stats()["calls"] == 0
    assert sims.forge_ctl("GET", "/stats").json()["requests"]["GET /repos/{owner}/{repo}/pulls/{number}"] == 3


async def test_deadline_bound_observes_last_at_the_deadline(temporal_env, ctx, sims):
    client = temporal_env.client
    async with running_worker(client, ctx, search_attributes=False):
        unit = _unit(temporal_env)
        handle = await _start(client, ctx, _goal(ctx, GoalCondition("ready"), max_polls=100, poll_seconds=unit,
                                                 deadline_seconds=2.5 * unit))
        ctx.push("api", 44, title="WIP: fix pagination")
        result = await handle.result()
        history = await handle.fetch_history()
    # Polls at 0, 1, 2 units and a last one at the 2.5-unit deadline; then the bound.
    assert (result.met, result.polls, result.bound) == (False, 4, "deadline")
    assert "title is 'WIP: fix pagination'" in result.last_observation
    timers = [e.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta() for e in history.events
              if e.HasField("timer_started_event_attributes")]
    # (the last sleep is what is left of the deadline after the polls' own time)
    poll = timedelta(seconds=unit)
    assert timers[:2] == [poll] * 2 and timedelta(0) < timers[2] <= poll / 2
    assert len(timers) == 3 and sum(timers, timedelta()) <= 2.5 * poll
    [receipt] = ctx.receipts(source="goal")
    assert (receipt.outcome, receipt.reason) == ("no-work", GOAL_BOUND_REACHED) and "deadline reached" in receipt.message


async def test_comment_by_someone_else_meets_the_goal_but_our_own_does_not(temporal_env, ctx, sims):
    client = temporal_env.client
    forge = sims.forge.base_url
    import httpx

    def comment(body: str) -> None:
        httpx.post(f"{forge}/repos/{ctx.owner}/api/issues/44/comments", json={"body": body},
                   headers={"Authorization": "Bearer test-forge-token"}).raise_for_status()

    from activities.keys import operation_key
    from activities.markers import CommentMarks

    ours = CommentMarks.from_forge_config(ctx.settings.forge).marker(operation_key(ctx.key("api", 44), "x", "y"))
    comment(f"earlier review, please /sluicegate review\n{ours}")  # our own (bot, signed marker): ignored
    async with running_worker(client, ctx, search_attributes=False):
        handle = await _start(client, ctx, _goal(ctx, GoalCondition("comment", "/sluicegate review"),
                                                 poll_seconds=_unit(temporal_env)))
        await eventually(lambda: _polls_at_least(handle, 1))
        comment("LGTM, /sluicegate review please")
        result = await handle.result()
        await agent_results(client, [result.decision.workflow_id])
    assert result.met and result.polls == 2 and result.decision.input_version == PR44_HEAD


async def test_unbounded_goal_is_refused(temporal_env, ctx):
    client = temporal_env.client
    async with running_worker(client, ctx, search_attributes=False):
        with pytest.raises(WorkflowFailureError) as err:
            await client.execute_workflow(GOAL_WORKFLOW, _goal(ctx, GoalCondition("head"), max_polls=0),
                                          id=f"goal/{uuid.uuid4().hex[:8]}", task_queue=ctx.task_queue)
    message = str(err.value.cause)
    assert "max_polls must be at least 1" in message and "needs a value" in message
    assert ctx.receipts() == []


async def test_a_sleeping_goal_ends_when_it_wakes_to_a_kill(temporal_env, ctx, sims):
    from ledger import KillSwitch

    client = temporal_env.client
    poll = _unit(temporal_env)
    async with running_worker(client, ctx, search_attributes=False):
        handle = await _start(client, ctx, _goal(ctx, GoalCondition("head", FIX_HEAD), poll_seconds=poll))
        await eventually(lambda: _polls_at_least(handle, 1))  # now asleep until the next poll
        KillSwitch(ctx.engine).kill("tenant", "acme", "alice", "freeze all acme work")
        try:
            result = await handle.result()
        finally:
            KillSwitch(ctx.engine).unkill("tenant", "acme", "alice", "test over")
    assert (result.met, result.bound, result.polls) == (False, "killed", 2)
    assert "freeze all acme work" in result.last_observation
    assert sims.model_stats()["calls"] == 0


async def test_a_goal_outside_its_tenants_scope_never_reads_the_forge(temporal_env, ctx, sims):
    """`goal start` refuses it; a watch started some other way only observes "not in scope" until its bound."""
    outside = f"globex{uuid.uuid4().hex[:6]}"
    sims.forge_ctl("POST", f"/pulls/{outside}/api/44", json={"head_sha": PR44_HEAD})
    req = _goal(ctx, GoalCondition("ready"), owner=outside, max_polls=2, poll_seconds=_unit(temporal_env))
    async with running_worker(temporal_env.client, ctx, search_attributes=False):
        result = await (await _start(temporal_env.client, ctx, req)).result()
    assert (result.met, result.polls, result.bound) == (False, 2, "max-polls")
    assert "is not in tenant 'acme''s scope (not read)" in result.last_observation
    assert sims.forge_ctl("GET", "/stats").json()["by_repository"].get(f"{outside}/api", 0) == 0
    [receipt] = ctx.receipts(source="goal")
    assert (receipt.reason, receipt.work_key) == (GOAL_BOUND_REACHED, f"acme/github:{outside}/api#44:review")


async def _an_activity_in_flight(handle) -> bool:
    return bool((await handle.describe()).raw_description.pending_activities)


async def test_a_cancel_that_reaches_an_observation_in_flight_ends_the_goal(temporal_env, ctx, sims):
    """Found by an adversarial review (session 17): the goal took a cancel reaching its observation
    for a failed observation, slept, polled again and, the condition holding, admitted work.
    Now (patch ``goal-scan-honour-cancel``) the goal ends cancelled: no intake, no model call."""
    from temporalio.client import WorkflowExecutionStatus

    client = temporal_env.client
    sims.forge_ctl("POST", "/faults", json={"method": "GET", "path": f"{ctx.owner}/api/pulls/44$",
                                            "hang_seconds": 30, "times": 1})  # the first observation hangs
    async with running_worker(client, ctx, search_attributes=False):
        handle = await _start(client, ctx, _goal(ctx, GoalCondition("ready"), poll_seconds=_unit(temporal_env)))
        await eventually(lambda: _an_activity_in_flight(handle))
        await handle.cancel()
        with pytest.raises(WorkflowFailureError):
            await handle.result()
        assert (await handle.describe()).status == WorkflowExecutionStatus.CANCELED
        assert await _polls(handle) == 0
    assert ctx.receipts(source="goal") == [] and sims.model_stats()["calls"] == 0
