"""Forge simulator: token auth when a token is configured."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from simulators import serve_in_thread
from simulators.forge import create_forge_app

TOKEN = "ghp_simulatedtoken123"


@pytest.fixture(scope="module")
def secured() -> Iterator[httpx.Client]:
    with serve_in_thread(create_forge_app(token=TOKEN)) as server:
        with httpx.Client(base_url=server.base_url, timeout=5.0) as client:
            yield client


@pytest.mark.parametrize("header", [None, "Bearer wrong", f"Basic {TOKEN}", TOKEN])
def test_missing_or_bad_credentials_are_401(secured: httpx.Client, header: str | None) -> None:
    headers = {"Authorization": header} if header else {}
    response = secured.get("/repos/acme/api/pulls/42", headers=headers)
    assert response.status_code == 401
    assert response.json()["message"] == "Bad credentials"
    assert response.json()["documentation_url"] == "https://docs.github.com/rest"


@pytest.mark.parametrize("scheme", ["Bearer", "token", "bearer"])
def test_bearer_and_token_schemes_accepted(secured: httpx.Client, scheme: str) -> None:
    response = secured.get("/repos/acme/api/pulls/42", headers={"Authorization": f"{scheme} {TOKEN}"})
    assert response.status_code == 200


def test_unauthenticated_write_is_not_stored_and_control_needs_no_auth(secured: httpx.Client) -> None:
    secured.post("/_sim/reset")
    assert secured.post("/repos/acme/api/issues/42/comments", json={"body": "x"}).status_code == 401
    assert secured.get("/_sim/comments").json() == []
    stats = secured.get("/_sim/stats").json()
    assert stats["requests"] == {"POST /repos/{owner}/{repo}/issues/{number}/comments": 1}


def test_unauthenticated_request_does_not_consume_a_fault(secured: httpx.Client) -> None:
    secured.post("/_sim/reset")
    secured.post("/_sim/faults", json={"status": 500})
    assert secured.get("/repos/acme/api/pulls/42").status_code == 401
    authed = secured.get("/repos/acme/api/pulls/42", headers={"Authorization": f"token {TOKEN}"})
    assert authed.status_code == 500


def test_no_token_configured_means_open(forge_http: httpx.Client) -> None:
    assert forge_http.get("/repos/acme/api/pulls/42", headers={"Authorization": "Bearer anything"}).status_code == 200
