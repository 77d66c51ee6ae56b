"""Forge simulator: conditional pull reads (ETag / If-None-Match → 304), counted and free of rate limit."""

from __future__ import annotations

import hashlib

import httpx


def test_a_matching_if_none_match_answers_304_until_the_pull_changes(forge_http: httpx.Client) -> None:
    first = forge_http.get("/repos/acme/api/pulls/42")
    etag = first.headers["etag"]
    assert first.status_code == 200 and etag.startswith('W/"')
    again = forge_http.get("/repos/acme/api/pulls/42", headers={"If-None-Match": etag})
    assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", etag)
    forge_http.post("/_sim/pulls/acme/api/42", json={"head_sha": hashlib.sha1(b"etag push").hexdigest()})
    changed = forge_http.get("/repos/acme/api/pulls/42", headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag
    assert forge_http.get("/_sim/stats").json()["pull_reads"] == {"json": 2, "diff": 0, "not_modified": 1}


def test_a_304_is_not_counted_against_the_rate_limit(forge_http: httpx.Client) -> None:
    etag = forge_http.get("/repos/acme/api/pulls/42").headers["etag"]
    used = int(forge_http.get("/repos/acme/api/pulls/42").headers["x-ratelimit-used"])
    for _ in range(3):
        assert forge_http.get("/repos/acme/api/pulls/42", headers={"If-None-Match": etag}).status_code == 304
    after = int(forge_http.get("/repos/acme/api/pulls/42").headers["x-ratelimit-used"])
    assert after == used + 1  # only the last plain read counted; the three 304s did not
