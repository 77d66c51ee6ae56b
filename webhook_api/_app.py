"""FastAPI application: ``POST /webhooks/{source}``, ``POST /v1/triggers/manual``, ``POST /v1/replays``
(``_replay``), ``GET /healthz``,
and the operator console mounted at ``/console`` (``console/``).

Stateless: everything durable is in the ledger and Temporal, so any number of API
processes can run behind a load balancer.

Every endpoint bounds, then authenticates, then parses. For a webhook: the source must be
configured; headers are bounded; the body is streamed under ``webhook_api.max_body_bytes``
(413 before it is buffered whole); the kind's verify stage checks the signature or token on
the raw bytes; an authenticated redelivery whose original this process already holds committed and
final is answered then, before the parse (``intake/seen_deliveries.py``); only then is the body parsed. Anything refused before authentication is
counted and logged at a bounded rate and writes no row (``_refusals``); an authenticated but
invalid delivery gets a reject receipt (``_rejects``); one rejected ``unsupported-schema``
also has its body kept for replay (``_kept``). The manual trigger follows the same
order (``_manual``). No error body echoes input, including the framework's own validation
errors (handled app-wide). A ledger that cannot be reached is the one 503 (``_responses``).
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime
from functools import partial

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from opentelemetry import trace
from temporalio.client import Client

from console import ConsolePorts, create_console
from intake.decision import Reason
from intake.errors import InvalidDelivery
from intake.request_rules import source_rule
from intake.sources._common import content_digest
from sluicegate.temporal.admitter import TemporalAdmitter
from ledger import SqlIntakeStore
from sluicegate.web.bounded_body import declared_too_large, read_limited
from sluicegate.services.intake import enabled_tasks, intake_service
from sluicegate.observability.metrics import observe_repeat_starts
from sluicegate.config.settings import Settings
from sluicegate.services.resources import open_forge, open_ledger
from sluicegate.services.startup_gc import freeze_after_startup
from sluicegate.temporal.client import connect
from webhook_api._body import BodyNotReceived, BodyReadGate, bounded_headers
from webhook_api._manual import manual_trigger, submit_manual
from webhook_api._replay import replay
from webhook_api._refusals import NOT_AUTHENTICATED, UNKNOWN_SOURCE_LABEL, limit_refusal_log, refuse
from webhook_api._kept import kept_deliveries, reject_or_keep, schema_header
from webhook_api._responses import LEDGER_DOWN, decision_response, ledger_down_response, unvalidated_response
from tasks import registry
from webhook_api._sources import HEADER_AUTH_KINDS, authenticate, github_mappers, normalize

tracer = trace.get_tracer("sluicegate.webhook_api")
log = logging.getLogger("sluicegate.webhook_api")
STARTS_GRACE_SECONDS = 5.0
"""At shutdown, how long the starts that repeats set off (``intake/starts_in_progress.py``) may take
to end; one cut short leaves its version ``accepted``, for the next repeat or the outbox relay."""


def create_app(settings: Settings, client: Client | None = None, search_attributes: bool = True, *,
               freeze_gc: bool = False) -> FastAPI:
    """``freeze_gc``: after start-up, keep what it built out of full garbage collections
    (``sluicegate.services.startup_gc``); the API's entry point sets it, a test process never does."""

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        async with AsyncExitStack() as stack:
            engine = open_ledger(settings, stack)
            forge = open_forge(settings, stack)
            temporal = client or await connect(settings)
            app.state.store = SqlIntakeStore(engine, policy=settings.intake.policy())
            app.state.kept = kept_deliveries(settings, engine)  # bodies kept after unsupported-schema
            app.state.tasks = {spec.name: spec for spec in enabled_tasks(settings)}  # tasks.enabled
            app.state.github_mappers = registry.github_mappers(app.state.tasks.values())
            app.state.intake = intake_service(settings, engine, forge,
                                              TemporalAdmitter(temporal, settings, search_attributes))
            observe_repeat_starts(app.state.intake.starts.counts)
            # on the way out, before the ledger closes: the starts repeats set off get a moment to end
            stack.push_async_callback(app.state.intake.wait_for_starts, STARTS_GRACE_SECONDS)
            app.state.console = ConsolePorts(engine, temporal, partial(submit_manual, app.state, settings))
            if freeze_gc:
                log.info("froze %d start-up objects out of full garbage collections", freeze_after_startup())
            yield

    # No /docs, /redoc, /openapi.json: the routes are documented in docs/webhooks.md, and a public
    # endpoint serves nothing an anonymous caller does not need.
    app = FastAPI(title="Sluicegate webhook API", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.mount("/console", create_console(settings, lambda: app.state.console))  # the operator console
    api = settings.webhook_api
    limit_refusal_log(api.refusal_log_lines, api.refusal_log_interval_seconds)
    # One cap per source: slow or parallel unauthenticated bodies sent to one source's URL (anyone
    # can reach GitHub's) hold only that source's read slots, never another source's.
    reads = {name: BodyReadGate(api.max_concurrent_body_reads, api.max_concurrent_body_reads_per_client)
             for name in settings.sources}

    async def read_body(request: Request, name: str, limit: int) -> bytes | JSONResponse:
        """The body under ``limit``, the read deadline and source ``name``'s caps on reads at once
        (all clients, and one client address); else the refusal (counted, no row) to answer."""
        with reads[name].slot(request.client.host if request.client else "-") as admitted:
            if not admitted:
                return refuse(request, name, InvalidDelivery(Reason.BAD_INPUT, "too many request bodies being "
                                                             "read at once; retry shortly", 429))
            try:
                body = await read_limited(request, limit, api.body_read_timeout_seconds)
            except BodyNotReceived as unread:  # too slow, or the client went away: counted like any refusal
                return refuse(request, name, InvalidDelivery(Reason.BAD_INPUT, str(unread), unread.status))
        if body is None:
            return refuse(request, name, InvalidDelivery(Reason.BAD_INPUT, f"body exceeds {limit} bytes", 413))
        return body

    @app.exception_handler(RequestValidationError)
    async def _unvalidated(request: Request, exc: RequestValidationError) -> JSONResponse:
        return unvalidated_response()  # pydantic's errors carry the input: never answer them

    async def _ledger_down(request: Request, exc: Exception) -> JSONResponse:
        # The error's text may quote SQL/params: log its class, the driver's class and SQLSTATE only.
        orig = getattr(exc, "orig", None)
        log.error("ledger unavailable, answering 503: %s (%s, sqlstate %s)", type(exc).__name__,
                  type(orig).__name__ if orig is not None else "-", getattr(orig, "sqlstate", None))
        return ledger_down_response()

    for error in LEDGER_DOWN:
        app.add_exception_handler(error, _ledger_down)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/webhooks/{source}")
    async def webhook(source: str, request: Request) -> JSONResponse:
        received_at = datetime.now(UTC)
        src = settings.sources.get(source)
        name = source if src is not None else UNKNOWN_SOURCE_LABEL
        with tracer.start_as_current_span(f"webhook {name}", kind=trace.SpanKind.SERVER) as span:
            headers = bounded_headers(request)
            if headers is None:
                return refuse(request, name, InvalidDelivery(Reason.BAD_INPUT, "too many or too long headers", 431))
            if declared_too_large(request, api.max_body_bytes):
                return refuse(request, name, InvalidDelivery(Reason.BAD_INPUT,
                                                             f"body exceeds {api.max_body_bytes} bytes", 413))
            if (unknown := source_rule(src is not None)) is not None:  # answered like a bad signature
                return refuse(request, name, unknown, source, answer=NOT_AUTHENTICATED)
            assert src is not None  # source_rule refused an unknown source
            span.set_attribute("sluicegate.source_kind", src.kind)
            try:  # a bearer-token kind authenticates from its headers, before any body byte is read
                verified = authenticate(src, headers, b"") if src.kind in HEADER_AUTH_KINDS else None
            except InvalidDelivery as err:
                span.set_attribute("sluicegate.reason", str(err.reason))
                return refuse(request, name, err, answer=NOT_AUTHENTICATED)
            body = await read_body(request, name, api.max_body_bytes)
            if isinstance(body, JSONResponse):
                return body
            try:
                verified = verified or authenticate(src, headers, body)
            except InvalidDelivery as err:
                span.set_attribute("sluicegate.reason", str(err.reason))
                return refuse(request, name, err, answer=NOT_AUTHENTICATED)
            span.set_attribute("sluicegate.delivery_id", verified.delivery_id or "")
            if verified.delivery_id is not None and (repeat := request.app.state.intake.known_delivery(
                    source, verified.delivery_id, src.tenant, received_at, verified.event_type)) is not None:
                span.set_attribute("sluicegate.outcome", str(repeat.outcome))  # authenticated: no parse needed
                span.set_attribute("sluicegate.reason", repeat.reason)
                return decision_response(repeat)
            try:
                parsed = normalize(source, src, verified, headers, body, received_at,
                                   github_mappers(request.app.state))
            except InvalidDelivery as err:
                span.set_attribute("sluicegate.reason", str(err.reason))
                return await reject_or_keep(request.app.state, err, source=source, tenant=src.tenant,
                                            headers=headers, body=body, verified=verified, received_at=received_at,
                                            schema_header=schema_header(src),
                                            digest=None if src.kind in HEADER_AUTH_KINDS else content_digest(body))
            decision = await request.app.state.intake.submit(parsed.envelope, parsed.candidate,
                                                             max_age_seconds=parsed.max_age_seconds)
            span.set_attribute("sluicegate.delivery_id", parsed.envelope.id)
            span.set_attribute("sluicegate.outcome", str(decision.outcome))
            span.set_attribute("sluicegate.reason", decision.reason)
            if decision.work_key:
                span.set_attribute("sluicegate.work_key", decision.work_key)
            return decision_response(decision)

    @app.post("/v1/triggers/manual")
    async def manual(request: Request) -> JSONResponse:
        with tracer.start_as_current_span("manual trigger", kind=trace.SpanKind.SERVER):
            return await manual_trigger(request, settings)

    @app.post("/v1/replays")
    async def replays(request: Request) -> JSONResponse:
        with tracer.start_as_current_span("replay", kind=trace.SpanKind.SERVER):
            return await replay(request, settings)

    return app
