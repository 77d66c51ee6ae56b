"""Keys derived from identities: operation keys, model-call reservation ids, request digests.

Operation keys (an external mutation) are derived from work key, operation and target version —
never the attempt number — so every retry and every replay of the same intent maps to the same
key, and a new head commit maps to a new one. ``discriminator`` separates legitimate repeats.

Reservation ids are the opposite: one per *attempt* of a model call, because each attempt is a
request the provider may bill. A retried reserve of the same attempt finds its row (nothing held
twice); the next attempt finds the earlier one by its step and charges it if it never ended.
The work key is hashed, never parsed.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def _sha256(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


def operation_key(work_key: str, operation: str, target_version: str, discriminator: str = "") -> str:
    return "op_" + _sha256(work_key, operation, target_version, discriminator)[:40]


def marker_for(op_key: str) -> str:
    """The start of the hidden marker naming ``op_key`` in a comment, for finding comments by
    operation (demo, benchmarks, runbook). Its signature follows; whether a comment is trusted as
    Sluicegate's own is decided by ``activities.markers``, never by this prefix."""
    return f"<!-- sluicegate:op={op_key} "


def reservation_id(work_key: str, input_version: str, generation: int, step: int, run_id: str, attempt: int) -> str:
    """One model-call attempt's reservation: ``rsv_`` + the whole SHA-256 (80 characters at most)."""
    return "rsv_" + _sha256(work_key, input_version, str(generation), str(step), run_id, str(attempt))


def request_digest(messages: list[dict[str, Any]], tools: list[dict[str, Any]], model: str) -> str:
    """What a model call asked, so a journaled answer is only served to the same question."""
    return _sha256(model, json.dumps(messages, sort_keys=True), json.dumps(tools, sort_keys=True))
