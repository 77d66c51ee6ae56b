"""An unknown source name answers exactly like a bad signature (finding 9): a caller cannot tell
which source names are configured. Still only a counter (``source="unknown"``), no row."""

from __future__ import annotations

import uuid

import pytest

import ledger
from demo.github_payloads import delivery_headers, encode, pull_request_payload
from tests.support.ledger_rows import grown, table_counts
from tests.webhook_api.deliveries import ce_structured, cloud_event, std_body, std_headers
from tests.webhook_api.server import post, running_api


@pytest.fixture(scope="module")
def api(sims, temporal_env, tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('unknown') / 'ledger.sqlite'}"
    ledger.upgrade(url)
    with running_api(sims, temporal_env, url) as (server, s):
        yield server, s, url


def _answer(r):
    return r.status_code, r.json()


def _forged(kind: str):
    if kind == "github":
        body = encode(pull_request_payload("acme", "api", 42, "f" * 40, action="synchronize"))
        return delivery_headers("attacker-secret-guess-0001", body), body
    if kind == "stdhooks":
        body = std_body("acme", "api", 42, "f" * 40)
        return std_headers("whsec_" + "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB", body), body
    return ce_structured(cloud_event("acme", "api", 42, "f" * 40), "not-the-token-0000")


@pytest.mark.parametrize("kind, configured", [("github", "github"), ("stdhooks", "stdhooks"), ("events", "events")])
def test_an_unknown_source_is_answered_like_a_bad_signature(api, kind, configured):
    server, _, url = api
    headers, body = _forged(kind)
    before = table_counts(url)
    known = _answer(post(server, configured, headers, body))
    unknown = _answer(post(server, f"x{uuid.uuid4().hex[:8]}", headers, body))
    assert known == unknown
    assert unknown[0] == 401 and unknown[1]["reason"] == "bad-signature"
    assert grown(before, table_counts(url)) == {}


def test_a_bare_request_tells_nothing_either(api):
    server, _, _ = api
    bare = {"content-type": "application/json"}
    answers = {name: _answer(post(server, name, bare, b"{}")) for name in ("github", "stdhooks", "events", "nosuch")}
    assert len({str(a) for a in answers.values()}) == 1, answers
