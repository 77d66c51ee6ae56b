"""Where the override can come from, and where it must survive (pure, no server).

It is set only by the authenticated manual path; no parser lets a payload field or a
CloudEvent extension set it; the deferred queue and the outbox relay carry it forward, so a
forced re-run stays forced (and posts its own review) whichever path admits it."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from demo.github_payloads import delivery_headers, encode, pull_request_payload
from intake.capacity.payload import from_payload, to_payload
from intake.envelope import Envelope, PullRequestRef, TriggerKind, WorkCandidate
from intake.github import parse_github_delivery
from intake.outbox import PendingAdmission, admission_from
from intake.receipts import ReceiptDraft, draft_for
from intake.decision import Outcome, Reason
from intake.sources.cloudevents_source import parse_cloudevent
from intake.sources.standard_webhooks import parse_standard_webhook
from sluicegate.config.settings import DEFAULT_CONFIG_FILE, load_settings
from tests.webhook_api.deliveries import ce_binary, ce_structured, cloud_event, pr_data, std_headers

SOURCES = load_settings(DEFAULT_CONFIG_FILE, env={}).sources
NOW = datetime.now(UTC)
HOSTILE = {"override": "rerun-done: from the payload", "force": True, "actor": "carol"}


def _github():
    body = encode(pull_request_payload("acme", "api", 1, "a" * 40) | HOSTILE)
    return parse_github_delivery(delivery_headers(SOURCES["github"].secret, body), body, source="github",
                                 tenant="acme", secrets=SOURCES["github"].secret_values(), received_at=NOW)


def _stdhooks():
    body = json.dumps({"type": "pull_request.synchronize", "timestamp": NOW.isoformat(),
                       "data": pr_data("acme", "api", 1, "a" * 40) | HOSTILE, **HOSTILE}).encode()
    src = SOURCES["stdhooks"]
    return parse_standard_webhook(std_headers(src.secret, body), body, source="stdhooks", tenant="acme",
                                  secrets=src.secret_values(), mapping=src.mapping, received_at=NOW)


def _cloudevent(build):
    def parse():
        event = cloud_event("acme", "api", 1, "a" * 40, override="rerunx", force="true")
        src = SOURCES["events"]
        return parse_cloudevent(*build(event, src.secret), source="events", tenant="acme",
                                secrets=src.secret_values(), mapping=src.mapping, received_at=NOW)
    return parse


@pytest.mark.parametrize("parse", [_github, _stdhooks, _cloudevent(ce_binary), _cloudevent(ce_structured)],
                         ids=["github", "stdhooks", "ce-binary", "ce-structured"])
def test_no_payload_field_reaches_the_envelope(parse):
    parsed = parse()
    assert parsed.candidate is not None and parsed.envelope.override is None and parsed.envelope.actor is None
    assert parsed.envelope.data == {}  # the payload is not carried on the envelope at all
    assert draft_for(parsed.envelope, parsed.candidate, Outcome.ACCEPT, Reason.ADMITTED, "m").override is None


def _manual(override: str | None) -> tuple[Envelope, WorkCandidate]:
    ref = PullRequestRef("acme", "api", 1)
    env = Envelope(id="m-1", source="manual", type="manual.review", subject=ref.target_id, time=NOW, received_at=NOW,
                   trigger_kind=TriggerKind.MANUAL, tenant="acme", actor="carol", override=override,
                   data={"reason": "why"})
    return env, WorkCandidate("acme/github:acme/api#1:review", ref, None, "acme")


def test_the_deferred_queue_keeps_a_forced_trigger_forced():
    env, cand = _manual("rerun-done: why")
    back, _ = from_payload(json.loads(json.dumps(to_payload(env, cand))))
    assert (back.override, back.actor, back.data) == ("rerun-done: why", "carol", {"reason": "why"})


def test_a_payload_queued_before_the_typed_field_is_read_only_for_a_manual_trigger():
    env, cand = _manual(None)
    legacy = to_payload(env, cand)
    del legacy["envelope"]["override"]
    legacy["envelope"]["data"] = {"reason": "why", "override": "rerun-done: why"}
    assert from_payload(legacy)[0].override == "rerun-done: why"
    legacy["envelope"] |= {"trigger_kind": "event", "source": "stdhooks", "actor": None}  # a webhook's payload
    assert from_payload(legacy)[0].override is None


def test_the_outbox_relay_keeps_a_forced_trigger_forced():
    draft = ReceiptDraft(outcome=Outcome.ACCEPT, reason="admitted", message="m", trigger_kind=TriggerKind.MANUAL,
                         source="manual", received_at=NOW, delivery_id="m-1", work_key="acme/github:acme/api#1:review",
                         target_id="acme/api#1", input_version="a" * 40, tenant="acme", actor="carol",
                         override="rerun-done: why")
    admission = admission_from(PendingAdmission("r-1", draft, 3))
    assert (admission.envelope.override, admission.envelope.actor) == ("rerun-done: why", "carol")
