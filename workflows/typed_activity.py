"""``workflow.execute_activity`` by registered name, typed by its ``result_type``.

Workflows call activities by name (``workflows.names``): temporalio types that overload ``Any``, so
a workflow returning the result would return ``Any``. :func:`execute_typed` is the same call (same
command, same options) whose result has the type the payload converter decoded it to.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

from temporalio import workflow

T = TypeVar("T")


async def execute_typed(activity: str, arg: Any, *, result_type: type[T], **options: Any) -> T:
    result = await workflow.execute_activity(activity, arg, result_type=result_type, **options)
    return cast(T, result)  # decoded by the payload converter as ``result_type``
