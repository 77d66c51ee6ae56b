"""Pure rules: who a cancel's reason names, and what a closed run means for a version it left open."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from workflows.cancellation import FROM_TEMPORAL, NO_REASON, attribute, cancel_reason_text
from workflows.contracts import NEEDS_A_PERSON, RunStatus
from workflows.stranded import NOT_FOUND, ClosedRun, outcome_for


def test_starter_cancel_reason_round_trips_to_its_request():
    who = attribute(cancel_reason_text("a" * 32, "alice", "wrong pull request: #42"))
    assert (who.request_id, who.actor, who.reason) == ("a" * 32, "alice", "wrong pull request: #42")
    assert who.outcome_reason == "cancelled by alice: wrong pull request: #42"


@pytest.mark.parametrize("text, reason", [(None, NO_REASON), ("", NO_REASON), ("  ", NO_REASON),
                                          ("bad deploy", "bad deploy"),
                                          ("sluicegate-cancel:not-an-id alice: x", "sluicegate-cancel:not-an-id alice: x")])
def test_anything_else_is_a_cancel_by_temporal(text, reason):
    who = attribute(text)
    assert (who.request_id, who.actor, who.reason) == (None, FROM_TEMPORAL, reason)


@given(st.text(max_size=2000))
def test_any_reason_text_is_attributed_and_bounded(text):
    who = attribute(text)
    assert who.actor and len(who.reason) <= 300 and who.outcome_reason.startswith("cancelled by ")


@pytest.mark.parametrize("status, detail, expected, prefix", [
    ("FAILED", "StateSchemaUnsupported: newer", RunStatus.FAILED, "workflow failed: StateSchemaUnsupported"),
    ("TERMINATED", "stuck (by tctl)", RunStatus.TERMINATED, "terminated: stuck (by tctl)"),
    ("TIMED_OUT", "", RunStatus.TIMED_OUT, "timed out: "),
    ("CANCELED", "", RunStatus.CANCELLED, "cancelled by temporal: "),
    ("COMPLETED", "", RunStatus.FAILED, "the run closed COMPLETED without recording"),
    (NOT_FOUND, "", RunStatus.FAILED, "run not found in Temporal"),
])
def test_closed_run_outcomes(status, detail, expected, prefix):
    got, reason = outcome_for(ClosedRun(status, "run-1", detail))
    assert got == expected and reason.startswith(prefix)
    assert (got in NEEDS_A_PERSON) == (got != RunStatus.CANCELLED)  # only a cancel needs nobody
