"""Generations only move forward: may this work order still run? Pure.

Asked once per order before its first step (patch ``claim-order-at-start``), from what the
workflow has seen and what the ledger holds:

* the version row of *this* generation already ended (done, superseded, failed, ...) →
  ``skip``: the order ran to an end before — a relay signal that arrived after its run
  completed started a new run with it. Nothing is recorded (the first end stands).
* a newer generation exists (the workflow saw one, or the ledger's work item has one) →
  ``superseded``: recorded as such, no model call. Running it would only be fenced out at its
  first side effect and end ``failed`` with a false dead letter.
* otherwise ``run``. No ledger row at all (an order that bypassed intake) also runs.

Why the ledger and not only the workflow: a new run of the workflow (the previous one
completed) knows nothing of the generations its predecessor saw.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

OPEN_VERSION_STATUSES = frozenset({"accepted", "admitted"})
"""Version statuses of an admission that has not ended; every other status is an end."""


class ClaimVerdict(StrEnum):
    RUN = "run"
    SUPERSEDED = "superseded"
    SKIP = "skip"


@dataclass
class ClaimRequest:
    work_key: str
    input_version: str
    generation: int
    newest_seen: int = 0
    """The newest generation the workflow has seen for the key (its own orders)."""
    newest_seen_version: str = ""
    tenant: str = ""
    """The order's tenant: a run admitted before tenancy carries a key without it."""


@dataclass
class LedgerStanding:
    """What the ledger holds for the key and version (None: no row)."""

    item_generation: int | None = None
    item_version: str | None = None
    version_generation: int | None = None
    version_status: str | None = None


@dataclass
class Claim:
    verdict: ClaimVerdict
    reason: str = ""
    newest_generation: int = 0


def decide_claim(req: ClaimRequest, ledger: LedgerStanding) -> Claim:
    if ledger.version_generation == req.generation and ledger.version_status not in OPEN_VERSION_STATUSES \
            and ledger.version_status is not None:
        return Claim(ClaimVerdict.SKIP, f"already ended {ledger.version_status} (generation {req.generation})",
                     req.generation)
    newest = max(req.newest_seen, ledger.item_generation or 0)
    if newest > req.generation:
        by = ledger.item_version if (ledger.item_generation or 0) == newest else None
        by = by or (req.newest_seen_version if req.newest_seen == newest else None)
        return Claim(ClaimVerdict.SUPERSEDED,
                     f"superseded by {by or 'a newer admission'} (generation {newest})", newest)
    return Claim(ClaimVerdict.RUN, "", req.generation)
