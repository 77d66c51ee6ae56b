"""Forge simulator: issues (GET with ETag/304, labels as a set union, comments, control routes, reset)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from simulators import serve_in_thread
from simulators.forge import ForgeState, create_forge_app
from tests.simulators.conftest import FIXTURES

ISSUE = "/repos/acme/api/issues/101"
LABEL_FIELDS = {"id", "node_id", "url", "name", "color", "default", "description"}


@pytest.fixture
def fixture_issues() -> dict[tuple[str, str, int], dict[str, Any]]:
    """The raw fixture issues, read independently of the simulator code."""
    issues = {}
    for path in FIXTURES.glob("*.json"):
        data = json.loads(path.read_text())
        for issue in data.get("issues", []):
            issues[(data["owner"], data["repo"], issue["number"])] = issue
    return issues


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clocked() -> Iterator[tuple[httpx.Client, Clock]]:
    """A forge whose clock the test moves, so ``updated_at`` bumps are exact."""
    clock = Clock()
    with serve_in_thread(create_forge_app(ForgeState(clock=clock)), name="forge-sim-clock") as server:
        with httpx.Client(base_url=server.base_url, timeout=5.0) as client:
            yield client, clock


def test_fixture_issues_are_served_as_github_issues(forge_http: httpx.Client, fixture_issues: dict) -> None:
    assert len([k for k in fixture_issues if k[:2] == ("acme", "api")]) >= 2
    for (owner, repo, number), raw in fixture_issues.items():
        body = forge_http.get(f"/repos/{owner}/{repo}/issues/{number}").json()
        assert (body["number"], body["title"], body["body"], body["state"]) == (
            number, raw["title"], raw.get("body"), raw.get("state", "open"))
        assert (body["created_at"], body["updated_at"]) == (raw["created_at"], raw["updated_at"])
        assert sorted(label["name"] for label in body["labels"]) == sorted(raw.get("labels", []))
        assert "pull_request" not in body and body["html_url"].endswith(f"/{owner}/{repo}/issues/{number}")
        assert body["user"]["login"] == raw["user"]
        assert (body["closed_at"] is not None) == (body["state"] == "closed")


def test_a_pull_request_is_also_an_issue(forge_http: httpx.Client, fixture_pulls: dict) -> None:
    body = forge_http.get("/repos/acme/api/issues/42").json()
    assert body["title"] == fixture_pulls[("acme", "api", 42)]["title"]
    assert body["pull_request"]["url"].endswith("/repos/acme/api/pulls/42")
    assert body["pull_request"]["merged_at"] is None
    assert forge_http.get("/_sim/issues/acme/api/42").json()["pull_request"] is True
    assert forge_http.get("/_sim/issues/acme/api/101").json()["pull_request"] is False


@pytest.mark.parametrize("path", ["/repos/acme/api/issues/4242", "/repos/acme/api/issues/abc",
                                  "/repos/acme/nope/issues/101", "/repos/acme/api/issues/4242/labels"])
def test_unknown_issue_is_404(forge_http: httpx.Client, path: str) -> None:
    response = forge_http.get(path)
    assert response.status_code == 404 and response.json()["message"] == "Not Found"


def test_if_none_match_answers_304_until_the_issue_changes(forge_http: httpx.Client) -> None:
    etag = forge_http.get(ISSUE).headers["etag"]
    assert etag.startswith('W/"')
    again = forge_http.get(ISSUE, headers={"If-None-Match": etag})
    assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", etag)
    forge_http.post("/_sim/issues/acme/api/101", json={"body": "edited"}).raise_for_status()
    changed = forge_http.get(ISSUE, headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag and changed.json()["body"] == "edited"
    stats = forge_http.get("/_sim/stats").json()
    assert stats["issue_reads"] == {"json": 2, "not_modified": 1}
    assert stats["pull_reads"] == {"json": 0, "diff": 0, "not_modified": 0}
    assert stats["requests"]["GET /repos/{owner}/{repo}/issues/{number}"] == 3


def test_adding_labels_is_a_set_union_answered_with_the_full_list(forge_http: httpx.Client) -> None:
    first = forge_http.post(f"{ISSUE}/labels", json={"labels": ["bug", "needs-repro"]})
    assert first.status_code == 200
    assert [label["name"] for label in first.json()] == ["bug", "needs-repro"]
    assert all(set(label) == LABEL_FIELDS for label in first.json())
    bug, created = first.json()
    assert (bug["color"], bug["default"], bug["description"]) == ("d73a4a", True, "Something isn't working")
    assert (created["color"], created["default"], created["description"]) == ("ededed", False, None)
    second = forge_http.post(f"{ISSUE}/labels", json=["BUG", "question"])  # GitHub also takes a bare list
    assert [label["name"] for label in second.json()] == ["bug", "needs-repro", "question"]
    assert second.json()[0]["id"] == bug["id"]
    assert [label["name"] for label in forge_http.get(f"{ISSUE}/labels").json()] == ["bug", "needs-repro", "question"]
    assert forge_http.get("/_sim/issues/acme/api/101").json()["labels"] == ["bug", "needs-repro", "question"]
    assert [label["name"] for label in forge_http.get(ISSUE).json()["labels"]] == ["bug", "needs-repro", "question"]
    assert forge_http.get("/repos/acme/api/issues/102/labels").json() == []  # another issue untouched
    assert forge_http.get("/_sim/stats").json()["label_writes"] == 2


def test_label_ids_are_per_repository_and_stable_across_reset(forge_http: httpx.Client) -> None:
    api = forge_http.post(f"{ISSUE}/labels", json={"labels": ["bug"]}).json()[0]["id"]
    web = forge_http.post("/repos/acme/web/issues/7/labels", json={"labels": ["bug"]}).json()[0]["id"]
    assert api != web
    forge_http.post("/_sim/reset").raise_for_status()
    assert forge_http.post(f"{ISSUE}/labels", json={"labels": ["bug"]}).json()[0]["id"] == api


@pytest.mark.parametrize(("payload", "code"), [
    ({}, "missing_field"), ({"labels": "bug"}, "invalid"), ({"labels": [""]}, "invalid"),
    ({"labels": [5]}, "invalid"), ({"labels": ["x" * 51]}, "invalid"),
    ({"labels": [f"l{i}" for i in range(101)]}, "invalid"),
])
def test_bad_labels_are_422_and_change_nothing(forge_http: httpx.Client, payload: dict, code: str) -> None:
    before = forge_http.get("/_sim/issues/acme/api/101").json()
    response = forge_http.post(f"{ISSUE}/labels", json=payload)
    assert response.status_code == 422 and response.json()["message"] == "Validation Failed"
    assert response.json()["errors"][0]["code"] == code
    assert forge_http.get("/_sim/issues/acme/api/101").json() == before


def test_labels_on_unknown_issue_and_unparsable_json(forge_http: httpx.Client) -> None:
    assert forge_http.post("/repos/acme/api/issues/4242/labels", json={"labels": ["bug"]}).status_code == 404
    bad = forge_http.post(f"{ISSUE}/labels", content=b"{nope", headers={"content-type": "application/json"})
    assert bad.status_code == 400 and bad.json()["message"] == "Problems parsing JSON"


def test_labels_and_comments_bump_updated_at_only_when_something_changed(clocked) -> None:
    http, clock = clocked
    original = http.get(ISSUE).json()["updated_at"]
    clock.now += timedelta(minutes=5)
    http.post(f"{ISSUE}/labels", json={"labels": ["bug"]}).raise_for_status()
    assert http.get(ISSUE).json()["updated_at"] == "2025-01-01T12:05:00Z" != original
    clock.now += timedelta(minutes=5)
    http.post(f"{ISSUE}/labels", json={"labels": ["Bug"]}).raise_for_status()  # already there: no change
    assert http.get(ISSUE).json()["updated_at"] == "2025-01-01T12:05:00Z"
    created = http.post(f"{ISSUE}/comments", json={"body": "triaged"})
    assert created.status_code == 201
    assert created.json()["html_url"].endswith(f"/acme/api/issues/101#issuecomment-{created.json()['id']}")
    issue = http.get(ISSUE).json()
    assert (issue["updated_at"], issue["comments"]) == ("2025-01-01T12:10:00Z", 1)
    assert [c["body"] for c in http.get(f"{ISSUE}/comments").json()] == ["triaged"]
    pull_before = http.get("/repos/acme/api/pulls/42").headers["etag"]
    http.post("/repos/acme/api/issues/42/comments", json={"body": "review"}).raise_for_status()
    assert http.get("/repos/acme/api/pulls/42").headers["etag"] == pull_before  # a pull comment leaves the pull


def test_labels_on_a_pull_request(forge_http: httpx.Client) -> None:
    assert [label["name"] for label in forge_http.post("/repos/acme/api/issues/42/labels",
                                                       json={"labels": ["enhancement"]}).json()] == ["enhancement"]
    assert [label["name"] for label in forge_http.get("/repos/acme/api/issues/42").json()["labels"]] == ["enhancement"]
    assert forge_http.get("/repos/acme/api/issues/44/labels").json() == []


def test_control_route_creates_updates_and_closes_issues(clocked) -> None:
    http, clock = clocked
    created = http.post("/_sim/issues/acme/api/150", json={"title": "New", "body": "b", "labels": ["triage-me"]})
    assert created.status_code == 200
    assert (created.json()["labels"], created.json()["state"], created.json()["updated_at"]) == (
        ["triage-me"], "open", "2025-01-01T12:00:00Z")
    assert http.get("/repos/acme/api/issues/150").json()["title"] == "New"
    http.post("/_sim/issues/acme/api/150", json={"labels": ["bug"], "updated_at": "2030-02-03T04:05:06Z"})
    stored = http.get("/_sim/issues/acme/api/150").json()
    assert (stored["labels"], stored["updated_at"], stored["title"]) == (["bug"], "2030-02-03T04:05:06Z", "New")
    clock.now += timedelta(hours=1)
    closed = http.post("/_sim/issues/acme/api/150", json={"state": "closed"}).json()
    assert closed["updated_at"] == "2030-02-03T04:05:06Z"  # the clock never moves it backwards
    assert (closed["state"], closed["state_reason"], closed["closed_at"]) == ("closed", "completed",
                                                                              "2030-02-03T04:05:06Z")
    reopened = http.post("/_sim/issues/acme/api/150", json={"state": "open"}).json()
    assert (reopened["state_reason"], reopened["closed_at"]) == ("reopened", None)
    assert http.post("/_sim/issues/globex/new/1", json={"title": "x"}).status_code == 200  # new repository
    assert http.get("/repos/globex/new/issues/1").status_code == 200


@pytest.mark.parametrize("payload", [{"state": "merged"}, {"labels": "bug"}, {"title": ""}, {"body": 3},
                                     {"updated_at": "yesterday"}, {"updated_at": 5}, {"head_sha": "0" * 40}])
def test_control_route_refuses_bad_fields(forge_http: httpx.Client, payload: dict) -> None:
    before = forge_http.get("/_sim/issues/acme/api/101").json()
    response = forge_http.post("/_sim/issues/acme/api/101", json=payload)
    assert response.status_code == 400 and "message" in response.json()
    assert forge_http.get("/_sim/issues/acme/api/101").json() == before


def test_issues_and_pulls_never_share_a_number(forge_http: httpx.Client) -> None:
    refused = forge_http.post("/_sim/issues/acme/api/42", json={"title": "x"})
    assert refused.status_code == 400 and "pull request" in refused.json()["message"]
    assert forge_http.post("/_sim/pulls/acme/api/101", json={"title": "x"}).status_code == 400
    assert "pull_request" not in forge_http.get(ISSUE).json()
    assert forge_http.get("/_sim/issues/acme/api/4242").status_code == 404


def test_reset_restores_fixture_issues_and_drops_new_ones(forge_http: httpx.Client, fixture_issues: dict) -> None:
    forge_http.post("/_sim/issues/acme/api/150", json={"title": "gone after reset"}).raise_for_status()
    forge_http.post(f"{ISSUE}/labels", json={"labels": ["bug", "brand-new"]}).raise_for_status()
    forge_http.post(f"{ISSUE}/comments", json={"body": "x"}).raise_for_status()
    forge_http.get(ISSUE)
    forge_http.post("/_sim/reset").raise_for_status()
    assert forge_http.get("/_sim/issues/acme/api/150").status_code == 404
    issue = forge_http.get("/_sim/issues/acme/api/101").json()
    raw = fixture_issues[("acme", "api", 101)]
    assert (issue["labels"], issue["comments"], issue["updated_at"]) == (raw["labels"], 0, raw["updated_at"])
    stats = forge_http.get("/_sim/stats").json()
    assert stats["issue_reads"] == {"json": 0, "not_modified": 0} and stats["label_writes"] == 0


def test_malformed_issue_fixtures_refuse_to_load(tmp_path) -> None:
    from simulators.forge import FixtureError

    base = {"owner": "o", "repo": "r", "pulls": []}
    for issues in ([{"number": 1}], [{"number": 1, "title": "a"}, {"number": 1, "title": "b"}],
                   [{"number": 1, "title": "a", "colour": "red"}], "nope"):
        (tmp_path / "o__r.json").write_text(json.dumps({**base, "issues": issues}))
        with pytest.raises(FixtureError):
            ForgeState(tmp_path)
    pull = json.loads((FIXTURES / "acme__web.json").read_text())["pulls"][0]
    (tmp_path / "o__r.json").write_text(json.dumps({**base, "pulls": [pull],
                                                    "issues": [{"number": pull["number"], "title": "clash"}]}))
    with pytest.raises(FixtureError, match="also pull request numbers"):
        ForgeState(tmp_path)
