"""Forge simulator: control API (upsert pulls, reset, health)."""

from __future__ import annotations

import hashlib

import httpx
import pytest

from simulators.forge import ForgeState


def test_push_new_commit_updates_head_and_timestamp(forge_http: httpx.Client, fixture_pulls: dict) -> None:
    new_sha = hashlib.sha1(b"second push").hexdigest()
    before = forge_http.get("/repos/acme/api/pulls/42").json()
    changed = forge_http.post("/_sim/pulls/acme/api/42", json={"head_sha": new_sha, "diff": "diff --git a/x b/x\n"})
    assert changed.status_code == 200
    after = forge_http.get("/repos/acme/api/pulls/42").json()
    assert after["head"]["sha"] == new_sha != before["head"]["sha"]
    assert after["updated_at"] > before["updated_at"]
    assert after["created_at"] == before["created_at"]
    assert after["base"]["sha"] == fixture_pulls[("acme", "api", 42)]["base_sha"]
    diff = forge_http.get("/repos/acme/api/pulls/42", headers={"Accept": "application/vnd.github.diff"})
    assert diff.text == "diff --git a/x b/x\n"


def test_close_pull(forge_http: httpx.Client) -> None:
    forge_http.post("/_sim/pulls/acme/api/44", json={"state": "closed"})
    pull = forge_http.get("/repos/acme/api/pulls/44").json()
    assert pull["state"] == "closed" and pull["closed_at"] and pull["merged"] is False
    open_numbers = {p["number"] for p in forge_http.get("/repos/acme/api/pulls").json()}
    assert 44 not in open_numbers


def test_upsert_creates_pull_and_repository(forge_http: httpx.Client) -> None:
    sha = hashlib.sha1(b"new repo").hexdigest()
    assert forge_http.get("/repos/acme/docs/pulls").status_code == 404
    created = forge_http.post("/_sim/pulls/acme/docs/1", json={"title": "Fix typo", "head_sha": sha})
    assert created.status_code == 200
    listed = forge_http.get("/repos/acme/docs/pulls").json()
    assert [(p["number"], p["title"], p["head"]["sha"], p["state"]) for p in listed] == [(1, "Fix typo", sha, "open")]


@pytest.mark.parametrize(
    "payload",
    [{"head_sha": "not-a-sha"}, {"state": "merged"}, {"colour": "red"}, {"title": 7}, [1, 2]],
)
def test_upsert_rejects_bad_fields(forge_http: httpx.Client, payload: object) -> None:
    before = forge_http.get("/repos/acme/api/pulls/42").json()
    response = forge_http.post("/_sim/pulls/acme/api/42", json=payload)
    assert response.status_code == 400
    assert response.json()["message"]
    assert forge_http.get("/repos/acme/api/pulls/42").json() == before


def test_reset_restores_fixtures_and_clears_everything(forge_http: httpx.Client, fixture_pulls: dict) -> None:
    forge_http.post("/_sim/pulls/acme/api/42", json={"title": "changed"})
    forge_http.post("/repos/acme/api/issues/42/comments", json={"body": "x"})
    forge_http.post("/_sim/faults", json={"status": 500, "times": None})
    assert forge_http.post("/_sim/reset").status_code == 200
    assert forge_http.get("/_sim/faults").json() == []
    assert forge_http.get("/_sim/comments").json() == []
    assert forge_http.get("/_sim/stats").json() == {"total": 0, "requests": {}, "by_repository": {},
                                                      "comments_posted": 0,
                                                      "pull_reads": {"json": 0, "diff": 0, "not_modified": 0},
                                                      "issue_reads": {"json": 0, "not_modified": 0},
                                                      "label_writes": 0}
    pull = forge_http.get("/repos/acme/api/pulls/42")
    assert pull.status_code == 200 and pull.json()["title"] == fixture_pulls[("acme", "api", 42)]["title"]


def test_comment_ids_are_not_reused_after_reset(forge_http: httpx.Client) -> None:
    first = forge_http.post("/repos/acme/api/issues/42/comments", json={"body": "a"}).json()["id"]
    forge_http.post("/_sim/reset")
    second = forge_http.post("/repos/acme/api/issues/42/comments", json={"body": "b"}).json()["id"]
    assert second > first


def test_health(forge_http: httpx.Client) -> None:
    assert forge_http.get("/_sim/health").json()["simulator"] == "forge"


def test_state_is_deterministic_across_instances(forge_state: ForgeState) -> None:
    other = ForgeState()
    for owner, repo in (("acme", "api"), ("acme", "web")):
        assert other.list_pulls(owner, repo) == forge_state.list_pulls(owner, repo)
