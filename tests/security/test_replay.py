"""A captured, genuinely signed delivery replayed under a fresh delivery id (the id header is
outside GitHub's HMAC; a bearer token signs nothing) is refused ``replayed-body`` before any
forge read — it would otherwise re-admit a version that ended failed, killed or out of budget,
with a fresh per-task budget. The replay is authenticated, so it leaves a receipt (and only that)."""

from __future__ import annotations

import pytest

from tests.security.senders import cloudevent, github, post

pytestmark = [pytest.mark.attack, pytest.mark.e2e]


def _replayed(target, pull, source: str, headers: dict, body: bytes, id_header: str) -> None:
    assert post(target, f"/webhooks/{source}", headers, body).json()["reason"] == "admitted"
    target.wait_done(pull)  # the genuine run is over: whatever happens next is the replays' doing
    before = target.observe()
    for n in range(3):
        r = post(target, f"/webhooks/{source}", headers | {id_header: f"replay-{n}-{headers[id_header]}"}, body)
        assert (r.status_code, r.json()["reason"]) == (200, "replayed-body"), r.text
    assert target.changes(before, reads=True) == {"rows.receipts": 3}  # no delivery claimed, no forge read
    again = post(target, f"/webhooks/{source}", headers, body)  # the original id itself
    assert again.json()["reason"] == "duplicate-delivery"


def test_a_captured_github_delivery_under_new_ids(target):
    pull = target.new_pull()
    headers, body = github(target, pull, action="opened")
    _replayed(target, pull, "github", headers, body, "x-github-delivery")


def test_a_captured_cloudevent_under_new_ids(target):
    pull = target.new_pull()
    headers, body = cloudevent(target, pull)
    _replayed(target, pull, "events", headers, body, "ce-id")
