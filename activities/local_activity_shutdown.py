"""A local activity that fails while its worker shuts down waits for the shutdown's cancel instead.

sdk-core (temporalio 1.35) retries a failed local activity itself, after a local backoff (while
it is under the workflow's ``local_retry_threshold``), and arms the retry's timeout timer; neither
is stopped when the worker is finalized. When one fires after the worker is gone, a background
thread panics: ``receive half not dropped`` (``local_activities.rs:1120``, the timeout timer) or
``Receive half of LA request channel cannot be dropped`` (``:813``, the backoff). Seen in CI after
`make test` had passed: a test's worker shut down while a run's ledger local activity (a claim
waiting for its admission, a write on a busy ledger) was failing and being retried.
``tests/test_local_activity_shutdown.py`` reproduces both the panic and its absence with this.

A local activity *cancelled* by the shutdown is not retried (nothing is left armed), so once the
worker is shutting down a retryable failure is not returned: the attempt waits for the cancel the
worker sends at the end of its graceful window (at once when the window is zero). Nothing is lost:
the run's workflow task is evicted by the shutdown anyway, and the worker that picks the run up
runs the local activity again from its history. A non-retryable failure is returned as it is
(core does not retry it); regular activities are untouched (the server owns their retries).

Open (review of session 9): with temporalio 1.35 no cancel reached a waiting local activity at the end of
the graceful window; the attempt's own start-to-close timeout ended the wait. With the probe's 5 s timeout
inside a 10 s window that is harmless, but the ledger's local activities time out after 30 s / 2 min: the
stop is held that long and sdk-core still panics (``:813``; reproduce: ``python -m tests.support.local_activity_shutdown_probe --guarded --grace 10 --timeout 30``).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor


CANCEL_WAIT_MARGIN_SECONDS = 110
"""How much longer than the worker's graceful window an attempt waits for the shutdown's cancel (120 s at
the default 10 s window); then the failure is returned after all, so a worker whose cancel never comes
still stops. The bound follows the window: a fixed bound shorter than a configured window
(``temporal.graceful_shutdown_seconds``) would return the failure before the cancel, and core would
arm the retry timer this guard exists to avoid. The attempt's own start-to-close timeout, when shorter,
ends the wait first (core times the attempt out; ``tests/test_local_activity_shutdown.py`` at a 10 s
window over the probe's 5 s timeout shows no panic): the bound matters for the longest ledger local
activity (``release_capacity``, 2 min) under a window of 2 min or more."""


def _retried_by_core(exc: BaseException) -> bool:
    return isinstance(exc, Exception) and not (isinstance(exc, ApplicationError) and exc.non_retryable)


class _LocalShutdownInbound(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, cancel_wait_seconds: float) -> None:
        super().__init__(next)
        self._cancel_wait_seconds = cancel_wait_seconds

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        try:
            return await super().execute_activity(input)
        except Exception as exc:
            if not (activity.info().is_local and activity.is_worker_shutdown() and _retried_by_core(exc)):
                raise
            activity.logger.info("local activity failed while the worker shuts down (%s); waiting for the "
                                 "shutdown's cancel instead of a retry the finalized worker cannot take", exc)
            try:
                await asyncio.wait_for(activity.wait_for_cancelled(), self._cancel_wait_seconds)
            except TimeoutError:
                raise exc from None  # no cancel came: fail as before rather than hold the shutdown
            raise asyncio.CancelledError() from exc


class LocalActivityShutdown(Interceptor):
    """Register on the worker with its graceful window:
    ``Worker(..., graceful_shutdown_timeout=g, interceptors=[LocalActivityShutdown(g)])``."""

    def __init__(self, graceful_shutdown: timedelta = timedelta(seconds=10)) -> None:
        self.cancel_wait_seconds = graceful_shutdown.total_seconds() + CANCEL_WAIT_MARGIN_SECONDS

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _LocalShutdownInbound(next, self.cancel_wait_seconds)
