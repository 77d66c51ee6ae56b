"""``POST /v1/triggers/manual``: bound, authenticate the actor, then parse; force only for admins.

Order, and why:

1. Headers bounded and the declared ``Content-Length`` checked against
   :data:`intake.manual_request.MAX_BODY_BYTES` — a 60 MB body is refused unread.
2. The bearer token, compared in constant time with every configured actor's (an empty
   token never matches). Failures 1-2 are unauthenticated: counted, never recorded, and the
   body is not read — a caller without a token learns nothing about tenants or fields.
3. The body, streamed under the cap, then parsed with the shared model
   (:mod:`intake.manual_request`, also used by ``starter.py trigger``). From here the actor is
   known, so a bad request gets a reject receipt naming the actor.
4. The tenant, from the actor's grants (``intake/actors.py``): the body's ``tenant`` may only
   choose among the tenants the actor holds a role in — one it holds none in is 403
   ``out-of-scope``, and an actor in several tenants who names none is 422 ``bad-input``
   (both with a receipt naming the actor). Then ``force``: 403
   ``policy:override-not-permitted`` unless the actor is ``admin`` *in that tenant*.
   ``force`` becomes the envelope's typed ``override``: the only way any trigger can relax a
   check.
5. Intake, which refuses a repository outside the tenant's scope (``out-of-scope``, 403)
   before the forge is read.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Mapping

from fastapi import Request
from fastapi.responses import JSONResponse

from intake.actors import actor_for_token, choose_tenant
from intake.decision import Reason
from intake.envelope import Envelope, PullRequestRef, TriggerKind
from intake.errors import InvalidDelivery
from intake.identity import REVIEW_TASK
from intake.manual_request import MAX_BODY_BYTES, ManualTrigger, parse_manual_body
from intake.request_rules import actor_rule, force_rule, task_rule, tenant_rule
from sluicegate.config.settings import ActorConfig, Settings
from sluicegate.config.tenancy import configured_tenants
from tasks import registry
from tasks.spec import TaskSpec
from webhook_api._body import BodyNotReceived, bounded_headers, declared_too_large, read_limited
from webhook_api._refusals import refuse
from webhook_api._rejects import reject_with_receipt
from webhook_api._responses import decision_response

SOURCE = "manual"
EVENT_TYPE = "manual.review"
MAX_OVERRIDE = 256


def tenant_request_id(tenant: str, request_id: str) -> str:
    """The delivery id a manual request is deduplicated under: ``<tenant>:<request id>`` (tenant
    names hold no ``:``), so two tenants choosing one request id are two deliveries."""
    return f"{tenant}:{request_id}"


def authenticated_actor(authorization: str | None, actors: Mapping[str, ActorConfig]) -> str | None:
    """The name of the actor whose token is presented as ``Bearer <token>``, else ``None``."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    return actor_for_token(token, actors) if scheme.lower() == "bearer" else None


def operator_gate(request: Request, settings: Settings, source: str, max_body: int) -> str | JSONResponse:
    """Bound, then authenticate, for an operator endpoint (manual triggers, replays): the header
    and declared-length bounds, then the actor's bearer token. The actor's name, or the refusal
    (counted, no durable row) — nothing of the body has been read either way."""
    if bounded_headers(request) is None:
        return refuse(request, source, InvalidDelivery(Reason.BAD_INPUT, "too many or too long headers", 431))
    if declared_too_large(request, max_body):
        return refuse(request, source, InvalidDelivery(Reason.BAD_INPUT, f"body exceeds {max_body} bytes", 413))
    actor = authenticated_actor(request.headers.get("authorization"), settings.actors)
    if (anonymous := actor_rule(actor)) is not None:
        return refuse(request, source, anonymous)
    assert actor is not None  # actor_rule refused a missing actor
    return actor


