"""What the Temporal UI shows for an agent run: a one-line summary and a memo answering "what is
this run and what has it cost". Pure functions (no Temporal import): the admitter writes both at
signal-with-start; the workflow upserts the memo as orders start, step and end (patch
``memo-cost-so-far``).

The summary is fixed when the workflow starts (Temporal's ``static_summary``); later orders signalled
into the same run appear in the memo. Titles come from the webhook payload, so they are treated as
hostile: only a string is kept, control characters become spaces, and it is cut to
:data:`TITLE_LIMIT` characters.
"""

from __future__ import annotations

from typing import Any, Mapping

from intake.hygiene import TITLE_LIMIT, display_title  # noqa: F401 - re-exported (the parser keeps titles short too)

MEMO_PATCH = "memo-cost-so-far"
SUMMARY_LIMIT = 200


def pull_request(order: Any) -> str:
    return f"{order.owner}/{order.repo}#{order.number}"


def summary_for(order: Any) -> str:
    """``acme/api#42 "Fix the parser" — acme, event`` (the title only when known)."""
    title = f' "{order.title}"' if getattr(order, "title", "") else ""
    text = f"{pull_request(order)}{title} — {order.tenant or '-'}, {order.trigger_kind}"
    return text[:SUMMARY_LIMIT]


def memo_at_start(order: Any) -> dict[str, Any]:
    """The memo a run starts with (unknown fields left out)."""
    return {k: v for k, v in memo_for(order).items() if v is not None}


def changed_fields(current: Mapping[str, Any], wanted: dict[str, Any]) -> dict[str, Any]:
    """The fields of ``wanted`` whose value differs from the run's ``current`` memo (an absent key counts
    as ``None``, so removing a key that is not there is no change): what an upsert must carry for the
    memo to read ``wanted`` afterwards (patch ``memo-changes-only``, ``workflows/lean_steps.py``)."""
    return {k: v for k, v in wanted.items() if current.get(k) != v}


def memo_for(order: Any, cost_usd: float = 0.0, status: str = "admitted") -> dict[str, Any]:
    """The run's memo for ``order``: the current order's identity, its status and cost so far. A
    ``None`` value removes the key when upserted (an order without a title clears the last one's)."""
    return {
        "pull_request": pull_request(order),
        "title": getattr(order, "title", "") or None,
        "tenant": order.tenant or None,
        "trigger": order.trigger_kind,
        "receipt_id": order.receipt_id,
        "input_version": order.input_version,
        "status": status,
        "cost_so_far_usd": round(cost_usd, 6),
    }
