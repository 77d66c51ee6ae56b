"""A large diff is stored as an artifact and read back by the model in parts, through the real
stack: Temporal, the real worker wiring, the forge and model simulators over HTTP. The simulated
reviewer reads the handle with ``read_artifact`` until it has the whole diff, and its review counts
every line — the preview alone holds a fraction of them. Plain and sealed (payload-key) stores."""

from __future__ import annotations

import base64
import json
from contextlib import AsyncExitStack

import pytest

import ledger
from activities.artifacts import ArtifactStore
from tests.support.agent_runs import start_order, work_order
from tests.support.sims import settings_for
from worker import create_worker
from workflows.contracts import TaskBudget
from workflows.names import MODEL_ACTIVITY

LINES = 2000
BIG = (f"diff --git a/big.py b/big.py\n@@ -0,0 +1,{LINES} @@\n"
       + "".join(f"+line {i} of a generated file\n" for i in range(LINES)))
READ_MAX = 20_000


def _tool_results(history_json: str) -> list[str]:
    """Every tool message the model was sent, from the last model request in the history."""
    requests = [e for e in json.loads(history_json)["events"] if e.get("eventType") == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"
                and e["activityTaskScheduledEventAttributes"]["activityType"]["name"] == MODEL_ACTIVITY]
    payload = requests[-1]["activityTaskScheduledEventAttributes"]["input"]["payloads"][0]["data"]
    messages = json.loads(base64.b64decode(payload))["messages"]
    return [m["content"] for m in messages if m["role"] == "tool"]


@pytest.mark.parametrize("sealed", [False, True], ids=["plain", "sealed"])
async def test_a_large_diff_is_stored_and_read_in_parts_by_the_model(temporal_env, sims, tmp_path, task_queue,
                                                                      sealed):
    from sluicegate.temporal.codec import new_key

    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    extra = {"SLUICEGATE_PAYLOAD_KEY": new_key()} if sealed else {}
    settings = settings_for(sims, url, SLUICEGATE__ARTIFACTS__INLINE_LIMIT_CHARS="500",
                            SLUICEGATE__ARTIFACTS__READ_MAX_CHARS=str(READ_MAX),
                            SLUICEGATE__ARTIFACTS__DIR=str(tmp_path / "artifacts"), **extra)
    sims.forge_ctl("POST", "/pulls/acme/api/42", json={"diff": BIG})
    order = work_order(settings, budget=TaskBudget(max_steps=10, max_total_tokens=400_000, max_usd=5.0))
    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue):
            handle = await start_order(temporal_env.client, task_queue, order)
            [outcome] = (await handle.result()).orders
            history = (await handle.fetch_history()).to_json()

    reads = -(-(len(BIG) - 4000) // READ_MAX)
    assert (outcome.status, outcome.steps) == ("done", 1 + reads + 2)  # diff, the reads, post, final answer
    [comment] = sims.comments()
    assert f"+{LINES}/-0 lines" in comment["body"]  # the review saw every line, not just the preview

    [stored] = [p for p in (tmp_path / "artifacts").rglob("*") if p.is_file() and "grants" not in p.parts]
    assert stored.read_bytes().startswith(b"SGA1") == sealed
    artifact = "artifact:sha256:" + stored.name
    assert ArtifactStore(tmp_path / "artifacts", _keys(settings)).get(artifact) == BIG.encode()

    diff_result, *read_results, posted = _tool_results(history)
    assert diff_result.startswith(f"[diff stored as {artifact}") and f"line {LINES - 1} " not in diff_result
    assert len(read_results) == reads and all(r.startswith(f"[{artifact} characters ") for r in read_results)
    assert all(len(r.partition("\n")[2]) <= READ_MAX for r in read_results)
    assert diff_result.partition("\n")[2] + "".join(r.partition("\n")[2] for r in read_results) == BIG
    assert posted.startswith("comment posted")


def _keys(settings):
    from sluicegate.temporal.client import payload_keys

    return payload_keys(settings)
