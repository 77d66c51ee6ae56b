"""``POST /v1/replays``: re-run a delivery kept after ``unsupported-schema`` through intake.

Order, and why (the manual trigger's, ``_manual``):

1. Headers bounded, the declared ``Content-Length`` checked against
   :data:`intake.replay_request.MAX_BODY_BYTES`.
2. The actor's bearer token (constant time, every configured actor). Failures 1-2 are
   unauthenticated: counted, never recorded, the body unread.
3. The body, streamed under the cap, parsed (:mod:`intake.replay_request`).
4. The kept delivery, looked up only among the tenants the actor holds a role in: one kept for
   another tenant is answered exactly like one that does not exist (404), so ids do not leak
   across tenants. The actor must be ``admin`` in its tenant, else 403
   ``policy:replay-not-permitted`` with a receipt. A source moved to another tenant since the
   delivery was kept is refused 409 ``bad-input`` (no receipt, like the other 409s): the role was
   checked in the kept row's tenant, and the work would be filed under the source's new one.
5. The kept headers and body, unsealed, run through the source's *current* normalize stage
   (the signature was verified when the delivery arrived; a Standard Webhooks timestamp would
   no longer pass the 5-minute window, so it is not checked again), with the original delivery
   id and received time, then through intake like any delivery: scope, age, freshness read,
   policy, dedupe, capacity. The actor and the reason are recorded on the replay's receipt.

Idempotent: the replay claims the original delivery id in the ledger, so a second replay (or
the sender's own redelivery) is ``duplicate-delivery`` answered with the first one's receipt,
and nothing is admitted twice. A version still not accepted is answered ``unsupported-schema``
again (with a receipt) and stays kept.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime

from fastapi import Request
from fastapi.responses import JSONResponse

from intake.actors import role_in
from intake.decision import Reason
from intake.envelope import TriggerKind
from intake.errors import InvalidDelivery
from intake.replay_request import MAX_BODY_BYTES, parse_replay_body
from intake.request_rules import replay_rule
from intake.sources import VerifiedDelivery
from ledger import KeptDelivery
from sluicegate.temporal.codec import PayloadKeyError
from sluicegate.config.settings import Settings
from webhook_api._body import BodyNotReceived, read_limited
from webhook_api._kept import with_fields
from webhook_api._manual import operator_gate
from webhook_api._rejects import reject_with_receipt
from webhook_api._responses import decision_response, invalid_response
from webhook_api._sources import github_mappers, normalize

SOURCE = "replay"
EVENT_TYPE = "replay"


async def replay(request: Request, settings: Settings) -> JSONResponse:
    received_at = datetime.now(UTC)
    actor = operator_gate(request, settings, SOURCE, MAX_BODY_BYTES)
    if isinstance(actor, JSONResponse):
        return actor
    state = request.app.state
    try:
        body = await read_limited(request, MAX_BODY_BYTES, settings.webhook_api.body_read_timeout_seconds)
    except BodyNotReceived as unread:
        return _answer(InvalidDelivery(Reason.BAD_INPUT, str(unread), unread.status))
    if body is None:
        return _answer(InvalidDelivery(Reason.BAD_INPUT, f"body exceeds {MAX_BODY_BYTES} bytes", 413))
    try:
        ask = parse_replay_body(body)
    except ValueError as exc:
        return _answer(InvalidDelivery(Reason.BAD_INPUT, str(exc), 422))
    grants = settings.actors[actor].tenants
    rows = [r for r in await asyncio.to_thread(state.kept.find, ask.delivery_id, ask.source)
            if role_in(grants, r.tenant) is not None]
    if not rows:
        return _answer(InvalidDelivery(Reason.BAD_INPUT, "no kept delivery with that id in the actor's tenants "
                                       "(kept only after unsupported-schema, for maintenance.retention."
                                       "kept_deliveries)", 404))
    if len(rows) > 1:
        return _answer(InvalidDelivery(Reason.BAD_INPUT, "several sources kept a delivery with that id; name one "
                                       f"with \"source\" ({', '.join(r.source for r in rows)})", 409))
    row = rows[0]
    if (refused := replay_rule(role_in(grants, row.tenant), actor, row.tenant, row.delivery_id, EVENT_TYPE)) is not None:
        return await reject_with_receipt(state.store, refused, source=SOURCE, tenant=row.tenant,
                                         received_at=received_at, trigger_kind=TriggerKind.MANUAL, actor=actor)
    return with_fields(await _rerun(state, settings, row, actor, ask.reason), replay_of=row.receipt_id)


async def _rerun(state, settings: Settings, row: KeptDelivery, actor: str, reason: str) -> JSONResponse:
    src = settings.sources.get(row.source)
    if src is None:
        return _answer(InvalidDelivery(Reason.BAD_INPUT, f"source {row.source!r} is no longer configured", 409))
    if src.tenant != row.tenant:
        # The actor's role was checked in the kept row's tenant, but normalize would file the work
        # under the source's tenant now: an admin of one tenant must not start work in another.
        return _answer(InvalidDelivery(Reason.BAD_INPUT, (
            f"source {row.source!r} now belongs to tenant {src.tenant!r}, not {row.tenant!r} where the delivery "
            "was kept; replaying it would start work in another tenant"), 409))
    try:
        kept = await asyncio.to_thread(state.kept.open, row)
    except (PayloadKeyError, LookupError) as exc:
        return _answer(InvalidDelivery(Reason.BAD_INPUT, f"the kept body cannot be opened: {exc}", 409))
    try:
        parsed = normalize(row.source, src, VerifiedDelivery(kept.verified_id, kept.verified_type), kept.headers,
                           kept.body, row.received_at, github_mappers(state))
    except InvalidDelivery as err:  # still not mappable: answered with a receipt naming the actor; stays kept
        return await reject_with_receipt(state.store, err, source=row.source, tenant=src.tenant,
                                         received_at=datetime.now(UTC), actor=actor)
    envelope = replace(parsed.envelope, actor=actor, data={"replay_of": row.receipt_id, "reason": reason})
    decision = await state.intake.submit(envelope, parsed.candidate, max_age_seconds=parsed.max_age_seconds)
    await asyncio.to_thread(state.kept.mark_replayed, row.id, decision.receipt_id, actor)
    return decision_response(decision)


def _answer(err: InvalidDelivery) -> JSONResponse:
    """A refusal of an authenticated actor's request that names no kept delivery: no receipt (there is
    no delivery to attach it to), the enumerated reason and a message."""
    return invalid_response(err, None)
