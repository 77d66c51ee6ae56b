"""GenAI semantic conventions for the model call: one CLIENT span per provider request and the
two client metrics, named and bucketed as the pinned ``opentelemetry-semantic-conventions``
(0.66b2, schema 1.44.0) defines them.

Why not ``opentelemetry-instrumentation-openai-v2``: it wraps ``AsyncCompletions.create`` and
expects a ``ChatCompletion`` (or a ``LegacyAPIResponse`` it can ``parse()`` synchronously) back.
The model activity calls ``with_streaming_response.create`` and reads the body chunk by chunk so
each chunk is a heartbeat (``activities/model.py``): there the wrapper gets an
``AsyncAPIResponse`` whose ``parse()`` is a coroutine it never awaits, so it records no usage and
no finish reasons, and ends its span when the headers arrive — before the body it measures.
So the activity opens the span itself (:func:`model_call`) and reports what it parsed.

Attributes carry no prompt or answer text: a review prompt holds a private diff.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from opentelemetry import metrics, trace
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as ga
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics as gm
from opentelemetry.semconv.attributes import error_attributes
from opentelemetry.semconv.schemas import Schemas
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

OPERATION = ga.GenAiOperationNameValues.CHAT.value
PROVIDER = "openai"
"""``gen_ai.provider.name``: the wire protocol spoken (any OpenAI-compatible endpoint)."""

# The semantic conventions' advisory bucket boundaries for the two client histograms.
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)

SCHEMA_URL = Schemas.V1_44_0.value
"""The newest schema of the pinned semantic-conventions package, stamped on the span and metric scopes."""
_tracer = trace.get_tracer("sluicegate.genai", schema_url=SCHEMA_URL)
_meter = metrics.get_meter("sluicegate.genai", schema_url=SCHEMA_URL)
token_usage = _meter.create_histogram(gm.GEN_AI_CLIENT_TOKEN_USAGE, unit="{token}",
                                      description="Number of input and output tokens used.",
                                      explicit_bucket_boundaries_advisory=list(TOKEN_BUCKETS))
operation_duration = _meter.create_histogram(gm.GEN_AI_CLIENT_OPERATION_DURATION, unit="s",
                                             description="GenAI operation duration.",
                                             explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS))


@dataclass
class ModelCallReport:
    """What the activity learned from the answer; filled in inside :func:`model_call`."""

    response_id: str | None = None
    response_model: str | None = None
    finish_reasons: list[str] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None


def request_attributes(model: str, tenant: str) -> dict[str, str]:
    return {ga.GEN_AI_OPERATION_NAME: OPERATION, ga.GEN_AI_PROVIDER_NAME: PROVIDER, ga.GEN_AI_REQUEST_MODEL: model,
            "sluicegate.tenant": tenant or "-"}


def response_attributes(report: ModelCallReport) -> dict[str, AttributeValue]:
    attrs: dict[str, AttributeValue] = {}
    if report.response_id:
        attrs[ga.GEN_AI_RESPONSE_ID] = report.response_id
    if report.response_model:
        attrs[ga.GEN_AI_RESPONSE_MODEL] = report.response_model
    if report.finish_reasons:
        attrs[ga.GEN_AI_RESPONSE_FINISH_REASONS] = list(report.finish_reasons)
    if report.input_tokens is not None:
        attrs[ga.GEN_AI_USAGE_INPUT_TOKENS] = report.input_tokens
    if report.output_tokens is not None:
        attrs[ga.GEN_AI_USAGE_OUTPUT_TOKENS] = report.output_tokens
    return attrs


def _record(report: ModelCallReport, base: dict[str, str], seconds: float, error: str | None) -> None:
    common: dict[str, str] = {k: v for k, v in base.items() if k.startswith("gen_ai.")}
    if report.response_model:
        common[ga.GEN_AI_RESPONSE_MODEL] = report.response_model
    if error:
        common[error_attributes.ERROR_TYPE] = error
    operation_duration.record(seconds, common)
    for kind, tokens in ((ga.GenAiTokenTypeValues.INPUT.value, report.input_tokens),
                         (ga.GenAiTokenTypeValues.OUTPUT.value, report.output_tokens)):
        if tokens is not None:
            token_usage.record(tokens, {**common, ga.GEN_AI_TOKEN_TYPE: kind})


@contextmanager
def model_call(model: str, tenant: str) -> Iterator[tuple[Span, ModelCallReport]]:
    """A ``chat {model}`` CLIENT span around one provider request; on exit the span gets the
    response attributes and the duration and token histograms are recorded (with ``error.type``
    when the call raised)."""
    base = request_attributes(model, tenant)
    report = ModelCallReport()
    started = time.monotonic()
    with _tracer.start_as_current_span(f"{OPERATION} {model}", kind=SpanKind.CLIENT, attributes=base,
                                       record_exception=True, set_status_on_exception=False) as span:
        error: str | None = None
        try:
            yield span, report
        except BaseException as exc:
            error = type(exc).__qualname__
            span.set_attribute(error_attributes.ERROR_TYPE, error)
            span.set_status(Status(StatusCode.ERROR, str(exc)[:200]))
            raise
        finally:
            span.set_attributes(response_attributes(report))
            _record(report, base, time.monotonic() - started, error)
