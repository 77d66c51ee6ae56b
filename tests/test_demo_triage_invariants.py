"""The demo's issue-triage invariants (``demo.outcome.judge``) hold on a good observation and fail on each
way the stream can go wrong: a second comment, a label outside the allow-list, a redelivery that ran,
a closed issue that ran."""

from __future__ import annotations

import copy

import pytest

from activities.keys import marker_for, operation_key
from demo.outcome import Observed, judge
from demo.scenario import Sent
from ledger import Receipt, WorkVersion

KEY = "acme/github:acme/docs#1:triage"
CLOSED_KEY = "acme/github:acme/docs#2:triage"
V1, V2 = "2026-12-01T08:00:00Z", "2026-12-01T08:00:09Z"
ALLOWED = ["bug", "enhancement", "question", "documentation"]
TRIAGE_CHECKS = ("exactly one triage comment per admitted issue version",
                 "labels applied to triaged issues are a non-empty subset of tasks.triage.labels",
                 "an issue delivery sent twice ran once (the redelivery deduped)",
                 "an issues event for a closed issue is refused target-closed, with no run")


def _receipt(n: int, delivery: str, outcome: str, reason: str, key: str, version: str, target: str) -> Receipt:
    return Receipt(id=f"r{n}", outcome=outcome, reason=reason, trigger_kind="event", source="github",
                   delivery_id=delivery, work_key=key, target_id=target, input_version=version)


def _comment(key: str, version: str) -> dict:
    return {"owner": "acme", "repo": "docs", "number": 1,
            "body": f"triage\n\n{marker_for(operation_key(key, 'post_triage_comment', version))}sig -->"}


def _good() -> tuple[list[Sent], Observed]:
    sent = [Sent("opened", "d1", KEY, V1, ("accept", "admitted"), 202, {"outcome": "accept", "reason": "admitted"}),
            Sent("redelivery", "d1", KEY, V1, ("reject", "duplicate-delivery"), 200,
                 {"outcome": "reject", "reason": "duplicate-delivery"}),
            Sent("edited", "d2", KEY, V2, ("accept", "admitted"), 202, {"outcome": "accept", "reason": "admitted"}),
            Sent("closed", "d3", CLOSED_KEY, V2, ("reject", "target-closed"), 200,
                 {"outcome": "reject", "reason": "target-closed"})]
    receipts = [_receipt(1, "d1", "accept", "admitted", KEY, V1, "acme/docs#1"),
                _receipt(2, "d2", "accept", "admitted", KEY, V2, "acme/docs#1"),
                _receipt(3, "d3", "reject", "target-closed", CLOSED_KEY, V2, "acme/docs#2")]
    versions = [WorkVersion(work_key=KEY, input_version=v, generation=g, status="done", receipt_id=f"r{g}",
                            result={"steps": 4}) for g, v in ((1, V1), (2, V2))]
    seen = Observed(receipts=receipts, versions=versions, comments=[_comment(KEY, V1), _comment(KEY, V2)],
                    model_stats={"calls": 8, "by_work": {f"{KEY}@{V1}": 4, f"{KEY}@{V2}": 4}},
                    issues={"acme/docs#1": {"state": "open", "labels": ["bug", "documentation"]},
                            "acme/docs#2": {"state": "closed", "labels": []}},
                    allowed_labels=list(ALLOWED))
    return sent, seen


def _failed(sent: list[Sent], seen: Observed) -> set[str]:
    return {c.name for c in judge(sent, seen).checks if not c.ok and c.name in TRIAGE_CHECKS}


def test_a_good_stream_holds_every_triage_invariant() -> None:
    sent, seen = _good()
    verdict = judge(sent, seen)
    assert {c.name for c in verdict.checks} >= set(TRIAGE_CHECKS)
    assert _failed(sent, seen) == set()


def _second_comment(sent, seen):
    seen.comments.append(_comment(KEY, V2))


def _foreign_label(sent, seen):
    seen.issues["acme/docs#1"]["labels"].append("wontfix")


def _no_label(sent, seen):
    seen.issues["acme/docs#1"]["labels"] = []


def _redelivery_ran(sent, seen):
    sent[1].answer = {"outcome": "accept", "reason": "admitted"}


def _closed_ran(sent, seen):
    seen.versions.append(WorkVersion(work_key=CLOSED_KEY, input_version=V2, generation=1, status="done",
                                     receipt_id="r3"))


@pytest.mark.parametrize(("spoil", "check"), [
    (_second_comment, TRIAGE_CHECKS[0]), (_foreign_label, TRIAGE_CHECKS[1]), (_no_label, TRIAGE_CHECKS[1]),
    (_redelivery_ran, TRIAGE_CHECKS[2]), (_closed_ran, TRIAGE_CHECKS[3]),
])
def test_each_triage_invariant_can_fail(spoil, check: str) -> None:
    sent, seen = copy.deepcopy(_good())
    spoil(sent, seen)
    assert check in _failed(sent, seen)
