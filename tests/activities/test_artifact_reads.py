"""``read_artifact``: bounded reads of an artifact, only by the work item (and tenant) that stored it.

Real parts: the artifact store on disk (plain and sealed with payload keys), the real
``ArtifactTools`` activity in Temporal's ``ActivityEnvironment``, kills in the SQL ledger (SQLite
and PostgreSQL), and the model simulator's reviewer policy reading a stored diff in parts.
"""

from __future__ import annotations

import json
import uuid

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.artifact_tools import ArtifactTools, ReadArgs, excerpt, parse_read_args
from activities.artifacts import ArtifactStore
from ledger import KillSwitch
from simulators.model._policy import decide
from workflows.contracts import ToolRequest
from workflows.review_task import TOOLS, TOOLS_WITH_READ

BIG = "diff --git a/big.py b/big.py\n@@ -0,0 +1,700 @@\n" + "".join(f"+line {i} of a generated file\n" for i in range(700))


def _keys(*texts: str):
    from sluicegate.temporal.codec import PayloadKeys, parse_key

    return PayloadKeys(parse_key(texts[0]), [parse_key(t) for t in texts[1:]])


def _req(tenant: str, number: int, arguments: dict | str) -> ToolRequest:
    key = f"{tenant}/github:acme/api#{number}:review"
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolRequest(key, tenant, "acme", "api", number, "v1", 1, "call-1", args)


def _scope(req: ToolRequest) -> tuple[str, str]:
    return req.tenant, req.work_key


async def _read(tools: ArtifactTools, req: ToolRequest) -> str:
    return (await ActivityEnvironment().run(tools.read_artifact, req)).content


