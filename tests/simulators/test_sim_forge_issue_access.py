"""Forge simulator, issue routes: static-token auth, GitHub App permissions (issues vs. pull_requests),
injected faults and rate limits, exactly as on the pull and comment routes."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
from gidgethub.apps import get_jwt

from simulators import serve_in_thread
from simulators.forge import ForgeState, GitHubAppSpec, create_forge_app
from tests.simulators.test_forge_app_tokens import _keypair

APP_ID = "5151"
STATIC = "ghp_issue_routes"
ISSUE = "/repos/acme/api/issues/101"


@pytest.fixture(scope="module")
def secured() -> Iterator[tuple[httpx.Client, str]]:
    private, public = _keypair()
    state = ForgeState()
    app = create_forge_app(state, token=STATIC, app=GitHubAppSpec(APP_ID, public, {7: "acme"}))
    with serve_in_thread(app, name="forge-sim-issue-access") as server:
        with httpx.Client(base_url=server.base_url, timeout=5.0) as client:
            yield client, private


@pytest.fixture
def http(secured: tuple[httpx.Client, str]) -> httpx.Client:
    secured[0].post("/_sim/reset").raise_for_status()
    return secured[0]


def _token(http: httpx.Client, private: str, permissions: dict[str, str]) -> dict[str, str]:
    bearer = get_jwt(app_id=APP_ID, private_key=private)
    minted = http.post("/app/installations/7/access_tokens", json={"permissions": permissions},
                       headers={"Authorization": f"Bearer {bearer}"})
    assert minted.status_code == 201, minted.text
    return {"Authorization": f"Bearer {minted.json()['token']}"}


@pytest.mark.parametrize(("method", "path"), [("GET", ISSUE), ("GET", f"{ISSUE}/labels"),
                                              ("POST", f"{ISSUE}/labels"), ("POST", f"{ISSUE}/comments")])
def test_issue_routes_need_credentials(http: httpx.Client, method: str, path: str) -> None:
    refused = http.request(method, path, json={"labels": ["bug"], "body": "x"})
    assert refused.status_code == 401 and refused.json()["message"] == "Bad credentials"
    stored = http.get("/_sim/issues/acme/api/101").json()
    assert (stored["labels"], stored["comments"]) == ([], 0)
    ok = http.request(method, path, json={"labels": ["bug"], "body": "x"}, headers={"Authorization": f"token {STATIC}"})
    assert ok.status_code in (200, 201)


def test_a_plain_issue_needs_the_issues_permission(http: httpx.Client, secured: tuple[httpx.Client, str]) -> None:
    pulls_only = _token(http, secured[1], {"pull_requests": "write"})
    for method, path in (("GET", ISSUE), ("POST", f"{ISSUE}/labels"), ("POST", f"{ISSUE}/comments")):
        refused = http.request(method, path, json={"labels": ["bug"], "body": "x"}, headers=pulls_only)
        assert refused.status_code == 403 and refused.json()["message"] == "Resource not accessible by integration"
    # ... while the same token may use the issue routes of a pull request, as on GitHub
    assert http.get("/repos/acme/api/issues/42", headers=pulls_only).status_code == 200
    assert http.post("/repos/acme/api/issues/42/labels", json=["bug"], headers=pulls_only).status_code == 200
    assert http.get("/_sim/issues/acme/api/101").json()["labels"] == []
    assert http.get("/_sim/apps").json()["rejections"] == {"permission": 3}


def test_issues_read_may_read_but_not_write(http: httpx.Client, secured: tuple[httpx.Client, str]) -> None:
    reader = _token(http, secured[1], {"issues": "read"})
    assert http.get(ISSUE, headers=reader).status_code == 200
    assert http.get(f"{ISSUE}/labels", headers=reader).status_code == 200
    assert http.post(f"{ISSUE}/labels", json=["bug"], headers=reader).status_code == 403
    assert http.post(f"{ISSUE}/comments", json={"body": "x"}, headers=reader).status_code == 403
    writer = _token(http, secured[1], {"issues": "write"})
    labelled = http.post(f"{ISSUE}/labels", json=["bug"], headers=writer)
    assert labelled.status_code == 200 and [label["name"] for label in labelled.json()] == ["bug"]
    comment = http.post(f"{ISSUE}/comments", json={"body": "triage"}, headers=writer).json()
    assert comment["user"]["login"] == "sluicegate[bot]"
    assert http.get("/repos/acme/api/pulls/42", headers=writer).status_code == 403  # no pull_requests


def test_status_fault_on_labels_skips_the_write(forge_http: httpx.Client) -> None:
    forge_http.post("/_sim/faults", json={"method": "POST", "path": r"/issues/\d+/labels$", "status": 502})
    assert forge_http.post(f"{ISSUE}/labels", json=["bug"]).status_code == 502
    assert forge_http.get("/_sim/issues/acme/api/101").json()["labels"] == []
    assert forge_http.post(f"{ISSUE}/labels", json=["bug"]).status_code == 200  # times: 1


def test_after_commit_fault_on_labels_applies_them_but_the_answer_is_lost(forge_http: httpx.Client) -> None:
    forge_http.post("/_sim/faults", json={"method": "POST", "path": "/labels$", "status": 504, "after_commit": True})
    assert forge_http.post(f"{ISSUE}/labels", json=["bug"]).status_code == 504
    assert forge_http.get("/_sim/issues/acme/api/101").json()["labels"] == ["bug"]


def test_faults_target_the_issue_read_alone(forge_http: httpx.Client) -> None:
    forge_http.post("/_sim/faults", json={"method": "GET", "path": r"/issues/\d+$", "status": 503, "times": 2})
    assert forge_http.get(f"{ISSUE}/labels").status_code == 200
    assert forge_http.get(f"{ISSUE}/comments").status_code == 200
    assert [forge_http.get(ISSUE).status_code for _ in range(3)] == [503, 503, 200]
    assert forge_http.get("/_sim/stats").json()["issue_reads"] == {"json": 1, "not_modified": 0}


def test_a_hanging_issue_read_times_the_client_out(forge_http: httpx.Client) -> None:
    forge_http.post("/_sim/faults", json={"path": r"/issues/101$", "hang_seconds": 1.0, "status": 500})
    started = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        forge_http.get(ISSUE, timeout=0.3)
    assert time.monotonic() - started < 1.0


def test_injected_rate_limit_and_free_304_on_issue_reads(forge_http: httpx.Client) -> None:
    forge_http.post("/_sim/rate_limits/inject", json={"kind": "secondary", "method": "POST", "path": "/labels$",
                                                      "retry_after": 3}).raise_for_status()
    limited = forge_http.post(f"{ISSUE}/labels", json=["bug"])
    assert limited.status_code == 403 and limited.headers["retry-after"] == "3"
    assert forge_http.get("/_sim/issues/acme/api/101").json()["labels"] == []
    etag = forge_http.get(ISSUE).headers["etag"]
    used = int(forge_http.get(ISSUE).headers["x-ratelimit-used"])
    for _ in range(3):
        assert forge_http.get(ISSUE, headers={"If-None-Match": etag}).status_code == 304
    assert int(forge_http.get(ISSUE).headers["x-ratelimit-used"]) == used + 1
