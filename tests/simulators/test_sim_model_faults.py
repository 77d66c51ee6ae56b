"""Model simulator: injected faults surface as the openai client's typed errors; stats."""

from __future__ import annotations

import asyncio
import time

import httpx
import openai
import pytest

MESSAGES = [{"role": "user", "content": "Review acme/api#42."}]


def _fault(client: httpx.Client, **spec: object) -> None:
    response = client.post("/_sim/faults", json=spec)
    assert response.status_code == 201, response.text


async def _ask(client: openai.AsyncOpenAI, **kwargs: object):
    return await client.chat.completions.create(model="sim-reviewer-1", messages=MESSAGES, **kwargs)


async def test_429_with_retry_after(model_client: openai.AsyncOpenAI, model_http: httpx.Client) -> None:
    _fault(model_http, status=429, retry_after=3, retry_after_ms=2500)
    with pytest.raises(openai.RateLimitError) as caught:
        await _ask(model_client)
    assert caught.value.response.headers["retry-after"] == "3"
    assert caught.value.response.headers["retry-after-ms"] == "2500"
    assert caught.value.code == "rate_limit_exceeded"
    assert "simulated fault" in caught.value.message
    assert (await _ask(model_client)).choices[0].finish_reason == "stop"  # times defaults to 1


@pytest.mark.parametrize(
    ("status", "error"),
    [(500, openai.InternalServerError), (503, openai.InternalServerError), (400, openai.BadRequestError),
     (401, openai.AuthenticationError), (403, openai.PermissionDeniedError)],
)  # fmt: skip
async def test_status_faults_map_to_client_errors(
    model_client: openai.AsyncOpenAI, model_http: httpx.Client, status: int, error: type
) -> None:
    _fault(model_http, status=status)
    with pytest.raises(error) as caught:
        await _ask(model_client)
    assert caught.value.status_code == status
    assert "retry-after" not in caught.value.response.headers


async def test_times_and_forever(model_client: openai.AsyncOpenAI, model_http: httpx.Client) -> None:
    _fault(model_http, status=500, times=2)
    outcomes = []
    for _ in range(3):
        try:
            await _ask(model_client)
            outcomes.append(200)
        except openai.InternalServerError:
            outcomes.append(500)
    assert outcomes == [500, 500, 200]
    _fault(model_http, status=503, times=None)
    for _ in range(3):
        with pytest.raises(openai.InternalServerError):
            await _ask(model_client)
    assert model_http.delete("/_sim/faults").json() == {"cleared": 1}


async def test_delay_only_makes_answers_slow(model_client: openai.AsyncOpenAI, model_http: httpx.Client) -> None:
    _fault(model_http, delay_seconds=1.0)
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        await _ask(model_client, timeout=0.3)
    assert time.monotonic() - started < 1.0
    _fault(model_http, delay_seconds=0.3)
    started = time.monotonic()
    assert (await _ask(model_client)).choices[0].message.content
    assert time.monotonic() - started >= 0.3


async def test_stats_count_calls_statuses_and_work(model_client: openai.AsyncOpenAI, model_http: httpx.Client) -> None:
    work = {"X-Sluicegate-Work-Key": "acme/api#42", "X-Sluicegate-Input-Version": "ef9d10e"}
    _fault(model_http, status=429)
    with pytest.raises(openai.RateLimitError):
        await _ask(model_client, extra_headers=work)
    await _ask(model_client, extra_headers=work)
    await _ask(model_client, extra_headers={"X-Sluicegate-Work-Key": "acme/web#7"})
    await _ask(model_client)
    stats = model_http.get("/_sim/stats").json()
    assert stats["calls"] == 4 and stats["completed"] == 3
    assert stats["by_status"] == {"200": 3, "429": 1}
    assert stats["by_work"] == {"acme/api#42@ef9d10e": 2, "acme/web#7@unknown": 1, "unknown@unknown": 1}
    assert stats["tokens"]["prompt_tokens"] > 0