@pytest.mark.parametrize("sealed", [False, True], ids=["plain", "sealed"])
async def test_a_large_artifact_is_read_back_in_bounded_parts(tmp_path, sealed):
    from sluicegate.temporal.codec import new_key

    keys = _keys(new_key()) if sealed else None
    store = ArtifactStore(tmp_path, keys)
    owner = _req("acme", 1, "{}")
    handle = store.put(BIG.encode(), _scope(owner))
    if sealed:
        stored = (tmp_path / handle[-64:][:2] / handle[-64:]).read_bytes()
        assert stored.startswith(b"SGA1") and b"generated file" not in stored
    tools = ArtifactTools(store, max_chars=5000)
    parts, offset = [], 0
    while True:
        answer = await _read(tools, _req("acme", 1, {"handle": handle, "offset": offset, "length": 50_000}))
        header, _, text = answer.partition("\n")
        assert header.startswith(f"[{handle} characters {offset}-") and len(text) <= 5000  # clamped to the max
        parts.append(text)
        offset += len(text)
        if header.endswith("end of artifact]"):
            break
        assert header.endswith(f"next offset {offset}]")
    assert "".join(parts) == BIG and len(parts) == -(-len(BIG) // 5000)
    past = await _read(tools, _req("acme", 1, {"handle": handle, "offset": len(BIG)}))
    assert past == f"error: offset {len(BIG)} is past the end of {handle} ({len(BIG)} characters)"


async def test_a_handle_of_another_work_item_or_tenant_is_refused_as_a_tool_answer(tmp_path):
    store = ArtifactStore(tmp_path)
    handle = store.put(BIG.encode(), _scope(_req("acme", 1, "{}")))
    store.put(b"beta's own", _scope(_req("beta", 1, "{}")))
    tools = ArtifactTools(store, max_chars=1000)
    assert (await _read(tools, _req("acme", 1, {"handle": handle, "offset": 0}))).startswith(f"[{handle}")
    unknown = "artifact:sha256:" + "0" * 64
    refusals = {
        "same pull request, other tenant": (_req("beta", 1, {"handle": handle, "offset": 0}), handle),
        "same tenant, other work item": (_req("acme", 2, {"handle": handle, "offset": 0}), handle),
        "never stored": (_req("acme", 1, {"handle": unknown, "offset": 0}), unknown),
    }
    for what, (req, asked) in refusals.items():
        assert await _read(tools, req) == f"error: no artifact {asked} was stored for this work item", what
    # The same content stored by beta's own run: one file, and now beta holds a grant of its own.
    assert store.put(BIG.encode(), _scope(_req("beta", 1, "{}"))) == handle
    assert (await _read(tools, _req("beta", 1, {"handle": handle, "offset": 0}))).startswith(f"[{handle}")
    assert await _read(tools, _req("acme", 2, {"handle": handle, "offset": 0})) == (
        f"error: no artifact {handle} was stored for this work item")


@pytest.mark.parametrize("arguments, message", [
    ("not json", "error: read_artifact arguments are not JSON"),
    ("[1]", "error: read_artifact arguments must be an object"),
    ({"offset": 0}, "error: 'handle' must be an artifact handle"),
    ({"handle": "artifact:sha256:../../etc/passwd", "offset": 0}, "error: 'handle' must be an artifact handle"),
    ({"handle": "artifact:sha256:" + "a" * 64, "offset": -1}, "error: 'offset' must be a non-negative integer"),
    ({"handle": "artifact:sha256:" + "a" * 64, "offset": True}, "error: 'offset' must be a non-negative integer"),
    ({"handle": "artifact:sha256:" + "a" * 64, "offset": 0, "length": 0}, "error: 'length' must be a positive"),
])
async def test_bad_arguments_are_answered_not_raised(tmp_path, arguments, message):
    answer = await _read(ArtifactTools(ArtifactStore(tmp_path)), _req("acme", 1, arguments))
    assert answer.startswith(message)


async def test_a_sealed_artifact_without_its_key_is_answered_unreadable(tmp_path):
    from sluicegate.temporal.codec import new_key

    owner = _req("acme", 1, "{}")
    handle = ArtifactStore(tmp_path, _keys(new_key())).put(BIG.encode(), _scope(owner))
    other_key = ArtifactTools(ArtifactStore(tmp_path, _keys(new_key())))
    answer = await _read(other_key, _req("acme", 1, {"handle": handle, "offset": 0}))
    assert answer == f"error: artifact {handle} cannot be read on this worker (PayloadKeyError)"
    (tmp_path / handle[-64:][:2] / handle[-64:]).unlink()  # pruned by retention meanwhile
    gone = await _read(ArtifactTools(ArtifactStore(tmp_path)), _req("acme", 1, {"handle": handle, "offset": 0}))
    assert gone == f"error: artifact {handle} is no longer stored (retention)"


async def test_a_read_refuses_while_a_kill_is_in_force(engine, tmp_path):
    tenant = f"k{uuid.uuid4().hex[:8]}"
    req = _req(tenant, 7, "{}")
    handle = ArtifactStore(tmp_path).put(BIG.encode(), _scope(req))
    kills = KillSwitch(engine)
    tools = ArtifactTools(ArtifactStore(tmp_path), kills)
    read = _req(tenant, 7, {"handle": handle, "offset": 0})
    assert (await _read(tools, read)).startswith(f"[{handle}")
    kills.kill("tenant", tenant, "test", "stop reading")
    with pytest.raises(ApplicationError) as refused:
        await _read(tools, read)
    assert refused.value.type == "Killed" and refused.value.non_retryable


def test_excerpt_and_argument_bounds():
    handle = "artifact:sha256:" + "b" * 64
    assert parse_read_args(json.dumps({"handle": handle, "offset": 3}), 10) == ReadArgs(handle, 3, 10)
    assert excerpt("abcdefghij", ReadArgs(handle, 8, 10)) == f"[{handle} characters 8-10 of 10; end of artifact]\nij"


def test_the_simulated_reviewer_reads_a_stored_diff_in_parts_then_reviews_all_of_it():
    handle = "artifact:sha256:" + "c" * 64
    stored = (f"[diff stored as {handle}: 1 files changed, +700/-0 lines; {len(BIG)} characters. First 4000 below; "
              f"read the rest with read_artifact(handle, offset, length), at most 9000 characters a call:]\n"
              + BIG[:4000])
    messages: list[dict] = [{"role": "user", "content": "Review it."}]

    def step() -> tuple[str, dict]:
        [call] = decide(messages, TOOLS_WITH_READ).tool_calls
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        return call["function"]["name"], json.loads(call["function"]["arguments"]) | {"id": call["id"]}

    def answer(call_id: str, content: str) -> None:
        messages.append({"role": "tool", "tool_call_id": call_id, "content": content})

    name, args = step()
    assert name == "get_pull_request_diff"
    answer(args["id"], stored)
    offsets = []
    while (called := step())[0] == "read_artifact":
        args = called[1]
        assert (args["handle"], args["length"]) == (handle, 9000)
        offsets.append(args["offset"])
        answer(args["id"], excerpt(BIG, ReadArgs(handle, args["offset"], args["length"])))
    name, args = called
    assert offsets == list(range(4000, len(BIG), 9000))
    assert name == "post_review_comment"
    body = args["body"]
    assert "+700/-0 lines" in body  # the whole diff, not the preview's first lines
    # Without read_artifact offered the reviewer reviews the preview it has (the pre-patch behaviour).
    old = decide(messages[:3], TOOLS)
    assert "+700/-0" not in json.loads(old.tool_calls[0]["function"]["arguments"])["body"]
