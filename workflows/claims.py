"""Generations only move forward: may this work order still run? Pure.

Asked once per order before its first step (patch ``claim-order-at-start``), from what the
workflow has seen and what the ledger holds:

* the version row of *this* generation already ended (done, superseded, failed, ...) →
  ``skip``: the order ran to an end before — a relay signal that arrived after its run
  completed started a new run with it. Nothing is recorded (the first end stands).
* a newer generation exists (the workflow saw one, or the ledger's work item has one) →
  ``superseded``: recorded as such, no model call. Running it would only be fenced out at its
  first side effect and end ``failed`` with a false dead letter.
* otherwise ``run``.

Admission (patch ``claim-requires-admission``, ``require_admission`` on the request): before any
of that, the order must match what intake admitted — a version row for its (work key, version)
at its generation carrying its receipt, that receipt an ``accept`` for the same work key, version,
generation and tenant, and the work key the one its tenant and pull request make. Else
``refused`` with an :class:`AdmissionRefusal` reason, no model call and nothing recorded: anyone
with Temporal namespace access can signal-with-start a ``WorkOrder``, and only intake admits.
Without the patch (runs started before it), an order without a ledger row still runs.

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
    REFUSED = "refused"


class AdmissionRefusal(StrEnum):
    """Why an order was refused at its claim: it does not match an admission intake made."""

    NO_ADMISSION = "unadmitted:no-admission"
    """The ledger holds no version row for the order's (work key, version)."""
    RECEIPT_MISMATCH = "unadmitted:receipt-mismatch"
    """The version row (or its receipt) names another receipt, generation, version or outcome."""
    IDENTITY_MISMATCH = "unadmitted:identity-mismatch"
    """The order's tenant and pull request do not make its work key, or the receipt's tenant differs."""
    LEDGER_UNREACHABLE = "unadmitted:ledger-unreachable"
    """The claim could not read the ledger: nothing proves the order was admitted."""


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
    receipt_id: str = ""
    owner: str = ""
    repo: str = ""
    number: int = 0
    require_admission: bool = False
    """Set by workflows under patch ``claim-requires-admission``: refuse an order intake did not admit."""
    policy_version: str | None = None
    """The policy version the order was admitted under (``WorkOrder.policy_version``)."""
    ask_policy: bool = False
    """Set by workflows under patch ``lean-loop-steps-2``: answer ``Claim.policy_unchanged``."""


@dataclass
class LedgerStanding:
    """What the ledger holds for the key and version (None: no row)."""

    item_generation: int | None = None
    item_version: str | None = None
    version_generation: int | None = None
    version_status: str | None = None
    version_receipt_id: str | None = None
    receipt: "AdmissionReceipt | None" = None
    """The receipt the version row names (None: no such receipt)."""
    key_matches_order: bool = True
    """The order's tenant and pull request make its work key (checked by the activity)."""
    require_admission: bool = False
    """The worker enforces admission (``temporal.require_admission``)."""


@dataclass
class AdmissionReceipt:
    outcome: str
    work_key: str | None
    input_version: str | None
    generation: int | None
    tenant: str | None


@dataclass
class Claim:
    verdict: ClaimVerdict
    reason: str = ""
    newest_generation: int = 0
    policy_unchanged: bool = False
    """Asked (``ClaimRequest.ask_policy``) and the claiming worker's policy version has not changed since
    the order's admission: its policy re-check would permit it without a read, so none is run."""


def admission_refusal(req: ClaimRequest, ledger: LedgerStanding, work_key: str) -> AdmissionRefusal | None:
    """Why the order does not match an admission, or None when it does (``work_key``: the order's
    key in today's form)."""
    if not ledger.key_matches_order:
        return AdmissionRefusal.IDENTITY_MISMATCH
    if ledger.version_generation is None:
        return AdmissionRefusal.NO_ADMISSION
    receipt = ledger.receipt
    if not req.receipt_id or ledger.version_receipt_id != req.receipt_id or receipt is None \
            or ledger.version_generation != req.generation:
        return AdmissionRefusal.RECEIPT_MISMATCH
    if receipt.tenant and req.tenant and receipt.tenant != req.tenant:
        return AdmissionRefusal.IDENTITY_MISMATCH
    if (receipt.outcome, receipt.work_key, receipt.input_version, receipt.generation) != \
            ("accept", work_key, req.input_version, req.generation):
        return AdmissionRefusal.RECEIPT_MISMATCH
    return None


def decide_claim(req: ClaimRequest, ledger: LedgerStanding, work_key: str | None = None) -> Claim:
    if req.require_admission and ledger.require_admission:
        refused = admission_refusal(req, ledger, work_key or req.work_key)
        if refused is not None:
            return Claim(ClaimVerdict.REFUSED, str(refused), req.generation)
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
