"""Every tool refuses while a kill is in force, reads included: ``get_pull_request_diff`` and
``read_artifact`` as well as ``post_review_comment`` raise the non-retryable ``Killed`` answer the
agent loop turns into a ``killed`` run, before the forge is touched; after the unkill the read works.

Real parts: the tool activities in Temporal's ``ActivityEnvironment``, the forge simulator over
HTTP (its read counter proves "not touched"), kills and the side-effect ledger in SQL (both backends).
"""

from __future__ import annotations

import json
import uuid

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.artifact_tools import ArtifactTools
from activities.artifacts import ArtifactStore
from activities.forge_tools import ForgeTools
from activities.gateway import ToolGateway
from ledger import KillSwitch, SideEffectLedger
from sluicegate.forge.client import ForgeClient
from tests.support.sims import FORGE_TOKEN
from workflows.contracts import ToolRequest


def _reads(sims, owner: str, repo: str) -> int:
    return sims.forge_ctl("GET", "/stats").json()["by_repository"].get(f"{owner}/{repo}".lower(), 0)


@pytest.mark.parametrize("scope", ["work_key", "tenant", "all"])
async def test_every_tool_refuses_while_killed_and_the_diff_reads_again_after_unkill(engine, sims, tmp_path, scope):
    tenant, repo = f"k{uuid.uuid4().hex[:6]}", f"r{uuid.uuid4().hex[:8]}"
    sims.forge_ctl("POST", f"/pulls/{tenant}/{repo}/3", json={"head_sha": "cd" * 20})
    work_key = f"{tenant}/github:{tenant}/{repo}#3:review"
    req = ToolRequest(work_key, tenant, tenant, repo, 3, "cd" * 20, 1, "call-1", json.dumps({"body": "LGTM"}))
    client = ForgeClient(sims.forge.base_url, FORGE_TOKEN, timeout_seconds=5)
    kills = KillSwitch(engine)
    tools = ForgeTools(client, ToolGateway(SideEffectLedger(engine), kills))
    artifacts = ArtifactTools(ArtifactStore(tmp_path), kills)
    target = {"work_key": work_key, "tenant": tenant, "all": "*"}[scope]
    kills.kill(scope, target, "alice", "stop everything it does")
    try:
        for tool in (tools.get_pull_request_diff, tools.post_review_comment, artifacts.read_artifact):
            with pytest.raises(ApplicationError) as refused:
                await ActivityEnvironment().run(tool, req)
            assert (refused.value.type, refused.value.non_retryable) == ("Killed", True), tool
            assert "killed by alice" in str(refused.value)
        assert _reads(sims, tenant, repo) == 0
    finally:
        kills.unkill(scope, target, "carol", "resume")
    try:
        diff = await ActivityEnvironment().run(tools.get_pull_request_diff, req)
    finally:
        await client.aclose()
    assert diff.content and _reads(sims, tenant, repo) == 1
