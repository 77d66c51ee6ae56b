"""Model simulator: the reviewer policy as pure functions."""

from __future__ import annotations

import json
import re

from simulators.model._policy import decide, review_body, summarize_diff


def _expected_counts(diff: str) -> tuple[list[str], int]:
    """Independent oracle: files from '+++ b/' headers, net lines from hunk headers."""
    files = re.findall(r"^\+\+\+ b/(\S+)$", diff, re.M)
    hunks = re.findall(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@", diff, re.M)
    net = sum(int(new or 1) - int(old or 1) for old, new in hunks)
    return files, net


def test_summarize_diff_against_hunk_headers(fixture_pulls: dict) -> None:
    for raw in fixture_pulls.values():
        summary = summarize_diff(raw["diff"])
        files, net = _expected_counts(raw["diff"])
        assert list(summary.files) == files
        assert summary.added - summary.removed == net
        plus = [line for line in raw["diff"].splitlines() if line.startswith("+") and not line.startswith("+++")]
        assert summary.added == len(plus)


def test_review_mentions_files_counts_and_an_observation(fixture_pulls: dict) -> None:
    for raw in fixture_pulls.values():
        body = review_body(raw["diff"])
        summary = summarize_diff(raw["diff"])
        assert all(f in body for f in summary.files)
        assert f"+{summary.added}/-{summary.removed}" in body
        assert "Observation: " in body


def test_observations_follow_the_diff_content(fixture_pulls: dict) -> None:
    todo = review_body(fixture_pulls[("acme", "api", 42)]["diff"])
    assert "TODO" in todo and "api/routes/orders.py" in todo
    assert "dependency" in review_body(fixture_pulls[("acme", "api", 43)]["diff"])
    assert "no tests" in review_body(fixture_pulls[("acme", "web", 7)]["diff"])
    assert "tests accompany" in review_body(fixture_pulls[("acme", "api", 44)]["diff"])
    assert "empty" in review_body("")


def _tools(*names: str) -> list[dict]:
    return [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in names]


def _answer(messages: list[dict], reply, content: str) -> list[dict]:
    call = reply.tool_calls[0]
    return [*messages, {"role": "assistant", "content": None, "tool_calls": reply.tool_calls},
            {"role": "tool", "tool_call_id": call["id"], "content": content}]  # fmt: skip


def test_full_sequence(fixture_pulls: dict) -> None:
    diff = fixture_pulls[("acme", "api", 44)]["diff"]
    tools = _tools("get_pull_request_diff", "post_review_comment")
    messages = [{"role": "user", "content": "review acme/api#44"}]
    first = decide(messages, tools)
    assert first.finish_reason == "tool_calls"
    assert first.tool_calls[0]["function"] == {"name": "get_pull_request_diff", "arguments": "{}"}
    messages = _answer(messages, first, diff)
    second = decide(messages, tools)
    assert second.tool_calls[0]["function"]["name"] == "post_review_comment"
    assert json.loads(second.tool_calls[0]["function"]["arguments"]) == {"body": review_body(diff)}
    messages = _answer(messages, second, '{"id": 1}')
    final = decide(messages, tools)
    assert (final.content, final.tool_calls, final.finish_reason) == ("Review posted.", [], "stop")
    assert first.reasoning_tokens > final.reasoning_tokens


def test_diff_result_may_be_json_with_diff_field(fixture_pulls: dict) -> None:
    diff = fixture_pulls[("acme", "web", 7)]["diff"]
    tools = _tools("get_pull_request_diff", "post_review_comment")
    messages = [{"role": "user", "content": "review"}]
    messages = _answer(messages, decide(messages, tools), json.dumps({"diff": diff, "head_sha": "x"}))
    body = json.loads(decide(messages, tools).tool_calls[0]["function"]["arguments"])["body"]
    assert body == review_body(diff)


def test_no_review_tools_gives_plain_answer() -> None:
    messages = [{"role": "user", "content": "hello there"}]
    for tools, choice in ((None, None), (_tools("search"), None), (_tools("get_pull_request_diff"), "none")):
        reply = decide(messages, tools, choice)
        assert reply.finish_reason == "stop" and reply.tool_calls == []
        assert f"{len('hello there')} characters" in reply.content


def test_forced_tool_choice() -> None:
    tools = _tools("get_pull_request_diff", "post_review_comment")
    choice = {"type": "function", "function": {"name": "post_review_comment"}}
    reply = decide([{"role": "user", "content": "x"}], tools, choice)
    assert reply.tool_calls[0]["function"]["name"] == "post_review_comment"


def test_without_post_tool_the_review_is_the_answer(fixture_pulls: dict) -> None:
    diff = fixture_pulls[("acme", "api", 43)]["diff"]
    tools = _tools("get_pull_request_diff")
    messages = [{"role": "user", "content": "review"}]
    messages = _answer(messages, decide(messages, tools), diff)
    assert decide(messages, tools).content == review_body(diff)


def test_tool_call_ids_are_deterministic_and_conversation_specific() -> None:
    tools = _tools("get_pull_request_diff", "post_review_comment")
    a = decide([{"role": "user", "content": "review #1"}], tools).tool_calls[0]["id"]
    again = decide([{"role": "user", "content": "review #1"}], tools).tool_calls[0]["id"]
    b = decide([{"role": "user", "content": "review #2"}], tools).tool_calls[0]["id"]
    assert a == again != b
    assert re.fullmatch(r"call_[0-9a-f]{24}", a)
