"""``telemetry.log_format: json``: one JSON object a line with the work key, workflow id, run id,
tenant and trace id, from ``extra``, the log context or the current span; the text format keeps its
``[work_key=… workflow_id=… run_id=…]`` prefix."""

from __future__ import annotations

import io
import json
import logging

from opentelemetry.sdk.trace import TracerProvider

from sluicegate.config.settings import load_settings
from sluicegate.observability.log_context import log_context
from sluicegate.observability.telemetry import log_handler

KEY = "acme/github:acme/api#42:review"


def _lines(fmt: str, emit) -> list[str]:
    handler = log_handler(load_settings(env={"SLUICEGATE_LOG_FORMAT": fmt}), "worker")
    out = io.StringIO()
    handler.setStream(out)
    logger = logging.getLogger(f"test.jsonlogs.{fmt}")
    logger.handlers[:] = [handler]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    emit(logger)
    return out.getvalue().splitlines()


def test_json_records_carry_the_work_context_and_the_trace_id():
    tracer = TracerProvider().get_tracer("test")  # a real SDK span, not installed globally

    def emit(logger: logging.Logger) -> None:
        logger.info("from extra", extra={"work_key": KEY})
        with log_context(workflow_id=f"agent/{KEY}", run_id="run-1", work_key=KEY):
            with tracer.start_as_current_span("step") as span:
                logger.warning("inside %s", "context")
                emit.trace_id = format(span.get_span_context().trace_id, "032x")
        logger.info("outside")

    first, inside, outside = (json.loads(line) for line in _lines("json", emit))
    assert first["work_key"] == KEY and first["tenant"] == "acme" and first["workflow_id"] is None
    assert inside == {**inside, "message": "inside context", "level": "WARNING", "role": "worker", "work_key": KEY,
                      "workflow_id": f"agent/{KEY}", "run_id": "run-1", "tenant": "acme", "trace_id": emit.trace_id}
    assert outside["work_key"] is None and outside["trace_id"] is None  # the context ended with its block


def test_text_format_keeps_its_prefix():
    [line] = _lines("text", lambda logger: logger.info("hi", extra={"work_key": KEY}))
    assert line.endswith(f"INFO worker test.jsonlogs.text [work_key={KEY} workflow_id=- run_id=-] hi")
