"""Who cancelled a run, read from Temporal's cancel request; pure (no Temporal import).

A cancel reaches the agent workflow only as Temporal's cancel request, whose reason text is
in history (so reading it is deterministic). ``starter.py cancel`` first records a cancel
request in the ledger (actor, reason), then cancels the workflow with a reason that names
that record: ``sluicegate-cancel:<request id> <actor>: <reason>``. Anything else — the
Temporal UI, ``temporal workflow cancel`` (which sends no reason), a client of our own — is
a cancel "by temporal", with whatever reason it gave.

The actor written in the reason text is only a claim: anyone with Temporal access can type
it. The ledger confirms it when it records the outcome (``ledger/_cancels.py``): only a
request id that exists for the same work key turns into "cancelled by <actor>"; an unknown
id is recorded as a cancel by temporal, quoting the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CANCEL_REASON_PREFIX = "sluicegate-cancel:"
FROM_TEMPORAL = "temporal"
"""The actor of a cancel that did not come through ``starter.py cancel``."""
NO_REASON = "cancel requested in Temporal (UI or CLI), no reason given"
MAX_REASON_CHARS = 300
_SLUICEGATE_REASON = re.compile(r"^sluicegate-cancel:([0-9a-f]{32}) ([^:]{1,128}): (.*)$", re.DOTALL)


def cancel_reason_text(request_id: str, actor: str, reason: str) -> str:
    """The reason ``starter.py cancel`` sends with the cancel (shown in the UI's history too)."""
    return f"{CANCEL_REASON_PREFIX}{request_id} {actor}: {reason}"


@dataclass(frozen=True)
class CancelAttribution:
    request_id: str | None
    """The ledger's cancel request the reason names; None for a cancel from Temporal directly."""
    actor: str
    reason: str

    @property
    def outcome_reason(self) -> str:
        return f"cancelled by {self.actor}: {self.reason}"


def attribute(reason_text: str | None) -> CancelAttribution:
    """Attribution of a workflow cancel from its reason text (``""`` or None: no reason sent)."""
    text = (reason_text or "").strip()
    match = _SLUICEGATE_REASON.match(text)
    if match is not None:
        request_id, actor, why = match.groups()
        return CancelAttribution(request_id, actor.strip(), why.strip()[:MAX_REASON_CHARS])
    return CancelAttribution(None, FROM_TEMPORAL, text[:MAX_REASON_CHARS] or NO_REASON)


def confirmed(actor: str, reason: str) -> str:
    """The outcome reason once the ledger found the request the cancel named."""
    return CancelAttribution(None, actor, reason[:MAX_REASON_CHARS]).outcome_reason


def unconfirmed(provisional: str) -> str:
    """The outcome reason when the named request does not exist for this work key."""
    return f"cancelled by {FROM_TEMPORAL}: unconfirmed cancel request ({provisional[:MAX_REASON_CHARS]})"
