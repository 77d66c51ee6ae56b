"""Bound, then authenticate, then answer a known redelivery, then parse (real HTTP server, real intake,
real SQLite ledger, Temporal test server): an authenticated redelivery whose original is committed
and final is answered with the original receipt without its body being parsed or the ledger read;
a forged signature under a known delivery id is ``bad-signature``, reads nothing and writes nothing."""

from __future__ import annotations

import uuid

import httpx
import pytest

import ledger
import webhook_api._app as app_module
from demo.github_payloads import delivery_headers, encode, pull_request_payload
from intake.service import IntakeService
from ledger import SqlIntakeStore
from simulators import ServerThread
from tests.support.ledger_rows import grown, table_counts
from tests.support.sims import settings_for
from webhook_api import create_app

SECRET = "dev-webhook-secret"


class Counts:
    def __init__(self) -> None:
        self.n: dict[str, int] = {}

    def wrap(self, name: str, fn):
        def counted(*args, **kwargs):
            self.n[name] = self.n.get(name, 0) + 1
            return fn(*args, **kwargs)
        return counted


@pytest.fixture
def api(sims, temporal_env, tmp_path, monkeypatch):
    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    counts = Counts()
    monkeypatch.setattr(app_module, "normalize", counts.wrap("parse", app_module.normalize))
    for name in ("find_repeat", "find_repeat_inline"):
        monkeypatch.setattr(SqlIntakeStore, name, counts.wrap("ledger read", getattr(SqlIntakeStore, name)))
    monkeypatch.setattr(IntakeService, "known_delivery", counts.wrap("known", IntakeService.known_delivery))
    server = ServerThread(create_app(settings_for(sims, url), client=temporal_env.client,
                                     search_attributes=False)).start()
    yield server, url, counts
    server.stop()


def _admitted_original(server, sims):
    head = httpx.get(f"{sims.forge.base_url}/repos/acme/api/pulls/44",
                     headers={"Authorization": "Bearer test-forge-token"}).json()["head"]["sha"]
    body = encode(pull_request_payload("acme", "api", 44, head))
    headers = delivery_headers(SECRET, body, delivery_id=str(uuid.uuid4()))
    first = httpx.post(f"{server.base_url}/webhooks/github", content=body, headers=headers, timeout=30)
    assert first.status_code == 202 and first.json()["outcome"] == "accept" and first.json()["admitted"], first.text
    return body, headers, first.json()


def test_an_authenticated_redelivery_is_answered_before_the_parse_with_the_original_receipt(api, sims):
    server, url, counts = api
    body, headers, original = _admitted_original(server, sims)
    parsed, read = counts.n.get("parse", 0), counts.n.get("ledger read", 0)
    before = table_counts(url)
    again = httpx.post(f"{server.base_url}/webhooks/github", content=body, headers=headers, timeout=30)
    assert again.status_code == 200, again.text
    answer = again.json()
    assert (answer["outcome"], answer["reason"]) == ("reject", "duplicate-delivery")
    assert answer["receipt_id"] == original["receipt_id"]
    assert (answer["workflow_id"], answer["run_id"], answer["admitted"], answer["queued"]) == (
        original["workflow_id"], original["run_id"], True, False)
    assert (counts.n.get("parse", 0), counts.n.get("ledger read", 0)) == (parsed, read)  # neither parsed nor read
    assert grown(before, table_counts(url)) == {}  # a repeat writes no row


def test_a_forged_signature_under_a_known_delivery_id_reads_nothing(api, sims):
    server, url, counts = api
    body, headers, _ = _admitted_original(server, sims)
    known, read, parsed = counts.n.get("known", 0), counts.n.get("ledger read", 0), counts.n.get("parse", 0)
    before = table_counts(url)
    forged = delivery_headers("attacker-secret", body, delivery_id=headers["x-github-delivery"])
    r = httpx.post(f"{server.base_url}/webhooks/github", content=body, headers=forged, timeout=30)
    assert r.status_code == 401, r.text
    assert (r.json()["reason"], r.json()["receipt_id"], r.json()["delivery_id"]) == ("bad-signature", None, None)
    assert (counts.n.get("known", 0), counts.n.get("ledger read", 0), counts.n.get("parse", 0)) == (known, read, parsed)
    assert grown(before, table_counts(url)) == {}
