"""Input hygiene, on both ledgers alike: ``.``/``..`` segments, NUL and control characters in
any identity field, and out-of-range numbers are refused as ``bad-input`` (a 4xx, never a 500),
by every parser and by the manual trigger, and nothing is admitted."""

from __future__ import annotations

import pytest

from tests.security.senders import cloudevent, manual, post, stdhooks, token

pytestmark = [pytest.mark.attack, pytest.mark.e2e]
RECEIPT_ONLY = {"rows.receipts": 1}
"""Authenticated but invalid: a reject receipt, no delivery recorded."""


@pytest.mark.parametrize("data", [{"repository": {"owner": "..", "name": "api"}},
                                  {"repository": {"owner": "acme", "name": "."}},
                                  {"number": 2**31}, {"number": 2**63 - 1}, {"head_sha": "../../etc"},
                                  {"head_sha": "a\u0000b"}], ids=["dotdot-owner", "dot-repo", "int32+1",
                                                                  "int64", "sha-segments", "sha-nul"])
def test_hostile_identity_in_a_signed_standard_webhook(target, data):
    headers, body = stdhooks(target, target.new_pull(), data=data)
    before = target.observe()
    r = post(target, "/webhooks/stdhooks", headers, body)
    assert (r.status_code, r.json()["reason"]) == (422, "bad-input"), r.text
    assert target.changes(before, reads=True) == RECEIPT_ONLY  # and the forge was never asked


@pytest.mark.parametrize("attributes", [{"subject": "pr\u0000/44"}, {"subject": "../../admin"},
                                        {"subject": "pr\u202e44"}], ids=["nul", "dotdot", "bidi"])
def test_hostile_cloudevent_attributes(target, attributes):
    headers, body = cloudevent(target, target.new_pull(), binary=False, **attributes)
    before = target.observe()
    r = post(target, "/webhooks/events", headers, body)
    assert (r.status_code, r.json()["reason"]) == (422, "bad-input"), r.text
    assert target.changes(before, reads=True) == RECEIPT_ONLY


@pytest.mark.parametrize("field, value", [("repository", "../api"), ("repository", "acme/.."),
                                          ("number", 2**31), ("number", 10**30), ("number", True),
                                          ("reason", "why\u0000not"), ("reason", "x" * 501),
                                          ("input_version", "a\u0000b"), ("request_id", "..\u2028x"),
                                          ("request_id", "a/../b"), ("source", "\u0000")])
def test_hostile_manual_fields_are_refused_and_never_echoed(target, field, value):
    pull = target.new_pull()
    body = {"repository": f"{pull[0]}/{pull[1]}", "number": pull[2], "reason": "r"} | {field: value}
    before = target.observe()
    r = manual(target, token(target, "alice"), body)
    assert (r.status_code, r.json()["reason"]) == (422, "bad-input") and field in r.json()["message"], r.text
    assert "\\u0000" not in r.text and "\x00" not in r.text
    assert len(str(value)) < 4 or str(value) not in r.text  # named, never echoed
    assert target.changes(before, reads=True) == RECEIPT_ONLY  # the actor's attempt is on record
