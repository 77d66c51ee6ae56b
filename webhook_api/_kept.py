"""Authenticated but invalid webhooks: the reject receipt, and for ``unsupported-schema`` the kept body.

Reached only after the source's verify stage accepted the signature or token (bound,
authenticate, then parse), so only a sender that proved who it is can make Sluicegate keep a
body. An ``unsupported-schema`` delivery's receipt and its kept copy (``ledger/_kept.py``) are
written in one transaction; the answer is still 422, with ``kept`` saying whether a replay will
be possible (a body over a cap is answered, but not kept). A repeat — the same delivery id, or the
same signed content under another id (a captured body resent with other unsigned headers) — is
answered from the earlier record and writes nothing (``duplicate-delivery`` / ``replayed-body``).
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from typing import Mapping

from fastapi.responses import JSONResponse
from sqlalchemy.engine import Engine

from intake.admission_rules import is_repeat
from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.errors import InvalidDelivery
from intake.receipts import ReceiptDraft
from intake.sources import VerifiedDelivery
from ledger import KeptCaps, KeptDeliveries
from sluicegate.config.settings import Settings
from sluicegate.temporal.client import payload_keys
from webhook_api._rejects import reject_with_receipt
from webhook_api._responses import decision_response, invalid_response


def kept_deliveries(settings: Settings, engine: Engine) -> KeptDeliveries:
    """The kept-delivery store with the configured caps, sealed with the payload keys when set."""
    cfg = settings.kept_deliveries
    caps = KeptCaps(cfg.max_body_bytes, cfg.max_total_bytes, cfg.max_source_bytes,
                    settings.maintenance.retention.kept_deliveries)
    return KeptDeliveries(engine, payload_keys(settings), caps)


def schema_header(src) -> str | None:
    """The header a source's mapping reads its schema version from, if any (kept for a replay)."""
    versions = src.mapping.schema_versions if src.mapping is not None else None
    return versions.header if versions is not None else None


def with_fields(response: JSONResponse, **fields) -> JSONResponse:
    """``response`` with more fields in its JSON body (same status and headers)."""
    headers = {k: v for k, v in response.headers.items() if k.lower() not in ("content-length", "content-type")}
    return JSONResponse(json.loads(bytes(response.body)) | fields, status_code=response.status_code, headers=headers)


async def reject_or_keep(state, err: InvalidDelivery, *, source: str, tenant: str, headers: Mapping[str, str],
                         body: bytes, verified: VerifiedDelivery, received_at: datetime,
                         schema_header: str | None = None, digest: str | None = None) -> JSONResponse:
    """Answer a verified delivery its normalize stage refused (``state``: the app's, with ``store``
    and ``kept``): every refusal gets its receipt; ``unsupported-schema`` also keeps the body, with
    only the headers a replay reads (``schema_header``: the source's ``schema_versions.header``).
    ``digest``: the content its signature vouches for (None: the source signs no body). A repeat
    of the delivery id or of that content — a captured body resent with other unsigned headers —
    is answered from the earlier record, with no row (``SqlIntakeStore.record_reject``)."""
    if err.delivery_id is None:
        return await reject_with_receipt(state.store, err, source=source, tenant=tenant, received_at=received_at)
    draft = ReceiptDraft(outcome=Outcome.REJECT, reason=str(err.reason), message=err.message,
                         trigger_kind=TriggerKind.EVENT, source=source, received_at=received_at,
                         delivery_id=err.delivery_id, event_type=err.event_type, tenant=tenant, body_digest=digest)
    if err.reason != Reason.UNSUPPORTED_SCHEMA:
        decision = await asyncio.to_thread(state.store.record_reject, draft)
        if is_repeat(decision):
            return decision_response(decision)
        return invalid_response(err, decision.receipt_id)
    if (repeat := await asyncio.to_thread(state.store.reject_repeat, draft)) is not None:
        # No new receipt; but a first copy that was not kept (a cap full, or pruned since) is kept now.
        kept = await asyncio.to_thread(state.kept.keep_for, repeat.receipt_id, draft, dict(headers), body,
                                       verified.delivery_id, verified.event_type, schema_header)
        return with_fields(decision_response(repeat), kept=kept)
    decision, kept = await asyncio.to_thread(state.kept.reject_and_keep, draft, dict(headers), body,
                                             verified.delivery_id, verified.event_type, schema_header)
    return with_fields(invalid_response(err, decision.receipt_id), kept=kept)

