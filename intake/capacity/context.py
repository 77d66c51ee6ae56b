"""What an accept must also satisfy, handed by the intake service to the ledger's decision.

Here rather than in ``intake.ports`` so the capacity package imports nothing of the ports that
use it (no intake.capacity <-> intake.ports cycle); ``intake.ports`` re-exports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from intake.capacity.plan import Block, CapacityRequest


@dataclass(frozen=True)
class CapacityContext:
    """What an accept must also satisfy, decided in the same ledger transaction."""

    request: CapacityRequest
    payload: dict[str, Any]
    """The envelope and candidate, stored with a deferred item to decide it again later."""
    breaker: tuple[Block, float, str] | None = None
    """An open breaker: (block, retry after seconds, message) — defer without trying slots."""
    resume_item: str | None = None
    """Deciding deferred item ``resume_item`` again (its delivery is already recorded)."""
    resume_receipt: str | None = None
    """The item's defer receipt when the dispatcher read it: if a newer version replaced the
    queued one since (a new receipt), this decision is about a stale payload and is not applied."""
    retry_after_seconds: float = 30.0
    """How long a refused slot/queue defer asks to wait (jittered by the caller)."""
