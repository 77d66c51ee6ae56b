"""CloudEvents structured and binary modes, bearer authentication, normalization (pure)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from intake.decision import Reason
from intake.errors import InvalidDelivery
from intake.sources.cloudevents_source import parse_cloudevent
from intake.sources.mapping import PayloadMapping
from tests.webhook_api.deliveries import CE_TYPE, ce_binary, ce_structured, cloud_event

TOKEN, OLD_TOKEN = "ce-token-new", "ce-token-old"
MAPPING = PayloadMapping(owner="/data/repository/owner", repo="/data/repository/name", number="/data/number",
                         version="/data/head_sha", actionable_types=[CE_TYPE])
SHA = "d" * 40
AT = datetime(2026, 11, 29, 11, 0, tzinfo=UTC)
MODES = {"structured": ce_structured, "binary": ce_binary}
STRUCTURED_HEADERS = {"content-type": "application/cloudevents+json", "authorization": f"Bearer {TOKEN}"}


def _parse(headers, body, secrets=(TOKEN, OLD_TOKEN)):
    return parse_cloudevent(headers, body, source="events", tenant="acme", secrets=list(secrets), mapping=MAPPING,
                            received_at=datetime.now(UTC))


def _rejected(headers, body) -> InvalidDelivery:
    with pytest.raises(InvalidDelivery) as info:
        _parse(headers, body)
    return info.value


@pytest.mark.parametrize("mode", MODES)
def test_both_modes_give_the_same_envelope_and_github_work_key(mode):
    event = cloud_event("Acme", "api", 44, SHA, id="ce-1", time=AT, subject="pr/44")
    parsed = _parse(*MODES[mode](event, TOKEN))
    env, cand = parsed.envelope, parsed.candidate
    assert (env.id, env.source, env.type, env.subject, env.time) == ("ce-1", "events", CE_TYPE, "pr/44", AT)
    assert (cand.work_key, cand.input_version) == ("github:acme/api#44:review", SHA)


@pytest.mark.parametrize("mode", MODES)
def test_rotated_token_is_accepted_and_a_wrong_one_is_401_without_reading_the_body(mode):
    event = cloud_event("acme", "api", 1, SHA, id="ce-2")
    assert _parse(*MODES[mode](event, OLD_TOKEN)).candidate is not None
    for token in ("nope", None, "é", ""):
        headers, body = MODES[mode](event, token)
        err = _rejected(headers, body)
        assert (err.reason, err.http_status) == (Reason.BAD_SIGNATURE, 401)
        assert err.delivery_id in (None, headers.get("ce-id"))  # never read from an unauthenticated body


def test_a_missing_time_stays_unknown_rather_than_now():
    headers, body = ce_binary(cloud_event("acme", "api", 1, SHA), TOKEN)
    del headers["ce-time"]
    assert _parse(headers, body).envelope.time is None


def _structured(**attrs) -> tuple[dict[str, str], bytes]:
    doc = {"id": "ce-3", "source": "/s", "type": "t", "specversion": "1.0", **attrs}
    doc = {k: v for k, v in doc.items() if v is not None}
    return STRUCTURED_HEADERS, json.dumps(doc).encode()


@pytest.mark.parametrize("headers_body, status, delivery_id, text", [
    (_structured(id=None), 400, None, "id"),
    (_structured(id=""), 400, None, "id"),
    (_structured(id=7), 400, None, "id"),
    (_structured(type=None), 422, "ce-3", "type"),
    (_structured(specversion=None), 422, "ce-3", "specversion"),
    (_structured(specversion="0.3"), 422, "ce-3", "specversion"),
    (_structured(time="soon"), 422, "ce-3", "invalid CloudEvent"),
    (_structured(time=5), 422, "ce-3", "invalid CloudEvent"),
    (_structured(time="2026-11-29T10:00:00"), 422, "ce-3", "time (value not allowed by the spec)"),
    (_structured(Bad_Ext="x"), 422, "ce-3", "an extension attribute (bad name)"),
    (_structured(subject=""), 422, "ce-3", "subject"),
    (_structured(type="x" * 129), 422, "ce-3", "type"),
    (({"content-type": "application/cloudevents-batch+json", "authorization": f"Bearer {TOKEN}"}, b"[]"), 415,
     None, "batch"),
    (({"content-type": "application/json", "authorization": f"Bearer {TOKEN}"}, b"{}"), 415, None, "ce-*"),
    ((STRUCTURED_HEADERS, b"[]"), 400, None, "object"),
])
def test_invalid_events_are_rejected_clearly(headers_body, status, delivery_id, text):
    err = _rejected(*headers_body)
    assert (err.reason, err.http_status, err.delivery_id) == (Reason.BAD_INPUT, status, delivery_id)
    assert text in err.message


def test_binary_mode_checks_headers_and_data():
    headers, body = ce_binary(cloud_event("acme", "api", 1, SHA, id="ce-4"), TOKEN)
    for mutate, status in [(lambda h: h.pop("ce-id"), 400), (lambda h: h.pop("ce-source"), 422),
                           (lambda h: h.update({"content-type": "text/plain"}), 415),
                           (lambda h: h.update({"ce-time": "%ZZ"}), 422)]:
        h = dict(headers)
        mutate(h)
        assert _rejected(h, body).http_status == status
    assert _rejected(headers, b"{" * 100).http_status == 400


def test_actionable_types_need_the_mapped_fields_others_do_not():
    headers, body = ce_structured(cloud_event("acme", "api", 1, SHA, type="dev.other"), TOKEN)
    assert _parse(headers, body).candidate is None
    doc = json.loads(body) | {"type": CE_TYPE, "data": {"number": 0}}
    err = _rejected(headers, json.dumps(doc).encode())
    assert err.http_status == 422 and "/data/repository/owner" in err.message and "/data/number" in err.message
