"""The triage task's trigger mapping on real octokit ``issues`` payloads (tests/fixtures/github/issues/),
through the same two stages as every GitHub delivery: HMAC verified first, then parsed and validated."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from demo.github_payloads import delivery_headers
from intake.decision import Reason
from intake.errors import InvalidDelivery
from intake.github import parse_github_delivery
from tasks import registry

SECRET = "s3cret"
NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "github" / "issues"
ALL = registry.github_mappers(registry.TASKS.values())


def payload(action: str) -> dict:
    return json.loads((FIXTURES / f"{action}.payload.json").read_text())


def parse(data: dict, event: str = "issues", mappers=ALL, secret: str | None = SECRET):
    body = json.dumps(data).encode()
    return parse_github_delivery(delivery_headers(secret, body, event=event), body, source="github",
                                 tenant="acme", secrets=[SECRET], received_at=NOW, mappers=mappers)


@pytest.mark.parametrize("action", ["opened", "edited", "reopened"])
def test_each_octokit_issues_action_becomes_a_triage_candidate(action: str):
    data = payload(action)
    parsed = parse(data)
    issue, repo = data["issue"], data["repository"]["full_name"]
    cand = parsed.candidate
    assert cand is not None and cand.task == "triage"
    assert cand.work_key == f"acme/github:{repo.lower()}#{issue['number']}:triage"
    stamp = datetime.fromisoformat(issue["updated_at"].replace("Z", "+00:00"))
    assert cand.input_version == stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert parsed.envelope.type == f"issues.{action}" and parsed.envelope.time == stamp
    # The body is untrusted: it is in no key, version, subject, title or envelope note.
    body = issue["body"] or "never-empty-marker"
    assert body not in repr(parsed.envelope) + repr(cand)


def test_an_offset_updated_at_is_the_same_canonical_version():
    data = payload("opened")
    data["issue"]["updated_at"] = "2019-05-15T17:20:18+02:00"
    assert parse(data).candidate.input_version == "2019-05-15T15:20:18Z"


@pytest.mark.parametrize("action", ["closed", "labeled", "assigned", "deleted"])
def test_other_issues_actions_ask_for_no_work(action: str):
    data = payload("opened")
    data["action"] = action
    parsed = parse(data)
    assert parsed.candidate is None and parsed.envelope.type == f"issues.{action}"


@pytest.mark.parametrize("breaks", [
    lambda d: d["issue"].pop("updated_at"),
    lambda d: d["issue"].update(number="1"),
    lambda d: d["issue"].update(number=0),
    lambda d: d["repository"].update(full_name="../etc"),
    lambda d: d.update(action="opened\x00"),
    lambda d: d.pop("issue"),
])
def test_a_malformed_issues_payload_is_bad_input_with_the_delivery_id(breaks):
    data = copy.deepcopy(payload("opened"))
    breaks(data)
    with pytest.raises(InvalidDelivery) as refused:
        parse(data)
    assert (refused.value.reason, refused.value.http_status) == (Reason.BAD_INPUT, 422)
    assert refused.value.delivery_id is not None


def test_the_signature_is_checked_before_the_payload_is_read():
    with pytest.raises(InvalidDelivery) as refused:
        parse({"not": "an issue at all"}, secret="wrong")
    assert refused.value.reason == Reason.BAD_SIGNATURE


def test_issues_events_are_unsupported_when_triage_is_not_enabled():
    with pytest.raises(InvalidDelivery) as refused:
        parse(payload("opened"), mappers=registry.github_mappers([registry.get("review")]))
    assert (refused.value.reason, refused.value.http_status) == (Reason.UNSUPPORTED_EVENT, 422)
    assert "only pull_request and ping" in refused.value.message


def test_pull_request_events_still_map_to_the_review_task():
    data = json.loads((FIXTURES.parent / "pull_request" / "opened.payload.json").read_text())
    cand = parse(data, event="pull_request").candidate
    assert cand is not None and cand.task == "review"
    assert cand.input_version == data["pull_request"]["head"]["sha"]