@pytest.mark.parametrize(
    "spec", [{}, {"status": 200}, {"status": 429, "times": -1}, {"status": 429, "retry": 1}, {"delay_seconds": "x"}]
)
def test_bad_fault_specs_are_rejected(model_http: httpx.Client, spec: dict) -> None:
    assert model_http.post("/_sim/faults", json=spec).status_code == 400
    assert model_http.get("/_sim/faults").json() == []


def test_reset_clears_counters_and_faults(model_http: httpx.Client) -> None:
    _fault(model_http, status=500, times=None)
    model_http.post("/v1/chat/completions", json={"model": "m", "messages": MESSAGES})
    assert model_http.get("/_sim/stats").json()["calls"] == 1
    model_http.post("/_sim/reset")
    assert model_http.get("/_sim/faults").json() == []
    assert model_http.get("/_sim/stats").json()["calls"] == 0
    assert model_http.post("/v1/chat/completions", json={"model": "m", "messages": MESSAGES}).status_code == 200


async def test_a_stall_mid_body_sends_the_first_bytes_then_holds_the_rest(model_http: httpx.Client) -> None:
    _fault(model_http, stall_after_bytes=25, delay_seconds=0.5)
    body = {"model": "sim-reviewer-1", "messages": MESSAGES}
    pieces: list[bytes] = []
    with model_http.stream("POST", "/v1/chat/completions", json=body) as response:
        assert response.status_code == 200
        for piece in response.iter_bytes():
            pieces.append(piece)
    assert len(pieces[0]) == 25  # the first chunk is exactly the bytes before the stall
    assert b"".join(pieces).startswith(b'{"id": "chatcmpl-') and b'"finish_reason": "stop"' in b"".join(pieces)
    for bad in ({"stall_after_bytes": 10}, {"stall_after_bytes": 10, "delay_seconds": 1, "status": 500}):
        assert model_http.post("/_sim/faults", json=bad).status_code == 400


async def _seen(model_http: httpx.Client, calls: int) -> None:
    while model_http.get("/_sim/stats").json()["calls"] < calls:
        await asyncio.sleep(0.05)


async def test_release_ends_the_delays_waited_out_now_and_not_later_ones(
        model_client: openai.AsyncOpenAI, model_http: httpx.Client) -> None:
    assert model_http.post("/_sim/faults/release").json() == {"released": 0}
    _fault(model_http, status=503, delay_seconds=300)
    _fault(model_http, delay_seconds=300)
    refused = asyncio.ensure_future(_ask(model_client.with_options(max_retries=0), timeout=60))
    await _seen(model_http, 1)
    answered = asyncio.ensure_future(_ask(model_client, timeout=60))
    await _seen(model_http, 2)
    assert model_http.post("/_sim/faults/release").json() == {"released": 2}
    with pytest.raises(openai.InternalServerError):  # answered as its fault says, long before 300 s (or 60 s)
        await refused
    assert (await answered).choices[0].finish_reason == "stop"
    _fault(model_http, delay_seconds=300)  # a delay that starts after the release waits in full
    with pytest.raises(openai.APITimeoutError):
        await _ask(model_client.with_options(max_retries=0), timeout=0.5)
    assert model_http.post("/_sim/faults/release").json() == {"released": 1}  # it was still waiting


async def test_release_ends_a_stall_mid_body(model_http: httpx.Client) -> None:
    _fault(model_http, stall_after_bytes=25, delay_seconds=300)
    body = {"model": "sim-reviewer-1", "messages": MESSAGES}
    async with httpx.AsyncClient(base_url=str(model_http.base_url), timeout=60) as client:
        async with client.stream("POST", "/v1/chat/completions", json=body) as response:
            chunks = response.aiter_bytes()
            pieces = [await anext(chunks)]
            assert model_http.post("/_sim/faults/release").json() == {"released": 1}
            pieces += [piece async for piece in chunks]
    assert len(pieces[0]) == 25 and b'"finish_reason": "stop"' in b"".join(pieces)
