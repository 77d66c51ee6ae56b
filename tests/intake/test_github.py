"""GitHub delivery verification and normalization (pure, no server)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from intake.decision import Reason
from intake.errors import InvalidDelivery
from intake.github import parse_github_delivery
from demo.github_payloads import delivery_headers, encode, pull_request_payload

SECRET = "s3cret"
NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)


def _parse(headers, body, secrets=(SECRET,)):
    return parse_github_delivery(headers, body, source="github", tenant="acme", secrets=list(secrets),
                                 received_at=NOW)


def test_valid_delivery_becomes_envelope_and_candidate():
    pushed = datetime(2026, 11, 29, 10, 5, tzinfo=UTC)
    body = encode(pull_request_payload("Acme", "API", 42, "a" * 40, action="synchronize", updated_at=pushed))
    headers = delivery_headers(SECRET, body, delivery_id="d-1")
    parsed = _parse(headers, body)
    env, cand = parsed.envelope, parsed.candidate
    assert (env.id, env.source, env.type, env.subject) == ("d-1", "github", "pull_request.synchronize", "Acme/API#42")
    assert env.received_at == NOW and env.time == pushed
    assert (cand.work_key, cand.input_version) == ("acme/github:acme/api#42:review", "a" * 40)


def test_rotated_secret_still_verifies():
    body = encode(pull_request_payload("acme", "api", 1, "b" * 40))
    assert _parse(delivery_headers("old", body), body, secrets=("new", "old")).candidate is not None


@pytest.mark.parametrize("mutate, reason, status", [
    (lambda h: h.pop("x-hub-signature-256"), Reason.BAD_SIGNATURE, 401),
    (lambda h: h.update({"x-hub-signature-256": "sha256=" + "0" * 64}), Reason.BAD_SIGNATURE, 401),
    (lambda h: h.update({"x-hub-signature-256": "sha1=" + "0" * 40}), Reason.BAD_SIGNATURE, 401),
    (lambda h: h.pop("x-github-event"), Reason.BAD_INPUT, 400),
    (lambda h: h.update({"content-type": "text/plain"}), Reason.BAD_INPUT, 415),
    (lambda h: h.update({"x-github-event": "issues"}), Reason.UNSUPPORTED_EVENT, 422),
])
def test_header_problems_are_rejected_with_delivery_id(mutate, reason, status):
    body = encode(pull_request_payload("acme", "api", 1, "c" * 40))
    headers = delivery_headers(SECRET, body, delivery_id="d-2")
    mutate(headers)
    with pytest.raises(InvalidDelivery) as info:
        _parse(headers, body)
    assert (info.value.reason, info.value.http_status, info.value.delivery_id) == (reason, status, "d-2")


def test_missing_delivery_id_is_unidentifiable():
    body = encode(pull_request_payload("acme", "api", 1, "c" * 40))
    headers = delivery_headers(SECRET, body)
    del headers["x-github-delivery"]
    with pytest.raises(InvalidDelivery) as info:
        _parse(headers, body)
    assert info.value.delivery_id is None and info.value.http_status == 400


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b"\xff\xfe", b"[" * 100_000 + b"]" * 100_000])
def test_malformed_bodies_are_bad_input(body):
    with pytest.raises(InvalidDelivery) as info:
        _parse(delivery_headers(SECRET, body), body)
    assert info.value.reason == Reason.BAD_INPUT


def test_missing_fields_name_the_field():
    payload = pull_request_payload("acme", "api", 1, "c" * 40)
    del payload["pull_request"]["head"]["sha"]
    body = encode(payload)
    with pytest.raises(InvalidDelivery) as info:
        _parse(delivery_headers(SECRET, body), body)
    assert "pull_request.head.sha" in info.value.message and info.value.http_status == 422


def test_non_actionable_action_has_no_candidate():
    body = encode(pull_request_payload("acme", "api", 1, "c" * 40, action="labeled"))
    parsed = _parse(delivery_headers(SECRET, body), body)
    assert parsed.candidate is None and parsed.envelope.type == "pull_request.labeled"
