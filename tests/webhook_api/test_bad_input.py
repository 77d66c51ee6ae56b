"""Bad input at the webhook API (real HTTP server, real intake, real ledger): a clear 4xx;
a reject receipt when the sender was authenticated and the delivery is identifiable; no row at
all (a counter instead) when it was not; and nothing lost for the next one."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest
from sqlmodel import Session, select

import ledger
from demo.github_payloads import delivery_headers, encode, pull_request_payload
from ledger import Receipt
from simulators import ServerThread
from tests.support.ledger_rows import grown, table_counts
from tests.support.sims import settings_for
from webhook_api import create_app

SECRET = "dev-webhook-secret"


@pytest.fixture
def api(sims, temporal_env, tmp_path):
    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    settings = settings_for(sims, url, SLUICEGATE__WEBHOOK_API__MAX_BODY_BYTES="65536")
    server = ServerThread(create_app(settings, client=temporal_env.client, search_attributes=False)).start()
    yield server, url
    server.stop()


def _receipts(url: str, delivery_id: str) -> list[Receipt]:
    engine = ledger.make_engine(url)
    with Session(engine) as s:
        rows = list(s.exec(select(Receipt).where(Receipt.delivery_id == delivery_id)).all())
    engine.dispose()
    return rows


def _valid_body() -> bytes:
    return encode(pull_request_payload("acme", "api", 44, "f" * 40))


UNAUTHENTICATED = {
    "missing signature": (lambda b, h: h.pop("x-hub-signature-256"), 401, "bad-signature"),
    "wrong signature": (lambda b, h: h.update({"x-hub-signature-256": "sha256=" + "ab" * 32}), 401, "bad-signature"),
    "missing event header": (lambda b, h: h.pop("x-github-event"), 401, "bad-signature"),  # one answer before auth
    "oversize body": (lambda b, h: b" " * 70_000 + b, 413, "bad-input"),
    "too many headers": (lambda b, h: h.update({f"x-pad-{i}": "x" for i in range(120)}), 431, "bad-input"),
    "oversize header": (lambda b, h: h.update({"x-pad": "x" * 9000}), 431, "bad-input"),
}
CASES = {
    "malformed json": (lambda b, h: b"{oops", 400, "bad-input"),
    "missing fields": (lambda b, h: json.dumps({"action": "opened"}).encode(), 422, "bad-input"),
    "unknown event": (lambda b, h: h.update({"x-github-event": "deployment"}), 422, "unsupported-event"),
    "wrong content type": (lambda b, h: h.update({"content-type": "application/x-www-form-urlencoded"}), 415,
                           "bad-input"),
}


@pytest.mark.parametrize("case", list(UNAUTHENTICATED))
def test_unauthenticated_delivery_gets_4xx_and_no_row(api, case):
    server, url = api
    mutate, status, reason = UNAUTHENTICATED[case]
    body = _valid_body()
    headers = delivery_headers(SECRET, body, delivery_id=str(uuid.uuid4()))
    new_body = mutate(body, headers)
    before = table_counts(url)
    r = httpx.post(f"{server.base_url}/webhooks/github", content=new_body if isinstance(new_body, bytes) else body,
                   headers=headers, timeout=10)
    assert r.status_code == status and r.json()["reason"] == reason, r.text
    assert (r.json()["receipt_id"], r.json()["delivery_id"]) == (None, None)
    assert grown(before, table_counts(url)) == {}


@pytest.mark.parametrize("case", list(CASES))
def test_authenticated_bad_delivery_gets_4xx_and_a_receipt(api, case):
    server, url = api
    mutate, status, reason = CASES[case]
    body = _valid_body()
    delivery_id = str(uuid.uuid4())
    headers = delivery_headers(SECRET, body, delivery_id=delivery_id)
    new_body = mutate(body, headers)
    if isinstance(new_body, bytes):  # a replaced body is signed properly: only its content is bad
        body = new_body
        headers["x-hub-signature-256"] = delivery_headers(SECRET, body)["x-hub-signature-256"]
    r = httpx.post(f"{server.base_url}/webhooks/github", content=body, headers=headers, timeout=10)
    assert r.status_code == status, r.text
    assert r.json()["reason"] == reason
    [receipt] = _receipts(url, delivery_id)
    assert (receipt.outcome, receipt.reason, receipt.id) == ("reject", reason, r.json()["receipt_id"])


def test_unidentifiable_delivery_gets_401_without_receipt(api):
    server, _ = api
    body = _valid_body()
    headers = delivery_headers(SECRET, body)
    del headers["x-github-delivery"]
    r = httpx.post(f"{server.base_url}/webhooks/github", content=body, headers=headers, timeout=10)
    assert r.status_code == 401 and r.json()["receipt_id"] is None  # answered as any unauthenticated request


def test_forged_delivery_does_not_block_the_genuine_one(api, sims):
    server, url = api
    head = httpx.get(f"{sims.forge.base_url}/repos/acme/api/pulls/44",
                     headers={"Authorization": "Bearer test-forge-token"}).json()["head"]["sha"]
    body = encode(pull_request_payload("acme", "api", 44, head))
    delivery_id = str(uuid.uuid4())
    forged = delivery_headers("attacker-secret", body, delivery_id=delivery_id)
    assert httpx.post(f"{server.base_url}/webhooks/github", content=body, headers=forged).status_code == 401
    genuine = httpx.post(f"{server.base_url}/webhooks/github", content=body,
                         headers=delivery_headers(SECRET, body, delivery_id=delivery_id))
    assert genuine.status_code == 202 and genuine.json()["outcome"] == "accept"
    assert [r.reason for r in _receipts(url, delivery_id)] == ["admitted"]


def test_manual_trigger_requires_a_configured_actor_and_then_records_bad_bodies(api):
    server, url = api
    body = {"repository": "acme/api", "number": 44, "reason": "check", "request_id": f"m-{uuid.uuid4()}"}
    before = table_counts(url)
    for token in ("nope", "", "dev-operator-token-alice "[:-1] + "x"):
        r = httpx.post(f"{server.base_url}/v1/triggers/manual", json=body, headers={"Authorization": f"Bearer {token}".strip()})
        assert r.status_code == 401 and r.json()["reason"] == "unauthorized-actor"
    assert grown(before, table_counts(url)) == {}  # unauthenticated: counted, never recorded
    r = httpx.post(f"{server.base_url}/v1/triggers/manual", json={**body, "number": -1, "extra": "\u0000"},
                   headers={"Authorization": "Bearer dev-operator-token-alice"})
    assert r.status_code == 422 and "number" in r.json()["message"] and "extra" not in r.text, r.text
    [receipt] = _receipts(url, r.json()["delivery_id"])  # authenticated: the actor's bad request is on record
    assert (receipt.reason, receipt.actor, receipt.source) == ("bad-input", "alice", "manual")


def test_forcing_a_rerun_needs_an_admin_and_is_recorded(api, sims):
    server, url = api
    head = httpx.get(f"{sims.forge.base_url}/repos/acme/api/pulls/44",
                     headers={"Authorization": "Bearer test-forge-token"}).json()["head"]["sha"]
    # The version ran to completion earlier.
    engine = ledger.make_engine(url)
    first = httpx.post(f"{server.base_url}/v1/triggers/manual", headers={"Authorization": "Bearer dev-admin-token-carol"},
                       json={"repository": "acme/api", "number": 44, "reason": "first review"}).json()
    ledger.WorkStore(engine).record_outcome(work_key=first["work_key"], input_version=head,
                                            generation=first["generation"], status="done", run_id=None, result={})
    engine.dispose()
    body = {"repository": "acme/api", "number": 44, "reason": "the model missed a bug", "force": True}
    again = httpx.post(f"{server.base_url}/v1/triggers/manual", json={**body, "force": False},
                       headers={"Authorization": "Bearer dev-admin-token-carol"})
    assert again.json()["reason"] == "duplicate-work"
    denied = httpx.post(f"{server.base_url}/v1/triggers/manual", json={**body, "request_id": "force-by-alice"},
                        headers={"Authorization": "Bearer dev-operator-token-alice"})
    assert denied.status_code == 403 and denied.json()["reason"] == "policy:override-not-permitted"
    [refused] = _receipts(url, "force-by-alice")
    assert (refused.actor, refused.trigger_kind) == ("alice", "manual")
    forced = httpx.post(f"{server.base_url}/v1/triggers/manual", json={**body, "request_id": "force-by-carol"},
                        headers={"Authorization": "Bearer dev-admin-token-carol"})
    assert forced.status_code == 202 and forced.json()["generation"] == first["generation"] + 1
    [receipt] = _receipts(url, "acme:force-by-carol")  # request ids are deduplicated per tenant
    assert (receipt.actor, receipt.override) == ("carol", "rerun-done: the model missed a bug")
