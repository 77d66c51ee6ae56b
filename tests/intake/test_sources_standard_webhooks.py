"""Standard Webhooks verification and normalization (pure, no server)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from intake.decision import Reason
from intake.errors import InvalidDelivery
from intake.identity import review_work_key
from intake.envelope import PullRequestRef
from intake.sources.mapping import PayloadMapping
from intake.sources.standard_webhooks import parse_standard_webhook
from tests.webhook_api.deliveries import STD_TYPE, std_body, std_headers

NEW = "whsec_Z2H18uWJB4g1CYE08ZfZgiD1SzVLwCa0fJZJbs4sl1A="
OLD = "whsec_up3RXH6ltP0tVw/ZQGJkrbMDPMVLJG4rIRwriCUS9Ag="
MAPPING = PayloadMapping(owner="data.repository.owner", repo="data.repository.name", number="data.number",
                         version="data.head_sha", actionable_types=[STD_TYPE])
SHA = "e" * 40


def _parse(headers, body, secrets=(NEW, OLD), mapping=MAPPING):
    return parse_standard_webhook(headers, body, source="stdhooks", tenant="acme", secrets=list(secrets),
                                  mapping=mapping, received_at=datetime.now(UTC))


def _rejected(headers, body, **kw) -> InvalidDelivery:
    with pytest.raises(InvalidDelivery) as info:
        _parse(headers, body, **kw)
    return info.value


def test_valid_delivery_names_the_same_work_as_github():
    at = datetime(2026, 11, 29, 9, 30, tzinfo=UTC)
    body = std_body("Acme", "API", 44, SHA, timestamp=at)
    parsed = _parse(std_headers(NEW, body, msg_id="msg_1"), body)
    env, cand = parsed.envelope, parsed.candidate
    assert (env.id, env.source, env.type, env.subject, env.time) == ("msg_1", "stdhooks", STD_TYPE, "Acme/API#44", at)
    assert cand.work_key == review_work_key("acme", PullRequestRef("acme", "api", 44)) == "acme/github:acme/api#44:review"
    assert (cand.input_version, cand.tenant) == (SHA, "acme")


def test_any_configured_secret_verifies_and_any_signature_entry_may_match():
    body = std_body("acme", "api", 1, SHA)
    assert _parse(std_headers(OLD, body), body).candidate is not None
    headers = std_headers(NEW, body)
    headers["webhook-signature"] = "v1,Zm9yZ2Vk v2,xyz " + headers["webhook-signature"]
    assert _parse(headers, body).candidate is not None


@pytest.mark.parametrize("mutate, message", [
    (lambda h: h.pop("webhook-signature"), "headers are required"),
    (lambda h: h.update({"webhook-signature": "v1,Zm9yZ2VkIHNpZ25hdHVyZSBvZiAzMiBieXRlcyEhIQ=="}), "no webhook-sig"),
    (lambda h: h.update({"webhook-signature": "v1"}), "malformed"),
    (lambda h: h.update({"webhook-signature": "v1,abc"}), "malformed"),
    (lambda h: h.update({"webhook-signature": "v1,é"}), "malformed"),
    (lambda h: h.update({"webhook-timestamp": "yesterday"}), "not a Unix time"),
    (lambda h: h.update({"webhook-timestamp": "nan"}), "not a Unix time"),
    (lambda h: h.update({"webhook-timestamp": "1e300"}), "not a Unix time"),
    (lambda h: h.update({"webhook-timestamp": str(int(datetime.now(UTC).timestamp()) - 600)}), "in the past"),
    (lambda h: h.update({"webhook-timestamp": str(int(datetime.now(UTC).timestamp()) + 600)}), "in the future"),
])
def test_signature_problems_are_401_with_the_delivery_id(mutate, message):
    body = std_body("acme", "api", 1, SHA)
    headers = std_headers(NEW, body, msg_id="msg_2")
    mutate(headers)
    err = _rejected(headers, body)
    assert (err.reason, err.http_status, err.delivery_id) == (Reason.BAD_SIGNATURE, 401, "msg_2")
    assert message in err.message


def test_a_replayed_delivery_is_refused_even_with_a_valid_signature():
    body = std_body("acme", "api", 1, SHA)
    err = _rejected(std_headers(NEW, body, at=datetime.now(UTC) - timedelta(minutes=6)), body)
    assert err.http_status == 401 and "replayed" in err.message


def test_missing_or_oversize_id_is_unidentifiable():
    body = std_body("acme", "api", 1, SHA)
    for bad in (None, "x" * 257, "a\x00b"):
        headers = std_headers(NEW, body)
        headers.pop("webhook-id") if bad is None else headers.update({"webhook-id": bad})
        err = _rejected(headers, body)
        assert (err.http_status, err.delivery_id) == (400, None)


@pytest.mark.parametrize("body, content_type, status", [
    (b"\xff\xfe", "application/json", 400),
    (b"{nope", "application/json", 400),
    (b"[1]", "application/json", 400),
    (b"[" * 65 + b"]" * 65, "application/json", 400),
    (json.dumps({"type": STD_TYPE}).encode(), "text/plain", 415),
    (json.dumps({"data": {}}).encode(), "application/json", 422),
    (json.dumps({"type": "x" * 129}).encode(), "application/json", 422),
])
def test_malformed_bodies_are_bad_input(body, content_type, status):
    headers = std_headers(NEW, body)
    headers["content-type"] = content_type
    err = _rejected(headers, body)
    assert (err.reason, err.http_status) == (Reason.BAD_INPUT, status)
    assert err.delivery_id == headers["webhook-id"]


def test_actionable_event_with_bad_fields_names_every_path():
    payload = {"type": STD_TYPE, "data": {"repository": {"owner": "ac me"}, "number": True, "head_sha": SHA}}
    body = json.dumps(payload).encode()
    err = _rejected(std_headers(NEW, body), body)
    assert err.http_status == 422
    for path in ("data.repository.owner", "data.repository.name (repo: missing)", "data.number"):
        assert path in err.message


def test_other_types_ask_for_no_work_without_needing_the_mapping():
    body = json.dumps({"type": "pull_request.labeled", "data": {}}).encode()
    parsed = _parse(std_headers(NEW, body), body)
    assert parsed.candidate is None and parsed.envelope.type == "pull_request.labeled"


def test_event_time_falls_back_to_the_signed_timestamp_and_bad_times_are_422():
    body = json.dumps({"type": "ping"}).encode()
    at = datetime.now(UTC).replace(microsecond=0)
    assert _parse(std_headers(NEW, body, at=at), body).envelope.time == at
    body = json.dumps({"type": "ping", "timestamp": "last tuesday"}).encode()
    assert _rejected(std_headers(NEW, body), body).http_status == 422


def test_json_pointer_paths_resolve_escapes_and_list_indexes():
    mapping = PayloadMapping(owner="/d/a~1b/0", repo="/d/a~1b/1", number="/d/n", version="/d/~0v",
                             actionable_types=["go"], time=None)
    body = json.dumps({"type": "go", "d": {"a/b": ["acme", "api"], "n": 3, "~v": SHA}}).encode()
    cand = _parse(std_headers(NEW, body), body, mapping=mapping).candidate
    assert (cand.work_key, cand.input_version) == ("acme/github:acme/api#3:review", SHA)