async def manual_trigger(request: Request, settings: Settings) -> JSONResponse:
    received_at = datetime.now(UTC)
    actor = operator_gate(request, settings, SOURCE, MAX_BODY_BYTES)
    if isinstance(actor, JSONResponse):
        return actor
    store = request.app.state.store
    fallback_id = f"manual-{uuid.uuid4()}"
    try:
        body = await read_limited(request, MAX_BODY_BYTES, settings.webhook_api.body_read_timeout_seconds)
    except BodyNotReceived as unread:
        return await _reject(store, actor, received_at, InvalidDelivery(
            Reason.BAD_INPUT, str(unread), unread.status, fallback_id, EVENT_TYPE), None)
    if body is None:
        return await _reject(store, actor, received_at, InvalidDelivery(
            Reason.BAD_INPUT, f"body exceeds {MAX_BODY_BYTES} bytes", 413, fallback_id, EVENT_TYPE), None)
    try:
        trigger = parse_manual_body(body)
    except ValueError as exc:
        return await _reject(store, actor, received_at,
                             InvalidDelivery(Reason.BAD_INPUT, str(exc), 422, fallback_id, EVENT_TYPE), None)
    return await submit_manual(request.app.state, settings, actor, trigger, received_at, fallback_id)


async def _reject(store, actor: str, received_at: datetime, err: InvalidDelivery, tenant: str | None) -> JSONResponse:
    return await reject_with_receipt(store, err, source=SOURCE, tenant=tenant, received_at=received_at,
                                     trigger_kind=TriggerKind.MANUAL, actor=actor)


async def submit_manual(state, settings: Settings, actor: str, trigger: ManualTrigger,
                        received_at: datetime | None = None, fallback_id: str | None = None) -> JSONResponse:
    """Steps 4-5 for an authenticated ``actor``'s parsed ``trigger`` (``state``: the app's, with
    ``store`` and ``intake``). Also how the console re-submits a dead letter, in-process, as the
    actor its session names: the same tenant choice, force rule and receipts as over HTTP."""
    received_at = received_at or datetime.now(UTC)
    request_id = trigger.request_id or fallback_id or f"manual-{uuid.uuid4()}"
    # The tenant comes from the actor's grants; the body may only choose among them.
    choice = choose_tenant(actor, settings.actors[actor].tenants, trigger.tenant, configured_tenants(settings))
    if (refused := tenant_rule(choice, request_id, EVENT_TYPE)) is not None:
        return await _reject(state.store, actor, received_at, refused, None)
    tenant = choice.tenant
    assert tenant is not None  # tenant_rule refused a choice without a tenant
    if (refused := force_rule(trigger.force, choice.role, actor, tenant, request_id, EVENT_TYPE)) is not None:
        return await _reject(state.store, actor, received_at, refused, tenant)
    tasks: dict[str, TaskSpec] = getattr(state, "tasks", None) or dict(registry.TASKS)  # tasks.enabled
    task = trigger.task or REVIEW_TASK
    event_type = EVENT_TYPE if task == REVIEW_TASK else f"manual.{task}"
    if (refused := task_rule(task, tasks, request_id, event_type)) is not None:
        return await _reject(state.store, actor, received_at, refused, tenant)
    ref = PullRequestRef(*trigger.owner_repo, trigger.number)
    try:
        candidate = tasks[task].candidate(tenant, ref, trigger.input_version)
    except ValueError:  # the message names the field, never echoes the value sent
        return await _reject(state.store, actor, received_at, InvalidDelivery(
            Reason.BAD_INPUT, f"input_version is not a version of task {task!r}", 422, request_id, event_type), tenant)
    # Request ids are deduplicated per tenant: tenant A's id never collides with (or answers with) B's.
    envelope = Envelope(id=tenant_request_id(tenant, request_id), source=SOURCE, type=event_type, subject=ref.target_id, time=received_at,
                        received_at=received_at, trigger_kind=TriggerKind.MANUAL, tenant=tenant, actor=actor,
                        override=f"rerun-done: {trigger.reason}"[:MAX_OVERRIDE] if trigger.force else None,
                        data={"reason": trigger.reason})  # who and why are part of the receipt
    return decision_response(await state.intake.submit(envelope, candidate))
