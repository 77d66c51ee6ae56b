"""Log context: the work key, workflow id, run id and tenant a piece of work is about, carried in a
``contextvars.ContextVar`` so every record logged while it is set carries them — in the asyncio task
that set it and the tasks and ``asyncio.to_thread`` calls it starts — without passing ``extra=`` at
each call. :class:`LogContextFilter` lifts them (and the current trace id) onto each record, from
the most specific place first: the record's own ``extra``, Temporal's logger context, then this one.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import Iterator, Mapping

from opentelemetry import trace

from intake.identity import parse_work_key

FIELDS = ("work_key", "workflow_id", "run_id", "tenant", "trace_id")
_context: ContextVar[Mapping[str, str]] = ContextVar("sluicegate_log_context", default=MappingProxyType({}))


@contextmanager
def log_context(**fields: str | None) -> Iterator[None]:
    """Add ``fields`` (None values ignored) to the log context inside the block."""
    token = _context.set({**_context.get(), **{k: v for k, v in fields.items() if v}})
    try:
        yield
    finally:
        _context.reset(token)


def current() -> Mapping[str, str]:
    return _context.get()


def tenant_of(work_key: str | None) -> str | None:
    if not work_key:
        return None
    try:
        return parse_work_key(work_key).tenant or None
    except ValueError:
        return None


def _trace_id() -> str | None:
    ctx = trace.get_current_span().get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else None


class LogContextFilter(logging.Filter):
    """Sets ``work_key``, ``workflow_id``, ``run_id``, ``tenant`` and ``trace_id`` on every record
    (``None`` when unknown)."""

    def filter(self, record: logging.LogRecord) -> bool:
        temporal = getattr(record, "temporal_workflow", None) or getattr(record, "temporal_activity", None) or {}
        ctx = _context.get()
        record.work_key = work_key = getattr(record, "work_key", None) or ctx.get("work_key")
        record.workflow_id = (temporal.get("workflow_id") or getattr(record, "workflow_id", None)
                              or ctx.get("workflow_id"))
        record.run_id = (temporal.get("run_id") or temporal.get("workflow_run_id") or getattr(record, "run_id", None)
                         or ctx.get("run_id"))
        record.tenant = getattr(record, "tenant", None) or ctx.get("tenant") or tenant_of(work_key)
        record.trace_id = getattr(record, "trace_id", None) or ctx.get("trace_id") or _trace_id()
        return True
