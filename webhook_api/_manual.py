"""``POST /v1/triggers/manual``: bound, authenticate the actor, then parse; force only for admins.

Order, and why:

1. Headers bounded and the declared ``Content-Length`` checked against
   :data:`intake.manual_request.MAX_BODY_BYTES` — a 60 MB body is refused unread.
2. The bearer token, compared in constant time with every configured actor's (an empty
   token never matches). Failures 1-2 are unauthenticated: counted, never recorded, and the
   body is not read — a caller without a token learns nothing about sources or fields.
3. The body, streamed under the cap, then parsed with the shared model
   (:mod:`intake.manual_request`, also used by ``starter.py trigger``). From here the actor is
   known, so a bad request gets a reject receipt naming the actor.
4. The source (404), then ``force`` (403 ``policy:override-not-permitted`` for a non-admin,
   with a receipt). ``force`` becomes the envelope's typed ``override``: the only way any
   trigger can relax a check.
"""

from __future__ import annotations

import hmac
import uuid
from datetime import UTC, datetime
from typing import Mapping

from fastapi import Request
from fastapi.responses import JSONResponse

from intake.decision import Reason, policy_reason
from intake.envelope import Envelope, PullRequestRef, TriggerKind, WorkCandidate
from intake.errors import InvalidDelivery
from intake.identity import review_work_key
from intake.manual_request import MAX_BODY_BYTES, parse_manual_body
from sluicegate.config import ActorConfig, Settings
from webhook_api._body import bounded_headers, declared_too_large, read_limited
from webhook_api._refusals import refuse
from webhook_api._rejects import reject_with_receipt
from webhook_api._responses import decision_response, refused_response

SOURCE = "manual"
EVENT_TYPE = "manual.review"
MAX_OVERRIDE = 256


def authenticated_actor(authorization: str | None, actors: Mapping[str, ActorConfig]) -> str | None:
    """The name of the actor whose token is presented as ``Bearer <token>``, else ``None``."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    presented = token.strip().encode("utf-8", "surrogatepass")
    if scheme.lower() != "bearer" or not presented:
        return None
    found = None
    for name, actor in actors.items():  # no early exit: the time taken does not say who matched
        expected = actor.token.get_secret_value().encode()
        if expected and hmac.compare_digest(presented, expected) and found is None:
            found = name
    return found


async def manual_trigger(request: Request, settings: Settings) -> JSONResponse:
    received_at = datetime.now(UTC)
    if bounded_headers(request) is None:
        return refuse(request, SOURCE, InvalidDelivery(Reason.BAD_INPUT, "too many or too long headers", 431))
    if declared_too_large(request, MAX_BODY_BYTES):
        return refuse(request, SOURCE, InvalidDelivery(Reason.BAD_INPUT, f"body exceeds {MAX_BODY_BYTES} bytes", 413))
    actor = authenticated_actor(request.headers.get("authorization"), settings.actors)
    if actor is None:
        return refuse(request, SOURCE, InvalidDelivery(Reason.UNAUTHORIZED_ACTOR,
                                                       "a configured actor's bearer token is required", 401))
    store = request.app.state.store
    fallback_id = f"manual-{uuid.uuid4()}"

    async def reject(err: InvalidDelivery, tenant: str | None) -> JSONResponse:
        return await reject_with_receipt(store, err, source=SOURCE, tenant=tenant, received_at=received_at,
                                         trigger_kind=TriggerKind.MANUAL, actor=actor)

    body = await read_limited(request, MAX_BODY_BYTES)
    if body is None:
        return await reject(InvalidDelivery(Reason.BAD_INPUT, f"body exceeds {MAX_BODY_BYTES} bytes", 413,
                                            fallback_id, EVENT_TYPE), None)
    try:
        trigger = parse_manual_body(body)
    except ValueError as exc:
        return await reject(InvalidDelivery(Reason.BAD_INPUT, str(exc), 422, fallback_id, EVENT_TYPE), None)
    request_id = trigger.request_id or fallback_id
    src = settings.sources.get(trigger.source)
    if src is None:
        return refused_response(InvalidDelivery(Reason.UNKNOWN_SOURCE, "no source of that name is configured", 404))
    if trigger.force and settings.actors[actor].role != "admin":
        return await reject(InvalidDelivery(policy_reason("override-not-permitted"),
                                            f"actor {actor!r} may not force a re-run (role admin required)", 403,
                                            request_id, EVENT_TYPE), src.tenant)
    ref = PullRequestRef(*trigger.owner_repo, trigger.number)
    envelope = Envelope(id=request_id, source=SOURCE, type=EVENT_TYPE, subject=ref.target_id, time=received_at,
                        received_at=received_at, trigger_kind=TriggerKind.MANUAL, tenant=src.tenant, actor=actor,
                        override=f"rerun-done: {trigger.reason}"[:MAX_OVERRIDE] if trigger.force else None,
                        data={"reason": trigger.reason})  # who and why are part of the receipt
    candidate = WorkCandidate(review_work_key(ref), ref, trigger.input_version, src.tenant)
    return decision_response(await request.app.state.intake.submit(envelope, candidate))
