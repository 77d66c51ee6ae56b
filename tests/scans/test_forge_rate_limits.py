"""GitHub rate limits on the scan listing and the goal observation: retried after the server's delay.

On the dev server (its histories record each attempt's last failure and the delay it asked for),
with the forge simulator answering the limits as GitHub does.
"""

from __future__ import annotations

import uuid

from sluicegate.forge.retry_after import JITTER_FRACTION
from tests.scans.conftest import agent_results, running_worker
from tests.support.histories import last_attempts
from workflows.scan_contracts import (
    GOAL_OBSERVE_ACTIVITY, GOAL_WORKFLOW, SCAN_LIST_ACTIVITY, SCAN_WORKFLOW, GoalCondition, GoalRequest, GoalResult,
    ScanRequest, ScanResult,
)

PR44_HEAD = "bfc1b2c6a7697af60a9acbd1352b4c663a990925"


async def test_scan_listing_waits_out_a_secondary_limit(dev_env, dev_ctx, sims):
    ctx, client = dev_ctx, dev_env.client
    sims.forge_ctl("POST", "/rate_limits/inject", json={"kind": "secondary", "method": "GET", "status": 429,
                                                        "path": f"/repos/{ctx.owner}/api/pulls$", "retry_after": 1})
    req = ScanRequest(scan_id=f"t-{uuid.uuid4().hex[:8]}", tenant="acme", repos=[ctx.repo("api")])
    async with running_worker(client, ctx, search_attributes=True):
        handle = await client.start_workflow(SCAN_WORKFLOW, req, id=f"scan/{req.scan_id}", task_queue=ctx.task_queue,
                                             result_type=ScanResult)
        result = await handle.result()
        await agent_results(client, [d.workflow_id for d in result.decisions])
        history = await handle.fetch_history()
    assert result.candidates == 2 and {d.outcome for d in result.decisions} == {"accept"}
    [listing] = last_attempts(history, SCAN_LIST_ACTIVITY)
    assert (listing.attempt, listing.failure_type) == (2, "ForgeRateLimited")
    assert 1.0 <= listing.next_retry_delay.total_seconds() <= 1.0 + JITTER_FRACTION
    assert sims.forge_ctl("GET", "/rate_limits").json()["refusals"] == {"secondary": 1}


async def test_goal_observation_waits_out_a_primary_limit(dev_env, dev_ctx, sims):
    ctx, client = dev_ctx, dev_env.client
    sims.forge_ctl("POST", "/rate_limits/inject", json={"kind": "primary", "method": "GET",
                                                        "path": f"/repos/{ctx.owner}/api/pulls/44$",
                                                        "reset_in_seconds": 2})
    req = GoalRequest(tenant="acme", owner=ctx.owner, repo="api", number=44, condition=GoalCondition("head", PR44_HEAD),
                      poll_seconds=1, max_polls=3, deadline_seconds=120)
    async with running_worker(client, ctx, search_attributes=True):
        handle = await client.start_workflow(GOAL_WORKFLOW, req, id=f"goal/{uuid.uuid4().hex[:8]}",
                                             task_queue=ctx.task_queue, result_type=GoalResult)
        result = await handle.result()
        await agent_results(client, [result.decision.workflow_id])
        history = await handle.fetch_history()
    assert (result.met, result.polls) == (True, 1)  # the one poll was retried, not counted as a miss
    [observe] = last_attempts(history, GOAL_OBSERVE_ACTIVITY)
    assert (observe.attempt, observe.failure_type) == (2, "ForgeRateLimited")
    assert "API rate limit exceeded" in observe.message
    assert 1.5 <= observe.next_retry_delay.total_seconds() <= 3.0 * (1 + JITTER_FRACTION)
