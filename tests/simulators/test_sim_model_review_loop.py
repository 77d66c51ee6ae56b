"""Model simulator driven by the real openai client, tools executed on the forge simulator."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import openai

SYSTEM = (
    "You are a careful code reviewer. Fetch the diff of the pull request, review it, "
    "then post exactly one review comment. Be concise and specific. " * 3
)


async def _review(client: openai.AsyncOpenAI, forge: httpx.Client, tools: list, repo: str, number: int) -> list:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Review {repo}#{number}."},
    ]
    responses = []
    for _ in range(5):
        response = await client.chat.completions.create(model="sim-reviewer-1", messages=messages, tools=tools)
        responses.append(response)
        choice = response.choices[0]
        if choice.finish_reason == "stop":
            return responses
        messages.append(choice.message.model_dump(exclude_none=True))
        for call in choice.message.tool_calls or []:
            if call.function.name == "get_pull_request_diff":
                accept = {"Accept": "application/vnd.github.diff"}
                result = forge.get(f"/repos/{repo}/pulls/{number}", headers=accept).text
            else:
                posted = forge.post(f"/repos/{repo}/issues/{number}/comments", json=json.loads(call.function.arguments))
                result = json.dumps({"id": posted.json()["id"], "status": posted.status_code})
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise AssertionError("reviewer did not finish")


async def test_review_loop_posts_a_review_of_the_real_diff(
    model_client: openai.AsyncOpenAI, forge_http: httpx.Client, reviewer_tools: list, fixture_pulls: dict
) -> None:
    responses = await _review(model_client, forge_http, reviewer_tools, "acme/api", 42)
    reasons = [r.choices[0].finish_reason for r in responses]
    assert reasons == ["tool_calls", "tool_calls", "stop"]
    assert [r.choices[0].message.tool_calls[0].function.name for r in responses[:2]] == [
        "get_pull_request_diff",
        "post_review_comment",
    ]
    assert responses[-1].choices[0].message.content == "Review posted."
    comments = forge_http.get("/_sim/comments").json()
    assert len(comments) == 1 and (comments[0]["repo"], comments[0]["number"]) == ("api", 42)
    diff = fixture_pulls[("acme", "api", 42)]["diff"]
    for path in re.findall(r"^diff --git a/\S+ b/(\S+)$", diff, re.M):
        assert path in comments[0]["body"]


async def test_response_shape_and_usage(
    model_client: openai.AsyncOpenAI, forge_http: httpx.Client, reviewer_tools: list
) -> None:
    responses = await _review(model_client, forge_http, reviewer_tools, "acme/web", 7)
    ids = set()
    for response in responses:
        assert response.object == "chat.completion" and response.id.startswith("chatcmpl-")
        assert response.model == "sim-reviewer-1" and response.system_fingerprint == "fp_sim"
        ids.add(response.id)
        usage = response.usage
        assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
        assert 0 <= usage.prompt_tokens_details.cached_tokens <= usage.prompt_tokens
        assert usage.prompt_tokens_details.cached_tokens % 64 == 0
        assert 0 < usage.completion_tokens_details.reasoning_tokens <= usage.completion_tokens
    assert len(ids) == len(responses)
    prompts = [r.usage.prompt_tokens for r in responses]
    assert prompts == sorted(prompts) and len(set(prompts)) == len(prompts)
    cached = [r.usage.prompt_tokens_details.cached_tokens for r in responses]
    assert cached[0] == 0 and all(c > 0 for c in cached[1:])


async def test_headers_and_determinism(
    model_client: openai.AsyncOpenAI, model_http: httpx.Client, forge_http: httpx.Client, reviewer_tools: list
) -> None:
    raw = await model_client.chat.completions.with_raw_response.create(
        model="sim-reviewer-1", messages=[{"role": "user", "content": "Review acme/api#44."}], tools=reviewer_tools
    )
    assert raw.headers["x-request-id"].startswith("req_")
    assert int(raw.headers["openai-processing-ms"]) >= 0
    first = await _review(model_client, forge_http, reviewer_tools, "acme/api", 44)
    model_http.post("/_sim/reset")
    forge_http.post("/_sim/reset")
    second = await _review(model_client, forge_http, reviewer_tools, "acme/api", 44)
    dump = lambda rs: [r.choices[0].message.model_dump() for r in rs]  # noqa: E731
    assert dump(first) == dump(second)
    assert [r.usage for r in first] == [r.usage for r in second]


async def test_cache_is_shared_across_conversations(model_client: openai.AsyncOpenAI, reviewer_tools: list) -> None:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Review acme/api#42."}]
    cold = await model_client.chat.completions.create(model="m", messages=messages, tools=reviewer_tools)
    warm = await model_client.chat.completions.create(model="m", messages=messages, tools=reviewer_tools)
    assert cold.usage.prompt_tokens_details.cached_tokens == 0
    assert 0 < warm.usage.prompt_tokens_details.cached_tokens <= warm.usage.prompt_tokens
    assert warm.model == "m"


async def test_plain_answer_without_tools(model_client: openai.AsyncOpenAI) -> None:
    response = await model_client.chat.completions.create(
        model="sim-reviewer-1", messages=[{"role": "user", "content": "Hi!"}], temperature=0, max_tokens=50
    )
    assert response.choices[0].finish_reason == "stop"
    assert response.choices[0].message.tool_calls is None
    assert f"{len('Hi!')} characters" in response.choices[0].message.content
