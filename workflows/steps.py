"""One step's activities — the model call and a tool call — with the options the order carries.

Workflow code. Timeouts, heartbeats and attempt caps come from the order's ``RuntimeOptions``
snapshot (workflows read no config). Both activities heartbeat, which is how a cancel reaches
them: patched runs wait until a cancelled call has stopped (``order_end.cancellation_type``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from workflows.contracts import ModelRequest, ModelResponse, RuntimeOptions, ToolRequest, ToolResult, WorkOrder
    from workflows.order_end import cancellation_type
    from workflows.review_task import TOOLS
    from workflows.kinds import NON_RETRYABLE_MODEL_ERRORS
    from workflows.names import MODEL_ACTIVITY
    from workflows.typed_activity import execute_typed


async def call_model(order: WorkOrder, messages: list[dict[str, Any]], step: int, cancel_aware: bool,
                     tools: list[dict[str, Any]] = TOOLS) -> ModelResponse:
    """The order's ``step``-th model call (1-based): with the generation, its key in the model journal.
    ``tools``: what the model is offered (``review_task``; the order's patch decides which list)."""
    rt = order.runtime
    return await execute_typed(
        MODEL_ACTIVITY,
        ModelRequest(order.work_key, order.input_version, order.model, list(messages), tools, order.tenant,
                     generation=order.generation, step=step),
        result_type=ModelResponse,
        start_to_close_timeout=timedelta(seconds=rt.model_start_to_close_seconds),
        heartbeat_timeout=timedelta(seconds=rt.model_heartbeat_seconds),
        cancellation_type=cancellation_type(cancel_aware),
        retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=2.0,
                                 maximum_interval=timedelta(seconds=30), maximum_attempts=rt.model_max_attempts,
                                 non_retryable_error_types=NON_RETRYABLE_MODEL_ERRORS))


async def call_tool(activity_name: str, request: ToolRequest, rt: RuntimeOptions, cancel_aware: bool) -> ToolResult:
    return await execute_typed(
        activity_name, request, result_type=ToolResult,
        start_to_close_timeout=timedelta(seconds=rt.tool_start_to_close_seconds),
        heartbeat_timeout=timedelta(seconds=rt.tool_heartbeat_seconds),
        cancellation_type=cancellation_type(cancel_aware),
        retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30),
                                 maximum_attempts=rt.tool_max_attempts))
