"""Forge simulator: reading pull requests (JSON, diff, lists, pagination)."""

from __future__ import annotations

import re

import httpx
import pytest

DIFF_TYPES = ["application/vnd.github.diff", "application/vnd.github.v3.diff"]


def test_pull_json_matches_fixture(forge_http: httpx.Client, fixture_pulls: dict) -> None:
    raw = fixture_pulls[("acme", "api", 42)]
    response = forge_http.get("/repos/acme/api/pulls/42")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    pull = response.json()
    assert (pull["number"], pull["state"], pull["title"]) == (42, raw["state"], raw["title"])
    assert pull["user"]["login"] == raw["user"]
    assert (pull["head"]["ref"], pull["head"]["sha"]) == (raw["head_ref"], raw["head_sha"])
    assert (pull["base"]["ref"], pull["base"]["sha"]) == (raw["base_ref"], raw["base_sha"])
    assert pull["head"]["repo"]["full_name"] == pull["base"]["repo"]["full_name"] == "acme/api"
    assert pull["created_at"] == raw["created_at"] and pull["updated_at"] == raw["updated_at"]
    assert pull["merged"] is False
    assert isinstance(pull["id"], int) and pull["node_id"]
    assert pull["html_url"].endswith("/acme/api/pull/42")


def test_closed_merged_pull(forge_http: httpx.Client, fixture_pulls: dict) -> None:
    pull = forge_http.get("/repos/acme/api/pulls/43").json()
    assert pull["state"] == fixture_pulls[("acme", "api", 43)]["state"] == "closed"
    assert pull["merged"] is True and pull["merged_at"] and pull["closed_at"]


@pytest.mark.parametrize("accept", DIFF_TYPES)
def test_diff_via_accept_header(forge_http: httpx.Client, fixture_pulls: dict, accept: str) -> None:
    response = forge_http.get("/repos/acme/web/pulls/7", headers={"Accept": accept})
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.text == fixture_pulls[("acme", "web", 7)]["diff"]


def test_fixture_diffs_are_well_formed_unified_diffs(fixture_pulls: dict) -> None:
    for key, raw in fixture_pulls.items():
        assert re.fullmatch(r"[0-9a-f]{40}", raw["head_sha"]) and re.fullmatch(r"[0-9a-f]{40}", raw["base_sha"])
        files = re.findall(r"^diff --git a/(\S+) b/\S+$", raw["diff"], re.M)
        assert 2 <= len(files) <= 3, key
        lines = raw["diff"].splitlines()
        for i, line in enumerate(lines):
            if m := re.match(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@", line):
                body = []
                for nxt in lines[i + 1 :]:
                    if nxt.startswith(("diff --git", "@@")):
                        break
                    body.append(nxt)
                old = sum(1 for b in body if b[:1] in " -")
                new = sum(1 for b in body if b[:1] in " +")
                assert (old, new) == (int(m[1] or 1), int(m[2] or 1)), (key, line)


@pytest.mark.parametrize(
    "path",
    ["/repos/acme/api/pulls/999", "/repos/nobody/nothing/pulls/1", "/repos/acme/api/pulls/abc", "/nowhere"],
)
def test_not_found_shape(forge_http: httpx.Client, path: str) -> None:
    response = forge_http.get(path)
    assert response.status_code == 404
    body = response.json()
    assert body["message"] == "Not Found" and body["documentation_url"].startswith("https://docs.github.com")


def test_owner_and_repo_are_case_insensitive(forge_http: httpx.Client) -> None:
    assert forge_http.get("/repos/ACME/Api/pulls/42").json()["number"] == 42


def test_list_filters_by_state(forge_http: httpx.Client, fixture_pulls: dict) -> None:
    for state in ("open", "closed"):
        listed = {p["number"] for p in forge_http.get("/repos/acme/api/pulls", params={"state": state}).json()}
        expected = {n for (o, r, n), raw in fixture_pulls.items() if (o, r, raw["state"]) == ("acme", "api", state)}
        assert listed == expected
    default = {p["number"] for p in forge_http.get("/repos/acme/api/pulls").json()}
    assert default == {p["number"] for p in forge_http.get("/repos/acme/api/pulls?state=open").json()}


def test_list_sort_and_direction(forge_http: httpx.Client, fixture_pulls: dict) -> None:
    api = [raw for (o, r, _), raw in fixture_pulls.items() if (o, r) == ("acme", "api")]
    by_created = [raw["number"] for raw in sorted(api, key=lambda raw: raw["created_at"])]
    by_updated = [raw["number"] for raw in sorted(api, key=lambda raw: raw["updated_at"])]

    def numbers(**params: str) -> list[int]:
        return [p["number"] for p in forge_http.get("/repos/acme/api/pulls", params={"state": "all", **params}).json()]

    assert numbers() == by_created[::-1]  # GitHub default: created, desc
    assert numbers(direction="asc") == by_created
    assert numbers(sort="updated") == by_updated  # default direction asc for non-created sorts
    assert numbers(sort="updated", direction="desc") == by_updated[::-1]


def test_list_rejects_bad_state(forge_http: httpx.Client) -> None:
    response = forge_http.get("/repos/acme/api/pulls", params={"state": "merged"})
    assert response.status_code == 422
    assert response.json()["message"] == "Validation Failed"


def _links(header: str) -> dict[str, str]:
    return {rel: url for url, rel in re.findall(r'<([^>]+)>; rel="(\w+)"', header)}


def test_pagination_link_header_walks_every_page(forge_http: httpx.Client, fixture_pulls: dict) -> None:
    expected = sorted(n for (o, r, n) in fixture_pulls if (o, r) == ("acme", "api"))
    first = forge_http.get("/repos/acme/api/pulls", params={"state": "all", "per_page": 1})
    links = _links(first.headers["link"])
    assert set(links) == {"next", "last"}
    assert "page=2" in links["next"] and f"page={len(expected)}" in links["last"]
    assert "per_page=1" in links["next"] and "state=all" in links["next"]
    seen = [p["number"] for p in first.json()]
    url = links["next"]
    while url:
        page = forge_http.get(url)
        seen += [p["number"] for p in page.json()]
        page_links = _links(page.headers.get("link", ""))
        assert {"prev", "first"} <= set(page_links)
        url = page_links.get("next")
    assert sorted(seen) == expected


def test_single_page_has_no_link_header(forge_http: httpx.Client, fixture_pulls: dict) -> None:
    response = forge_http.get("/repos/acme/api/pulls", params={"state": "all", "per_page": 100})
    assert "link" not in response.headers
    assert len(response.json()) == sum(1 for (o, r, _) in fixture_pulls if (o, r) == ("acme", "api"))
