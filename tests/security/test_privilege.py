"""Privilege comes only from authentication: no payload field, in any source kind, re-runs a
version already done; only an admin actor's ``force`` on the manual trigger does."""

from __future__ import annotations

import json

import pytest
from sqlmodel import Session, select

import ledger
from ledger import Receipt
from tests.security.senders import cloudevent, github, manual, post, stdhooks, token

pytestmark = [pytest.mark.attack, pytest.mark.e2e]
DECIDED = {"rows.receipts": 1, "rows.deliveries": 1}
"""An authenticated delivery that is decided (here: rejected) leaves its receipt and delivery id."""


def _receipt(target, delivery_id: str) -> Receipt:
    engine = ledger.make_engine(target.ledger_url)
    try:
        with Session(engine) as s:
            return s.exec(select(Receipt).where(Receipt.delivery_id == delivery_id)).one()
    finally:
        engine.dispose()


def _refused_rerun(target, source: str, headers: dict, body: bytes, delivery_id: str) -> None:
    before = target.observe()
    r = post(target, f"/webhooks/{source}", headers, body)
    assert (r.status_code, r.json()["outcome"], r.json()["reason"]) == (200, "reject", "duplicate-work"), r.text
    assert target.changes(before) == DECIDED
    receipt = _receipt(target, delivery_id)
    assert (receipt.override, receipt.actor) == (None, None)


def test_override_and_force_fields_in_a_signed_standard_webhook(target, done_pull):
    fields = {"override": "rerun-done: x", "force": True, "actor": "carol"}
    headers, body = stdhooks(target, done_pull, top=fields, data=fields)
    _refused_rerun(target, "stdhooks", headers, body, headers["webhook-id"])


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "structured"])
def test_override_extension_attribute_in_a_cloudevent(target, done_pull, binary):
    headers, body = cloudevent(target, done_pull, binary=binary, override="rerun-done: x", force="true")
    delivery_id = headers.get("ce-id") or json.loads(body)["id"]
    _refused_rerun(target, "events", headers, body, delivery_id)


def test_override_field_in_a_signed_github_payload(target, done_pull):
    headers, body = github(target, done_pull, extra={"override": "rerun-done: x", "force": True})
    _refused_rerun(target, "github", headers, body, headers["x-github-delivery"])


def test_force_by_an_operator_is_refused_with_a_receipt(target, done_pull):
    before = target.observe()
    r = manual(target, token(target, "alice"), {"repository": f"{done_pull[0]}/{done_pull[1]}",
                                               "number": done_pull[2], "reason": "again", "force": True})
    assert (r.status_code, r.json()["reason"]) == (403, "policy:override-not-permitted"), r.text
    assert target.changes(before) == {"rows.receipts": 1}  # who asked is on record; the id is not burnt
    assert _receipt(target, r.json()["delivery_id"]).actor == "alice"
