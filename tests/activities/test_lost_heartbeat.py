"""A stalled attempt (lost heartbeat) never mutates once a newer attempt has taken over.

Real parts: the forge simulator over HTTP, the SQL ledger, the real ``ForgeTools`` and
``ToolGateway`` run in Temporal's ``ActivityEnvironment`` with the attempt numbers the
server would give. The forge is told to answer attempt 2's comment listing late and
stale (computed before attempt 3 posts, delivered after) — exactly what a worker paused
past its heartbeat timeout sees when it wakes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid

import httpx
import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.gateway import ToolGateway
from activities.forge_tools import ForgeTools
from activities.keys import operation_key
from ledger import SideEffectLedger
from simulators import serve_in_thread
from simulators.forge import ForgeState, create_forge_app
from sluicegate.forge.client import ForgeClient
from workflows.contracts import ToolRequest
from workflows.review_task import POST_COMMENT


@pytest.fixture(scope="module")
def forge():
    with serve_in_thread(create_forge_app(ForgeState()), name="forge-sim-heartbeat") as server:
        yield server.base_url


def _env(attempt: int) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, attempt=attempt)
    return env


async def test_stalled_attempt_does_not_post_after_a_newer_attempt_took_over(forge, engine):
    httpx.post(f"{forge}/_sim/reset").raise_for_status()
    head = httpx.get(f"{forge}/repos/acme/api/pulls/42").json()["head"]["sha"]
    work_key = f"acme/github:acme/api#42:review:{uuid.uuid4().hex[:8]}"  # fresh key per ledger backend run
    req = ToolRequest(work_key, "acme", "acme", "api", 42, head, 1, "call-1", json.dumps({"body": "LGTM"}))
    ledger = SideEffectLedger(engine)
    op_key = operation_key(work_key, POST_COMMENT, head)
    # Attempt 1 began and its worker died before the post: the entry is in flight.
    assert ledger.begin(op_key, work_key=work_key, operation=POST_COMMENT, target_version=head,
                        generation=1).attempts == 1
    # Attempt 2's reconcile listing is computed now and delivered 1.5 s later (worker stalled).
    httpx.post(f"{forge}/_sim/faults", json={"method": "GET", "path": r".*/issues/42/comments",
                                             "after_commit": True, "hang_seconds": 1.5, "times": 1}
               ).raise_for_status()
    client = ForgeClient(forge, token=None)
    tools = ForgeTools(client, ToolGateway(ledger))
    try:
        stalled = asyncio.create_task(_env(2).run(tools.post_review_comment, req))
        await asyncio.sleep(0.3)  # attempt 2 holds a stale, empty listing
        fresh = await _env(3).run(tools.post_review_comment, req)  # Temporal's retry on another worker
        assert fresh.external_id is not None and not fresh.reconciled
        with pytest.raises(ApplicationError) as refused:
            await stalled
    finally:
        await client.aclose()
    assert refused.value.type == "LeaseLost"
    comments = [c for c in httpx.get(f"{forge}/_sim/comments").json() if op_key in c["body"]]
    assert [str(c["id"]) for c in comments] == [fresh.external_id]
    entry = ledger.get(op_key)
    assert (entry.status, entry.external_id, entry.attempts) == ("done", fresh.external_id, 3)


async def test_cancelled_attempt_does_not_post(forge, engine):
    """Temporal cancels an attempt whose heartbeat it rejects; a cancelled attempt never posts."""
    httpx.post(f"{forge}/_sim/reset").raise_for_status()
    head = httpx.get(f"{forge}/repos/acme/api/pulls/42").json()["head"]["sha"]
    work_key = f"acme/github:acme/api#42:review:{uuid.uuid4().hex[:8]}"
    req = ToolRequest(work_key, "acme", "acme", "api", 42, head, 1, "call-1", json.dumps({"body": "LGTM"}))
    ledger = SideEffectLedger(engine)
    op_key = operation_key(work_key, POST_COMMENT, head)
    ledger.begin(op_key, work_key=work_key, operation=POST_COMMENT, target_version=head, generation=1)
    httpx.post(f"{forge}/_sim/faults", json={"method": "GET", "path": r".*/issues/42/comments",
                                             "hang_seconds": 1.0, "times": 1}).raise_for_status()
    client = ForgeClient(forge, token=None)
    env = _env(2)
    try:
        task = asyncio.create_task(env.run(ForgeTools(client, ToolGateway(ledger)).post_review_comment, req))
        await asyncio.sleep(0.3)
        env.cancel()
        with pytest.raises(BaseException) as stopped:
            await task
    finally:
        await client.aclose()
    assert isinstance(stopped.value, (asyncio.CancelledError, ApplicationError))
    await asyncio.sleep(1.0)  # the listing the forge was holding has been answered by now
    assert [c for c in httpx.get(f"{forge}/_sim/comments").json() if op_key in c["body"]] == []
    assert ledger.get(op_key).status == "in_flight"  # the next attempt reconciles first
