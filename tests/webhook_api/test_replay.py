"""A signed delivery replayed under a new delivery id: ``replayed-body``, before any forge read,
for every source kind, on both ledgers (real API on a server thread, real intake and ledger).
The same delivery id sent again stays ``duplicate-delivery``."""

from __future__ import annotations

import uuid

import pytest

from demo.github_payloads import delivery_headers, encode, pull_request_payload
from tests.webhook_api.deliveries import ce_binary, ce_structured, cloud_event, std_body, std_headers
from tests.support.ledger_rows import grown, table_counts
from tests.webhook_api.server import fresh_pull, post, receipts, running_api


def _github(s, pull, delivery_id):
    body = encode(pull_request_payload(*pull))
    headers = delivery_headers(s.sources["github"].secret, body, delivery_id=delivery_id)
    # X-GitHub-Delivery is outside GitHub's HMAC: a captured body verifies under any id.
    return headers, body, lambda new_id: (headers | {"x-github-delivery": new_id}, body)


def _stdhooks(s, pull, delivery_id):
    body = std_body(*pull)
    secret = s.sources["stdhooks"].secret
    # The id is signed: the same body re-signed under a new id (a sender "resending as new").
    return std_headers(secret, body, msg_id=delivery_id), body, lambda new_id: (
        std_headers(secret, body, msg_id=new_id), body)


def _events_binary(s, pull, delivery_id):
    headers, body = ce_binary(cloud_event(*pull, id=delivery_id), s.sources["events"].secret)
    return headers, body, lambda new_id: (headers | {"ce-id": new_id}, body)


def _events_structured(s, pull, delivery_id):
    headers, body = ce_structured(cloud_event(*pull, id=delivery_id), s.sources["events"].secret)
    return headers, body, lambda new_id: (headers, body.replace(delivery_id.encode(), new_id.encode()))


KINDS = {"github": ("github", _github), "stdhooks": ("stdhooks", _stdhooks),
         "events-binary": ("events", _events_binary), "events-structured": ("events", _events_structured)}


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_same_signed_content_under_a_new_delivery_id_is_a_replay(kind, sims, temporal_env, ledger_url):
    source, build = KINDS[kind]
    with running_api(sims, temporal_env, ledger_url) as (server, s):
        pull = fresh_pull(sims)
        first_id, replay_id = f"orig-{uuid.uuid4()}", f"replay-{uuid.uuid4()}"
        headers, body, replayed = build(s, pull, first_id)
        first = post(server, source, headers, body).json()
        assert first["reason"] == "admitted"
        reads = sims.forge_ctl("GET", "/stats").json()["total"]
        before = table_counts(ledger_url)
        r = post(server, source, *replayed(replay_id))
        assert (r.status_code, r.json()["outcome"], r.json()["reason"]) == (200, "reject", "replayed-body"), r.text
        assert sims.forge_ctl("GET", "/stats").json()["total"] == reads  # refused before the forge was read
        # Answered with the original receipt; no row for the replay (finding 4: replays cost a counter).
        assert (r.json()["receipt_id"], r.json()["work_key"]) == (
            first["receipt_id"], f"acme/github:{pull[0]}/{pull[1]}#{pull[2]}:review")
        assert receipts(ledger_url, replay_id) == []
        again = post(server, source, headers, body).json()  # the same id: a redelivery
        assert (again["reason"], again["receipt_id"]) == ("duplicate-delivery", first["receipt_id"])
        assert post(server, source, *replayed(replay_id)).json()["reason"] == "replayed-body"  # never claimed
        assert grown(before, table_counts(ledger_url)) == {}
        assert [x.id for x in receipts(ledger_url, first_id)] == [first["receipt_id"]]  # still queryable


@pytest.mark.parametrize("swap", ["event", "content-type"])
def test_a_captured_body_resent_with_other_unsigned_headers_costs_one_row_per_content(swap, sims, temporal_env,
                                                                                     ledger_url):
    """Found by an adversarial review (session 17): GitHub signs the body only, so a captured body
    resent under new delivery ids with another ``X-GitHub-Event`` or ``Content-Type`` verified, was
    rejected at normalize and wrote a reject receipt each time. Now the first such reject of a
    content writes its receipt and every repeat (of the id, or of the content) is answered from
    it, with no row; a body genuinely delivered before is answered ``replayed-body`` from its original."""
    changed = {"event": {"x-github-event": "push"}, "content-type": {"content-type": "text/plain"}}[swap]
    with running_api(sims, temporal_env, ledger_url) as (server, s):
        pull = fresh_pull(sims)
        headers, body, replayed = _github(s, pull, f"orig-{uuid.uuid4()}")
        h, b = replayed(f"replay-{uuid.uuid4()}")
        r = post(server, "github", h | changed, b)
        first = r.json()
        assert r.status_code in (415, 422) and first["receipt_id"]  # the first is a plain reject, with its receipt
        before = table_counts(ledger_url)
        again = []
        for _ in range(5):
            h, b = replayed(f"replay-{uuid.uuid4()}")
            again.append(post(server, "github", h | changed, b).json())
        assert {(a["reason"], a["receipt_id"]) for a in again} == {("replayed-body", first["receipt_id"])}
        assert grown(before, table_counts(ledger_url)) == {}
        genuine = post(server, "github", headers, body).json()  # the genuine delivery is still decided
        assert genuine["reason"] == "admitted"
        after_genuine = table_counts(ledger_url)
        h, b = replayed(f"replay-{uuid.uuid4()}")
        late = post(server, "github", h | changed, b).json()
        assert late["reason"] == "replayed-body"
        assert grown(after_genuine, table_counts(ledger_url)) == {}
