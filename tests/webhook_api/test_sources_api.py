"""Every source kind through the real API: routing by kind, one work item across sources,
clear 4xx with a receipt for identifiable bad deliveries that were authenticated, and nothing
durable for the ones that were not."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

import ledger
from demo.github_payloads import delivery_headers, encode, pull_request_payload
from tests.support.ledger_rows import grown, table_counts
from tests.webhook_api.deliveries import ce_binary, ce_structured, cloud_event, std_body, std_headers
from tests.webhook_api.server import fresh_pull, post, receipts, running_api


@pytest.fixture
def api(sims, temporal_env, tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    with running_api(sims, temporal_env, url, SLUICEGATE__WEBHOOK_API__MAX_BODY_BYTES="65536") as (server, s):
        yield server, s, url


def _github(s, owner, repo, number, sha):
    body = encode(pull_request_payload(owner, repo, number, sha, action="synchronize"))
    return delivery_headers(s.sources["github"].secret, body), body


def _stdhooks(s, owner, repo, number, sha, secret_index=0):
    body = std_body(owner, repo, number, sha)
    return std_headers(s.sources["stdhooks"].secret_values()[secret_index], body), body


def test_one_pull_request_version_is_one_work_item_whichever_source_reports_it(api, sims):
    server, s, url = api
    owner, repo, number, sha = fresh_pull(sims)
    token = s.sources["events"].secret
    sent = [("stdhooks", *_stdhooks(s, owner, repo, number, sha)),
            ("events", *ce_structured(cloud_event(owner, repo, number, sha), token)),
            ("events", *ce_binary(cloud_event(owner, repo, number, sha), token)),
            ("github", *_github(s, owner, repo, number, sha))]
    answers = [post(server, source, headers, body) for source, headers, body in sent]
    assert [(r.status_code, r.json()["reason"]) for r in answers] == [
        (202, "admitted"), (200, "duplicate-work"), (200, "duplicate-work"), (200, "duplicate-work")]
    assert {r.json()["work_key"] for r in answers} == {f"acme/github:{owner}/{repo}#{number}:review"}


def test_a_rotated_stdhooks_secret_is_accepted(api, sims):
    server, s, _ = api
    r = post(server, "stdhooks", *_stdhooks(s, *fresh_pull(sims), secret_index=1))
    assert r.status_code == 202, r.text


def test_non_actionable_generic_events_are_no_work(api):
    server, s, url = api
    headers, body = ce_binary(cloud_event("acme", "api", 1, "a" * 40, type="dev.sluicegate.ping"),
                              s.sources["events"].secret)
    r = post(server, "events", headers, body)
    assert (r.status_code, r.json()["outcome"], r.json()["reason"]) == (200, "no-work", "not-actionable")
    [receipt] = receipts(url, headers["ce-id"])
    assert (receipt.source, receipt.event_type) == ("events", "dev.sluicegate.ping")


def _replayed(s):
    body = std_body("acme", "api", 44, "f" * 40)
    return "stdhooks", std_headers(s.sources["stdhooks"].secret, body, at=datetime.now(UTC) - timedelta(hours=1)), body


def _forged_ce(s):
    return ("events", *ce_structured(cloud_event("acme", "api", 44, "f" * 40), "guess"))


def _oversize_std(s):
    headers, _ = _stdhooks(s, "acme", "api", 44, "f" * 40)
    return "stdhooks", headers, b" " * 70_000


def _ce_missing_type(s):
    headers, body = ce_binary(cloud_event("acme", "api", 44, "f" * 40), s.sources["events"].secret)
    del headers["ce-type"]
    return "events", headers, body


@pytest.mark.parametrize("build, status, reason, text", [
    (_replayed, 401, "bad-signature", "missing or invalid signature"),  # the detail is in the log only
    (_forged_ce, 401, "bad-signature", "missing or invalid signature"),
    (_oversize_std, 413, "bad-input", "exceeds"),
])
def test_unauthenticated_generic_deliveries_get_4xx_and_no_row(api, build, status, reason, text):
    server, s, url = api
    source, headers, body = build(s)
    before = table_counts(url)
    r = post(server, source, headers, body)
    assert r.status_code == status and r.json()["reason"] == reason and text in r.json()["message"], r.text
    assert (r.json()["receipt_id"], r.json()["delivery_id"]) == (None, None)
    assert grown(before, table_counts(url)) == {}


def test_authenticated_bad_generic_delivery_gets_4xx_and_a_receipt(api):
    build, status, reason, text = _ce_missing_type, 422, "bad-input", "type"
    server, s, url = api
    source, headers, body = build(s)
    r = post(server, source, headers, body)
    assert r.status_code == status and r.json()["reason"] == reason and text in r.json()["message"], r.text
    [receipt] = receipts(url, r.json()["delivery_id"])
    assert (receipt.id, receipt.source, receipt.outcome, receipt.reason) == (r.json()["receipt_id"], source,
                                                                             "reject", reason)


def test_forged_generic_delivery_does_not_block_the_genuine_one(api, sims):
    server, s, url = api
    owner, repo, number, sha = fresh_pull(sims)
    event = cloud_event(owner, repo, number, sha, id=str(uuid.uuid4()))
    assert post(server, "events", *ce_binary(event, "attacker")).status_code == 401
    assert post(server, "events", *ce_binary(event, s.sources["events"].secret)).status_code == 202
    assert [r.reason for r in receipts(url, event.get_id())] == ["admitted"]
