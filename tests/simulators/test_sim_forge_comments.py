"""Forge simulator: issue comments (create, list, since, pagination, errors)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from simulators.forge import ForgeState

COMMENTS = "/repos/acme/api/issues/42/comments"


def test_post_then_list(forge_http: httpx.Client) -> None:
    created = forge_http.post(COMMENTS, json={"body": "Looks good to me."})
    assert created.status_code == 201
    comment = created.json()
    assert comment["body"] == "Looks good to me."
    assert comment["user"]["login"] == "sluicegate-bot"
    assert created.headers["location"] == comment["url"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", comment["created_at"])
    assert comment["html_url"].endswith(f"/acme/api/pull/42#issuecomment-{comment['id']}")
    listed = forge_http.get(COMMENTS).json()
    assert [c["id"] for c in listed] == [comment["id"]]
    assert forge_http.get("/repos/acme/api/issues/44/comments").json() == []


def test_comment_ids_increase(forge_http: httpx.Client) -> None:
    ids = [forge_http.post(COMMENTS, json={"body": f"c{i}"}).json()["id"] for i in range(3)]
    assert ids == sorted(ids) and len(set(ids)) == 3


@pytest.mark.parametrize(
    ("payload", "code"),
    [({}, "missing_field"), ({"body": ""}, "custom"), ({"body": "   "}, "custom"), ({"body": 5}, "invalid")],
)
def test_invalid_body_is_422_and_not_stored(forge_http: httpx.Client, payload: dict, code: str) -> None:
    response = forge_http.post(COMMENTS, json=payload)
    assert response.status_code == 422
    body = response.json()
    assert body["message"] == "Validation Failed"
    assert body["errors"][0]["field"] == "body" and body["errors"][0]["code"] == code
    assert forge_http.get(COMMENTS).json() == []


def test_unparsable_json_is_400(forge_http: httpx.Client) -> None:
    response = forge_http.post(COMMENTS, content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["message"] == "Problems parsing JSON"


def test_comment_on_unknown_pull_is_404(forge_http: httpx.Client, forge_state: ForgeState) -> None:
    assert forge_http.post("/repos/acme/api/issues/4242/comments", json={"body": "x"}).status_code == 404
    assert forge_http.get("/repos/acme/api/issues/4242/comments").status_code == 404
    assert forge_state.stats()["comments_posted"] == 0


def test_list_pagination_and_since(forge_http: httpx.Client, forge_state: ForgeState) -> None:
    posted = [forge_http.post(COMMENTS, json={"body": f"note {i}"}).json()["id"] for i in range(5)]
    page1 = forge_http.get(COMMENTS, params={"per_page": 2})
    assert [c["id"] for c in page1.json()] == posted[:2]
    assert 'rel="last"' in page1.headers["link"] and "page=3" in page1.headers["link"]
    page3 = forge_http.get(COMMENTS, params={"per_page": 2, "page": 3})
    assert [c["id"] for c in page3.json()] == posted[4:]
    future = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert forge_http.get(COMMENTS, params={"since": future}).json() == []
    assert len(forge_http.get(COMMENTS, params={"since": "2000-01-01T00:00:00Z"}).json()) == len(posted)
    assert forge_http.get(COMMENTS, params={"since": "yesterday"}).status_code == 422


def test_sim_comments_lists_everything_with_location(forge_http: httpx.Client) -> None:
    forge_http.post(COMMENTS, json={"body": "on api"})
    forge_http.post("/repos/acme/web/issues/7/comments", json={"body": "on web"})
    everything = forge_http.get("/_sim/comments").json()
    assert [(c["owner"], c["repo"], c["number"], c["body"]) for c in everything] == [
        ("acme", "api", 42, "on api"),
        ("acme", "web", 7, "on web"),
    ]


def test_stats_count_by_route_template(forge_http: httpx.Client) -> None:
    forge_http.get("/repos/acme/api/pulls/42")
    forge_http.get("/repos/acme/web/pulls/7")
    forge_http.post(COMMENTS, json={"body": "x"})
    forge_http.post(COMMENTS, json={})
    forge_http.get("/_sim/comments")  # control calls are not counted
    stats = forge_http.get("/_sim/stats").json()
    assert stats["requests"] == {
        "GET /repos/{owner}/{repo}/pulls/{number}": 2,
        "POST /repos/{owner}/{repo}/issues/{number}/comments": 2,
    }
    assert stats["total"] == 4
    assert stats["comments_posted"] == 1
    # ...and by repository (case folded), so a test can prove a repository was never read.
    forge_http.get("/repos/ACME/Web/pulls/7")
    assert forge_http.get("/_sim/stats").json()["by_repository"] == {"acme/api": 3, "acme/web": 2}
