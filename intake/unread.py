"""A source that cannot be read now: the freshness read's deadline, the queued defer, the backoff.

Verified means durable. When the authoritative re-read of an authenticated, in-scope delivery
fails (``SourceUnavailable``: a 5xx, a rate limit, a connection error; or any error the reader did
not map, which is logged) or does not answer within
the freshness deadline, intake does not answer "try again" and forget it (GitHub does not
redeliver on its own): it records the delivery and queues it in the deferred queue with a
``defer`` receipt (``source-unavailable`` or ``freshness-deadline``), and the dispatcher decides
it again later. Each failed re-check waits twice as long as the one before, from
``retry_seconds`` up to ``max_seconds``, never less than the source's own ``Retry-After``, plus
up to 20 % jitter so a backlog does not return in step (``sluicegate.forge.retry_after``).

Waiting only helps a source that is down. When the source answers that retrying cannot help (a
non-retryable forge error: bad credentials, a forbidden repository) or the read fails in a way no
mapper knows (a bug), the delivery is still queued on arrival — verified means durable, and
credentials get fixed — but a queued item re-read that way raises :class:`SourceRefused`: the
dispatcher counts it as a failure and, past its failure limit, the item is ``dead`` with a dead
letter an admin can retry (``starter.py dlq``), instead of being re-read forever.

No Temporal, HTTP or database here: the reader, the gate and the store are injected.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from intake.capacity import CapacityPlanner
from intake.capacity.dispatch import Requeue as Requeue  # noqa: F401 - re-exported: raised here, caught by dispatch
from intake.capacity.payload import to_payload
from intake.decision import Outcome, Reason
from intake.envelope import Envelope, WorkCandidate
from intake.freshness import TargetSnapshot
from intake.ports import CapacityContext, SourceUnavailable, TargetReader
from intake.receipts import ReceiptDraft, draft_for
from sluicegate.errors import SluicegateError
from sluicegate.forge.retry_after import exponential_backoff

if TYPE_CHECKING:
    from intake.capacity.gate import CapacityGate

log = logging.getLogger("sluicegate.intake")


class SourceRefused(SluicegateError):
    """A queued item's source refuses the read for good (or failed unexpectedly): a dispatch failure."""


@dataclass(frozen=True)
class UnreadPolicy:
    """``intake:`` settings (``sluicegate.config.intake``) as intake uses them."""

    deadline_seconds: float = 4.0
    retry_seconds: float = 15.0
    max_seconds: float = 300.0
    max_lag_seconds: float | None = 900.0
    """How long after its receipt an event may wait for a source that lags behind it (a task's
    freshness rule said ``source-unavailable``) before it is refused ``source-lag-limit``
    (``intake.admission_rules.lag_refusal``); ``None``: no bound (tests of other stages only)."""

    def wait(self, attempts: int, source_wish: float | None) -> float:
        """Seconds before the next re-check of an item re-decided ``attempts`` times so far."""
        return exponential_backoff(attempts, self.retry_seconds, self.max_seconds, floor=source_wish)


@dataclass(frozen=True)
class Unread:
    """Why the source could not be read: the reason, the source's own wait (if any), a message, and
    whether waiting can help (``permanent``: a non-retryable answer or an unexpected failure)."""

    reason: Reason
    retry_after: float | None
    message: str
    permanent: bool = False


async def read_within(reader: TargetReader, candidate: WorkCandidate, deadline: float) -> TargetSnapshot | Unread:
    """The freshness read, bounded by ``deadline`` seconds; an :class:`Unread` when it failed."""
    target = candidate.target.target_id
    try:
        async with asyncio.timeout(deadline):
            return await reader.read(candidate.target, tenant=candidate.tenant)
    except SourceUnavailable as exc:
        return Unread(Reason.SOURCE_UNAVAILABLE, exc.retry_after, f"cannot read {target} from the source: {exc}",
                      permanent=exc.permanent)
    except TimeoutError:
        return Unread(Reason.FRESHNESS_DEADLINE, None,
                      f"the source did not answer for {target} within the {deadline:g}s freshness deadline")
    except Exception as exc:  # noqa: BLE001 - an unmapped failure must not lose a verified delivery either
        log.exception("reading %s failed unexpectedly; the delivery is queued", target)
        return Unread(Reason.SOURCE_UNAVAILABLE, None, f"cannot read {target} from the source: {type(exc).__name__}",
                      permanent=True)


def unread_draft(envelope: Envelope, candidate: WorkCandidate, unread: Unread, retry: float) -> ReceiptDraft:
    """The defer receipt of a delivery queued unread (the ledger queues it in the same transaction)."""
    draft = draft_for(envelope, candidate, Outcome.DEFER, unread.reason,
                      f"{unread.message}; queued, re-checked in {retry:.0f}s")
    return replace(draft, retry_after_seconds=retry)


def unread_context(gate: CapacityGate | None, envelope: Envelope, candidate: WorkCandidate) -> CapacityContext:
    """What the ledger stores with the queued item: its priority and payload. Synchronous (the gate
    may read the ledger). Without a gate (no limits configured) the priority is the default plan's."""
    if gate is not None:
        return gate.context(envelope, candidate)
    request = CapacityPlanner.unlimited().plan(candidate, envelope.source, envelope.trigger_kind)
    return CapacityContext(request, to_payload(envelope, candidate))
