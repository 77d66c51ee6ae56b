"""FastAPI application: ``POST /webhooks/{source}``, ``POST /v1/triggers/manual``, ``GET /healthz``.

Stateless: everything durable is in the ledger and Temporal, so any number of API
processes can run behind a load balancer. A body over ``webhook_api.max_body_bytes`` is
refused while streaming (413), before it is buffered whole.
"""

from __future__ import annotations

import asyncio
import hmac
import uuid
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from opentelemetry import trace
from pydantic import BaseModel, ConfigDict, Field
from temporalio.client import Client

from intake.decision import Outcome, Reason, policy_reason
from intake.envelope import Envelope, PullRequestRef, TriggerKind, WorkCandidate
from intake.errors import InvalidDelivery
from intake.identity import review_work_key
from intake.receipts import ReceiptDraft
from intake.temporal_admitter import TemporalAdmitter
from ledger import SqlIntakeStore
from sluicegate.bounded_body import read_limited
from sluicegate.capacity_setup import intake_service
from sluicegate.config import Settings
from sluicegate.resources import open_forge, open_ledger
from sluicegate.temporal_client import connect
from webhook_api._responses import decision_response, invalid_response
from webhook_api._sources import delivery_hint, parse_delivery

tracer = trace.get_tracer("sluicegate.webhook_api")


class ManualTrigger(BaseModel):
    """A manual run request; the actor comes from the bearer token, never from the body."""

    model_config = ConfigDict(extra="forbid")
    source: str = "github"
    repository: str = Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", max_length=200)
    number: int = Field(gt=0)
    input_version: str | None = Field(default=None, max_length=128)
    request_id: str | None = Field(default=None, min_length=1, max_length=128)
    reason: str = Field(min_length=1, max_length=500)
    force: bool = False
    """Re-run a version already done. Only actors with role ``admin``; recorded on the receipt."""


def create_app(settings: Settings, client: Client | None = None, search_attributes: bool = True) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI):
        async with AsyncExitStack() as stack:
            engine = open_ledger(settings, stack)
            forge = open_forge(settings, stack)
            temporal = client or await connect(settings)
            app.state.store = SqlIntakeStore(engine)
            app.state.intake = intake_service(settings, engine, forge,
                                              TemporalAdmitter(temporal, settings, search_attributes))
            yield

    app = FastAPI(title="Sluicegate webhook API", lifespan=lifespan)

    async def reject_invalid(request: Request, err: InvalidDelivery, source: str, tenant: str | None,
                             received_at: datetime, trigger_kind: TriggerKind = TriggerKind.EVENT,
                             actor: str | None = None) -> JSONResponse:
        receipt_id = None
        if err.delivery_id is not None:
            draft = ReceiptDraft(outcome=Outcome.REJECT, reason=str(err.reason), message=err.message,
                                 trigger_kind=trigger_kind, source=source, received_at=received_at,
                                 delivery_id=err.delivery_id, event_type=err.event_type, tenant=tenant, actor=actor)
            receipt_id = (await asyncio.to_thread(request.app.state.store.record, draft)).receipt_id
        return invalid_response(err, receipt_id)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/webhooks/{source}")
    async def webhook(source: str, request: Request) -> JSONResponse:
        received_at = datetime.now(UTC)
        headers = {k.lower(): v for k, v in request.headers.items()}
        with tracer.start_as_current_span(f"webhook {source}", kind=trace.SpanKind.SERVER) as span:
            src = settings.sources.get(source)
            if src is None:
                return JSONResponse({"outcome": "reject", "reason": str(Reason.UNKNOWN_SOURCE),
                                     "message": f"no source named {source[:200]!r} is configured"}, status_code=404)
            hint_id, hint_event = delivery_hint(src, headers)
            span.set_attribute("sluicegate.source_kind", src.kind)
            span.set_attribute("sluicegate.delivery_id", hint_id or "")
            body = await read_limited(request, settings.webhook_api.max_body_bytes)
            try:
                if body is None:
                    raise InvalidDelivery(Reason.BAD_INPUT, f"body exceeds {settings.webhook_api.max_body_bytes} bytes",
                                          413, hint_id, hint_event)
                parsed = parse_delivery(source, src, headers, body, received_at)
            except InvalidDelivery as err:
                span.set_attribute("sluicegate.reason", str(err.reason))
                return await reject_invalid(request, err, source, src.tenant, received_at)
            decision = await request.app.state.intake.submit(parsed.envelope, parsed.candidate,
                                                             max_age_seconds=parsed.max_age_seconds)
            span.set_attribute("sluicegate.outcome", str(decision.outcome))
            span.set_attribute("sluicegate.reason", decision.reason)
            if decision.work_key:
                span.set_attribute("sluicegate.work_key", decision.work_key)
            return decision_response(decision)

    @app.post("/v1/triggers/manual")
    async def manual(trigger: ManualTrigger, request: Request) -> JSONResponse:
        received_at = datetime.now(UTC)
        with tracer.start_as_current_span("manual trigger", kind=trace.SpanKind.SERVER):
            request_id = trigger.request_id or f"manual-{uuid.uuid4()}"
            actor = _actor_for(request.headers.get("authorization"), settings)
            src = settings.sources.get(trigger.source)
            if actor is None:  # checked first: an unauthenticated caller learns nothing about sources
                err = InvalidDelivery(Reason.UNAUTHORIZED_ACTOR, "a configured actor's bearer token is required",
                                      401, request_id, "manual.review")
                return await reject_invalid(request, err, "manual", src.tenant if src else None, received_at,
                                            TriggerKind.MANUAL)
            if src is None:
                return JSONResponse({"outcome": "reject", "reason": str(Reason.UNKNOWN_SOURCE),
                                     "message": f"no source named {trigger.source!r} is configured"}, status_code=404)
            if trigger.force and settings.actors[actor].role != "admin":
                err = InvalidDelivery(policy_reason("override-not-permitted"),
                                      f"actor {actor!r} may not force a re-run (role admin required)", 403,
                                      request_id, "manual.review")
                return await reject_invalid(request, err, "manual", src.tenant, received_at, TriggerKind.MANUAL,
                                            actor)
            owner, repo = trigger.repository.split("/", 1)
            ref = PullRequestRef(owner, repo, trigger.number)
            # Who and why are part of the receipt, not only of the request log.
            data = {"reason": trigger.reason}
            if trigger.force:
                data["override"] = f"rerun-done: {trigger.reason}"[:256]
            envelope = Envelope(id=request_id, source="manual", type="manual.review", subject=ref.target_id,
                                time=received_at, received_at=received_at, trigger_kind=TriggerKind.MANUAL,
                                tenant=src.tenant, actor=actor, data=data)
            candidate = WorkCandidate(review_work_key(ref), ref, trigger.input_version, src.tenant)
            return decision_response(await request.app.state.intake.submit(envelope, candidate))

    return app


def _actor_for(authorization: str | None, settings: Settings) -> str | None:
    if not authorization or not authorization.lower().startswith("bearer "):
        return None
    token = authorization[7:].strip().encode()
    for name, actor in settings.actors.items():
        if hmac.compare_digest(token, actor.token.encode()):
            return name
    return None
