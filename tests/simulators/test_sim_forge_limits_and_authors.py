"""Forge simulator: comment authors per token, and GitHub's primary and secondary rate limits."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from simulators import serve_in_thread
from simulators.forge import ForgeState, create_forge_app

BOT_TOKEN = "ghp_bot_token"
PULL = "/repos/acme/api/pulls/42"
COMMENTS = "/repos/acme/api/issues/42/comments"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with serve_in_thread(create_forge_app(ForgeState(commenter="review-bot"), token=BOT_TOKEN)) as srv:
        yield srv.base_url


@pytest.fixture
def http(server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server, timeout=5.0) as client:
        client.post("/_sim/reset").raise_for_status()
        yield client


def _as(token: str) -> dict[str, str]:
    return {"Authorization": f"token {token}"}


def test_comments_are_authored_by_the_token_holder(http: httpx.Client) -> None:
    assert http.post("/_sim/users", json={"token": "ghp_mallory", "login": "mallory"}).status_code == 201
    bot = http.post(COMMENTS, json={"body": "review"}, headers=_as(BOT_TOKEN))
    other = http.post(COMMENTS, json={"body": "planted"}, headers=_as("ghp_mallory"))
    assert (bot.status_code, other.status_code) == (201, 201)
    listed = http.get(COMMENTS, headers=_as(BOT_TOKEN)).json()
    assert [(c["body"], c["user"]["login"], c["user"]["type"]) for c in listed] == [
        ("review", "review-bot", "User"), ("planted", "mallory", "User")]
    assert http.post(COMMENTS, json={"body": "x"}, headers=_as("ghp_unknown")).status_code == 401
    http.post("/_sim/reset")
    assert http.get(PULL, headers=_as("ghp_mallory")).status_code == 401  # users are cleared by reset


def test_every_answer_carries_the_primary_budget(http: httpx.Client) -> None:
    http.post("/_sim/rate_limits", json={"limit": 10, "window_seconds": 3600}).raise_for_status()
    first = http.get(PULL, headers=_as(BOT_TOKEN))
    second = http.get("/repos/acme/api/pulls/999", headers=_as(BOT_TOKEN))  # a 404 counts too
    assert second.status_code == 404
    assert [r.headers["x-ratelimit-remaining"] for r in (first, second)] == ["9", "8"]
    assert second.headers["x-ratelimit-used"] == "2" and second.headers["x-ratelimit-resource"] == "core"
    assert abs(int(second.headers["x-ratelimit-reset"]) - (time.time() + 3600)) < 5


@pytest.mark.parametrize("status", [403, 429])
def test_primary_limit_refuses_until_the_reset(http: httpx.Client, status: int) -> None:
    http.post("/_sim/rate_limits", json={"limit": 2, "window_seconds": 2, "status": status}).raise_for_status()
    assert [http.get(PULL, headers=_as(BOT_TOKEN)).status_code for _ in range(2)] == [200, 200]
    refused = http.post(COMMENTS, json={"body": "x"}, headers=_as(BOT_TOKEN))
    assert refused.status_code == status
    assert refused.json()["message"].startswith("API rate limit exceeded for user ID ")
    assert refused.headers["x-ratelimit-remaining"] == "0" and "retry-after" not in refused.headers
    reset = int(refused.headers["x-ratelimit-reset"])
    assert http.get("/_sim/comments").json() == []  # refused, not applied
    time.sleep(max(reset - time.time(), 0) + 0.2)
    assert http.get(PULL, headers=_as(BOT_TOKEN)).headers["x-ratelimit-remaining"] == "1"
    assert http.get("/_sim/rate_limits").json()["refusals"] == {"primary": 1}


def test_exhausting_every_budget_for_a_while(http: httpx.Client) -> None:
    http.post("/_sim/rate_limits", json={"exhaust_for_seconds": 1}).raise_for_status()
    refused = http.get(PULL, headers=_as(BOT_TOKEN))
    assert refused.status_code == 403 and refused.headers["x-ratelimit-remaining"] == "0"
    time.sleep(1.3)
    assert http.get(PULL, headers=_as(BOT_TOKEN)).status_code == 200


def test_injected_secondary_limit_with_and_without_retry_after(http: httpx.Client) -> None:
    http.post("/_sim/rate_limits/inject", json={"method": "POST", "path": "/comments$", "retry_after": 3,
                                                "status": 429}).raise_for_status()
    http.post("/_sim/rate_limits/inject", json={"method": "GET", "path": "/pulls/42$"}).raise_for_status()
    posted = http.post(COMMENTS, json={"body": "x"}, headers=_as(BOT_TOKEN))
    assert posted.status_code == 429 and posted.headers["retry-after"] == "3"
    assert "secondary rate limit" in posted.json()["message"]
    assert posted.headers["x-ratelimit-remaining"] != "0"
    read = http.get(PULL, headers=_as(BOT_TOKEN))
    assert read.status_code == 403 and "retry-after" not in read.headers
    assert "secondary rate limit" in read.json()["message"]
    assert http.get(PULL, headers=_as(BOT_TOKEN)).status_code == 200  # times defaults to 1
    assert http.get("/_sim/comments").json() == []


def test_injected_primary_limit_names_the_reset(http: httpx.Client) -> None:
    http.post("/_sim/rate_limits/inject", json={"kind": "primary", "path": "/pulls/42$", "reset_in_seconds": 30,
                                                "status": 429}).raise_for_status()
    refused = http.get(PULL, headers=_as(BOT_TOKEN))
    assert refused.status_code == 429 and refused.json()["message"].startswith("API rate limit exceeded")
    assert refused.headers["x-ratelimit-remaining"] == "0"
    assert 25 <= int(refused.headers["x-ratelimit-reset"]) - time.time() <= 31
    assert http.get(PULL, headers=_as(BOT_TOKEN)).status_code == 200


def test_writes_per_minute_is_a_secondary_limit_per_credential(http: httpx.Client) -> None:
    http.post("/_sim/users", json={"token": "ghp_other", "login": "other"}).raise_for_status()
    http.post("/_sim/rate_limits", json={"writes_per_minute": 2}).raise_for_status()
    codes = [http.post(COMMENTS, json={"body": f"c{i}"}, headers=_as(BOT_TOKEN)).status_code for i in range(3)]
    assert codes == [201, 201, 403]
    limited = http.post(COMMENTS, json={"body": "again"}, headers=_as(BOT_TOKEN))
    assert 55 <= int(limited.headers["retry-after"]) <= 60
    assert http.get(PULL, headers=_as(BOT_TOKEN)).status_code == 200  # reads are not content-creating
    assert http.post(COMMENTS, json={"body": "o"}, headers=_as("ghp_other")).status_code == 201


@pytest.mark.parametrize("spec", [{"status": 500}, {"limit": -1}, {"limit": None}, {"window_seconds": 0}, {"bogus": 1}, []])
def test_bad_rate_limit_settings_are_400(http: httpx.Client, spec: object) -> None:
    assert http.post("/_sim/rate_limits", json=spec).status_code == 400


@pytest.mark.parametrize("spec", [{"kind": "tertiary"}, {"status": 503}, {"path": "("}, {"times": 0}])
def test_bad_injections_are_400(http: httpx.Client, spec: object) -> None:
    assert http.post("/_sim/rate_limits/inject", json=spec).status_code == 400
