"""Model simulator: request validation, auth and /v1/models."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest

from simulators import ServerThread, serve_in_thread
from simulators.model import ModelState, create_model_app

USER = {"role": "user", "content": "Review acme/api#42."}


async def test_stream_true_is_rejected(model_client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await model_client.chat.completions.create(model="m", messages=[USER], stream=True)
    assert caught.value.param == "stream"


async def test_tool_message_without_preceding_call(model_client: openai.AsyncOpenAI, reviewer_tools: list) -> None:
    messages = [USER, {"role": "tool", "tool_call_id": "call_nope", "content": "diff"}]
    with pytest.raises(openai.BadRequestError) as caught:
        await model_client.chat.completions.create(model="m", messages=messages, tools=reviewer_tools)
    assert caught.value.param == "messages.[1].role"
    assert caught.value.type == "invalid_request_error"


async def test_unanswered_tool_call(model_client: openai.AsyncOpenAI, reviewer_tools: list) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "get_pull_request_diff", "arguments": "{}"}}
    messages = [USER, {"role": "assistant", "content": None, "tool_calls": [call]}, USER]
    with pytest.raises(openai.BadRequestError) as caught:
        await model_client.chat.completions.create(model="m", messages=messages, tools=reviewer_tools)
    assert "call_1" in caught.value.message and caught.value.param == "messages.[1].role"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "m"}, "messages"),
        ({"model": "m", "messages": []}, "messages"),
        ({"messages": [USER]}, None),
        ({"model": "m", "messages": [{"role": "robot", "content": "x"}]}, "messages.[0].role"),
        ({"model": "m", "messages": [USER], "temperature": 3}, "temperature"),
        ({"model": "m", "messages": [USER], "max_tokens": 0}, "max_tokens"),
        ({"model": "m", "messages": [USER], "tool_choice": "auto"}, "tool_choice"),
        ({"model": "m", "messages": [USER], "tools": [{"type": "function", "function": {"name": "a b"}}]},
         "tools[0].function.name"),
        ({"model": "m", "messages": [USER], "bogus": 1}, None),
    ],
)  # fmt: skip
def test_invalid_requests_are_400_in_openai_shape(model_http: httpx.Client, body: dict, param: str | None) -> None:
    response = model_http.post("/v1/chat/completions", json=body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error" and error["param"] == param and error["message"]
    assert model_http.get("/_sim/stats").json()["by_status"] == {"400": 1}


def test_unparsable_body(model_http: httpx.Client) -> None:
    response = model_http.post("/v1/chat/completions", content=b"{", headers={"content-type": "application/json"})
    assert response.status_code == 400 and "parse the JSON body" in response.json()["error"]["message"]


def test_unknown_path_is_openai_404(model_http: httpx.Client) -> None:
    response = model_http.post("/v1/completions/nope", json={})
    assert response.status_code == 404
    assert response.json()["error"]["message"] == "Invalid URL (POST /v1/completions/nope)"


@pytest.fixture(scope="module")
def keyed() -> Iterator[ServerThread]:
    with serve_in_thread(create_model_app(ModelState(["sim-a", "sim-b"]), api_key="sk-sim-secret")) as server:
        yield server


async def test_api_key_required_when_configured(keyed: ServerThread) -> None:
    for key in ("wrong-key-123456", ""):
        client = openai.AsyncOpenAI(base_url=f"{keyed.base_url}/v1", api_key=key or "x", max_retries=0)
        with pytest.raises(openai.AuthenticationError) as caught:
            await client.chat.completions.create(model="sim-a", messages=[USER])
        assert caught.value.status_code == 401
        await client.close()
    good = openai.AsyncOpenAI(base_url=f"{keyed.base_url}/v1", api_key="sk-sim-secret", max_retries=0)
    assert (await good.chat.completions.create(model="sim-a", messages=[USER])).choices
    assert [m.id for m in (await good.models.list()).data] == ["sim-a", "sim-b"]
    await good.close()
    assert httpx.get(f"{keyed.base_url}/v1/models").status_code == 401
    assert httpx.get(f"{keyed.base_url}/_sim/stats").json()["by_status"]["401"] == 2


async def test_default_model_listed(model_client: openai.AsyncOpenAI) -> None:
    assert [m.id for m in (await model_client.models.list()).data] == list(ModelState().models)
