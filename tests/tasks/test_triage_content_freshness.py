"""Review findings on the triage task (session 7, branch ``review-tasks``), fixed:

* an issue's ``updated_at`` also moves on a comment, a label, an assignee; an ``opened`` event decided
  after such activity was ``stale-version`` and the issue was never triaged. Now an older event is
  stale only if the issue's content (digest of title and body) changed since it;
* ``canonical_version`` raised ``OverflowError`` (a 500 on the manual trigger) for an offset that leaves
  years 1-9999 in UTC, and wrote years < 1000 with fewer than four digits.

Through the real trigger mapping (an HMAC-verified octokit payload), the forge simulator over HTTP,
a real ledger and a real Temporal server.
"""

from __future__ import annotations

import copy
import json
import uuid
from dataclasses import replace

import pytest

from intake.capacity.payload import from_payload, to_payload
from intake.decision import Outcome, Reason
from intake.envelope import Envelope, PullRequestRef, WorkCandidate
from intake.freshness import TargetSnapshot
from sluicegate.forge.client import ForgeClient
from sluicegate.forge.issue_digest import issue_content_digest
from tasks.triage.target import canonical_version, parse_version, triage_candidate, triage_freshness
from tests.support.sims import FORGE_TOKEN
from tests.tasks.test_triage_intake import issue, ledger_url, repo, service  # noqa: F401 (fixture)
from tests.tasks.test_triage_trigger import parse, payload

OPENED_AT = "2026-11-29T10:00:00Z"
DIGEST, OTHER = issue_content_digest("Crash", "boom"), issue_content_digest("Crash", "boom!")


def opened_delivery(name: str, title: str = "Crash on start", body: str | None = "boom") -> tuple[Envelope, WorkCandidate]:
    """The ``issues.opened`` delivery GitHub sends for acme/<name>#7, verified and mapped like any."""
    data = copy.deepcopy(payload("opened"))
    data["repository"]["full_name"] = f"acme/{name}"
    data["issue"].update(number=7, title=title, body=body, updated_at=OPENED_AT)
    parsed = parse(data)
    assert parsed.candidate is not None
    return parsed.envelope, parsed.candidate


async def test_an_opened_issue_someone_commented_on_is_still_triaged(sims, ledger_url, temporal_env):  # noqa: F811
    name = repo()
    opened = issue(sims, name, 7, updated_at=OPENED_AT)["updated_at"]
    envelope, cand = opened_delivery(name)
    assert cand.content_digest == issue_content_digest("Crash on start", "boom")
    assert "boom" not in repr(cand) + repr(envelope)
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN, timeout_seconds=2)
    try:
        await forge.post_comment("acme", name, 7, "Thanks for opening this issue!")  # a bot: no trigger
    finally:
        await forge.aclose()
    assert sims.forge_ctl("GET", f"/issues/acme/{name}/7").json()["updated_at"] != opened
    async with service(sims, ledger_url, temporal_env.client) as svc:
        d = await svc.submit(envelope, cand)
        assert (d.outcome, d.reason) == (Outcome.ACCEPT, Reason.ADMITTED), d.message
        assert d.input_version == OPENED_AT  # the event's version, not the comment's
        # The same event again under another delivery id, past the body-replay check (e.g. the
        # webhook's delivery-replay path): duplicate work on (work key, the event's version), no 2nd run.
        again = await svc.submit(replace(envelope, id=str(uuid.uuid4()), body_digest=None), cand)
        assert again.reason == Reason.DUPLICATE_WORK and again.input_version == OPENED_AT, again.message


async def test_an_opened_event_after_an_edit_of_the_content_is_stale(sims, ledger_url, temporal_env):  # noqa: F811
    name = repo()
    issue(sims, name, 7, updated_at=OPENED_AT)
    envelope, cand = opened_delivery(name)
    issue(sims, name, 7, body="boom, and here is the stack trace")  # edited: an `edited` event carries this
    async with service(sims, ledger_url, temporal_env.client) as svc:
        d = await svc.submit(envelope, cand)
    assert (d.outcome, d.reason) == (Outcome.REJECT, Reason.STALE_VERSION), d.message


async def test_a_304_keeps_the_issue_digest_and_never_the_body(sims):
    name = repo()
    issue(sims, name, 7, body="secret-ish body text")
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN, timeout_seconds=2)
    try:
        first = await forge.get_issue("acme", name, 7)
        second = await forge.get_issue("acme", name, 7)
    finally:
        await forge.aclose()
    assert sims.forge_ctl("GET", "/stats").json()["issue_reads"]["not_modified"] >= 1
    expected = issue_content_digest("Crash on start", "secret-ish body text")
    assert first["content_digest"] == second["content_digest"] == expected
    assert "body" not in second and "secret-ish" not in json.dumps(second)


@pytest.mark.parametrize("event_digest, now_digest, version, reason", [
    (DIGEST, DIGEST, "2026-11-29T09:00:00Z", None),                        # older, same content: fresh
    (DIGEST, OTHER, "2026-11-29T09:00:00Z", Reason.STALE_VERSION),         # the content changed since
    ("", DIGEST, "2026-11-29T09:00:00Z", Reason.STALE_VERSION),            # a manual trigger: no content
    (DIGEST, "", "2026-11-29T09:00:00Z", Reason.STALE_VERSION),            # the read knows none
    (DIGEST, OTHER, "2026-11-29T11:00:00Z", Reason.SOURCE_UNAVAILABLE),    # newer: the API lags, defer
    (DIGEST, OTHER, "2026-11-29T11:00:00+01:00", None),                    # the same instant
])
def test_the_rule_compares_content_only_for_an_older_event(event_digest, now_digest, version, reason):
    now = TargetSnapshot(exists=True, open=True, current_version="2026-11-29T10:00:00Z", content_digest=now_digest)
    assert triage_freshness(version, now, event_digest) == reason
    closed = replace(now, open=False)
    assert triage_freshness(version, closed, event_digest) == Reason.TARGET_CLOSED


def test_the_deferred_queue_keeps_the_content_digest():
    _, cand = opened_delivery("api")
    envelope, _ = opened_delivery("api")
    _, back = from_payload(json.loads(json.dumps(to_payload(envelope, cand))))
    assert back.content_digest == cand.content_digest != ""
    stored = to_payload(envelope, cand)
    stored["candidate"]["content_digest"] = "not a digest"
    assert from_payload(stored)[1].content_digest == ""


def test_content_digest_is_bounded_and_ignores_non_text():
    assert issue_content_digest("t", "x" * 300_000) == ""
    assert issue_content_digest("t", None) == issue_content_digest("t", "") != issue_content_digest("t", "b")
    assert issue_content_digest("a", "bc") != issue_content_digest("ab", "c")


def test_an_updated_at_outside_utc_is_a_value_error_not_an_overflow():
    for version in ("0001-01-01T00:30:00+01:00", "9999-12-31T23:30:00-01:00"):
        with pytest.raises(ValueError):
            triage_candidate("acme", PullRequestRef("acme", "api", 7), version)


@pytest.mark.parametrize("version, canonical", [
    ("0999-03-04T05:06:07Z", "0999-03-04T05:06:07Z"),
    ("0001-01-01T01:30:00+01:00", "0001-01-01T00:30:00Z"),
    ("9999-12-31T22:30:00-01:00", "9999-12-31T23:30:00Z"),
])
def test_the_canonical_version_has_four_year_digits_and_reads_back(version, canonical):
    assert canonical_version(version) == canonical
    assert canonical_version(canonical) == canonical and parse_version(canonical) == parse_version(version)
