"""Forge errors as activity failures: the Temporal side of the one forge error mapper.

``sluicegate.forge.errors`` decides what a forge answer means (rate limited, unavailable,
rejected) and how long to wait; this module only dresses that decision for Temporal, so every
activity that talks to the forge (tools, scans, goals) fails the same way for the same answer:
``<Prefix>RateLimited`` / ``<Prefix>Unavailable`` retry after ``next_retry_delay`` (the server's
delay, jittered) or Temporal's backoff; ``<Prefix>RequestRejected`` is non-retryable.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.exceptions import ApplicationError

from activities.gateway import PermanentToolError, TransientToolError
from sluicegate.forge.errors import ForgeError
from workflows.kinds import FailureType


def retry_delay(seconds: float | None) -> timedelta | None:
    return timedelta(seconds=seconds) if seconds else None


def forge_activity_error(exc: ForgeError, what: str, prefix: str = "Forge") -> ApplicationError:
    """``exc`` as the failure of an activity that was doing ``what``."""
    return ApplicationError(f"{what}: {exc}", type=FailureType.of(prefix, exc.kind), non_retryable=not exc.retryable,
                            next_retry_delay=retry_delay(exc.retry_after))


def as_tool_error(exc: ForgeError) -> Exception:
    """``exc`` for the tool gateway: transient (kept ``in_flight``, reconciled first) or permanent."""
    if exc.retryable:
        return TransientToolError(str(exc), exc.retry_after, exc.kind)
    return PermanentToolError(str(exc))
