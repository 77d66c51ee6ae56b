"""A captured, genuinely signed delivery replayed under a fresh delivery id (the id header is
outside GitHub's HMAC; a bearer token signs nothing) is refused ``replayed-body`` before any
forge read — it would otherwise re-admit a version that ended failed, killed or out of budget,
with a fresh per-task budget. A replay (and a redelivery) is answered with the original receipt
id and writes nothing: it costs a counter (``sluicegate.intake.decisions`` by reason), not a row."""

from __future__ import annotations

import pytest

from tests.security.senders import cloudevent, github, post

pytestmark = [pytest.mark.attack, pytest.mark.e2e]


def _replayed(target, pull, source: str, headers: dict, body: bytes, id_header: str) -> None:
    first = post(target, f"/webhooks/{source}", headers, body).json()
    assert first["reason"] == "admitted"
    target.wait_done(pull)  # the genuine run is over: whatever happens next is the replays' doing
    before = target.observe()
    for n in range(3):
        r = post(target, f"/webhooks/{source}", headers | {id_header: f"replay-{n}-{headers[id_header]}"}, body)
        assert (r.status_code, r.json()["reason"], r.json()["receipt_id"]) == (
            200, "replayed-body", first["receipt_id"]), r.text
    again = post(target, f"/webhooks/{source}", headers, body)  # the original id itself
    assert (again.json()["reason"], again.json()["receipt_id"]) == ("duplicate-delivery", first["receipt_id"])
    assert target.changes(before, reads=True) == {}  # no row, no delivery claimed, no forge read


def test_a_captured_github_delivery_under_new_ids(target):
    pull = target.new_pull()
    headers, body = github(target, pull, action="opened")
    _replayed(target, pull, "github", headers, body, "x-github-delivery")


def test_a_captured_cloudevent_under_new_ids(target):
    pull = target.new_pull()
    headers, body = cloudevent(target, pull)
    _replayed(target, pull, "events", headers, body, "ce-id")
