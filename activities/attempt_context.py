"""Every activity's attempt, where the ledger can stamp it on the receipts it writes.

A worker interceptor sets :data:`intake.receipts.ACTIVITY_ATTEMPT` for the activity's own task
(context variables are per task, and ``asyncio.to_thread`` carries them into the ledger call),
so intake and the ledger stay free of Temporal imports and no activity has to remember it.
"""

from __future__ import annotations

from typing import Any

from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from intake.receipts import ACTIVITY_ATTEMPT


class _AttemptInbound(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        token = ACTIVITY_ATTEMPT.set(activity.info().attempt)
        try:
            return await super().execute_activity(input)
        finally:
            ACTIVITY_ATTEMPT.reset(token)


class AttemptInterceptor(Interceptor):
    """Register on the worker: ``Worker(..., interceptors=[AttemptInterceptor()])``."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _AttemptInbound(next)
