"""Authenticated but invalid requests: a reject receipt, then the 4xx its check chose.

Only a sender that proved who it is (a verified signature, a configured bearer token, an
actor's token) earns a durable row for a request that cannot be decided; everything before
that is counted instead (``_refusals``). The receipt never records the delivery id as seen, so
a bad request cannot burn a genuine delivery's id.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

from fastapi.responses import JSONResponse

from intake.decision import Outcome
from intake.envelope import TriggerKind
from intake.errors import InvalidDelivery
from intake.ports import IntakeStore
from intake.receipts import ReceiptDraft
from webhook_api._responses import invalid_response


async def reject_with_receipt(store: IntakeStore, err: InvalidDelivery, *, source: str, tenant: str | None,
                              received_at: datetime, trigger_kind: TriggerKind = TriggerKind.EVENT,
                              actor: str | None = None) -> JSONResponse:
    """Write the reject receipt (when the request is identifiable) and answer."""
    receipt_id = None
    if err.delivery_id is not None:
        draft = ReceiptDraft(outcome=Outcome.REJECT, reason=str(err.reason), message=err.message,
                             trigger_kind=trigger_kind, source=source, received_at=received_at,
                             delivery_id=err.delivery_id, event_type=err.event_type, tenant=tenant, actor=actor)
        receipt_id = (await asyncio.to_thread(store.record, draft)).receipt_id
    return invalid_response(err, receipt_id)
