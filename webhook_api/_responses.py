"""HTTP answers for intake decisions, in one place.

accept → 202; no-work and reject of a valid delivery (duplicate, stale, closed, policy)
→ 200, so the sender does not redeliver something already decided; a defer for capacity
(capacity, quota, rate-limited, breaker-open) → 202 with ``Retry-After``: the item waits in
the durable deferred queue, so the sender must not redeliver; a defer because the source
could not be read → 503 with ``Retry-After`` (nothing was kept: redeliver); invalid input → the
4xx its check chose. Every body carries the receipt id (when one was written), outcome and
reason.

Error bodies never echo input: messages are written by our checks and name fields and
expectations, not values. A request refused before authentication is answered with no
delivery id and no receipt id (nothing was recorded), and a body the framework could not
validate (``RequestValidationError``) gets a fixed message, because pydantic's own errors
carry the offending ``input``.
"""

from __future__ import annotations

from fastapi.responses import JSONResponse

from intake.decision import IntakeDecision, Outcome, Reason
from intake.errors import InvalidDelivery


QUEUED_DEFERS = {str(Reason.CAPACITY), str(Reason.QUOTA), str(Reason.RATE_LIMITED), str(Reason.BREAKER_OPEN)}


def decision_response(decision: IntakeDecision) -> JSONResponse:
    status = {Outcome.ACCEPT: 202, Outcome.DEFER: 503}.get(decision.outcome, 200)
    if decision.outcome == Outcome.DEFER and str(decision.reason) in QUEUED_DEFERS:
        status = 202
    headers = {}
    if decision.retry_after_seconds is not None:
        headers["Retry-After"] = str(int(max(1, decision.retry_after_seconds)))
    body = decision.as_json() | {"admitted": decision.workflow_id is not None,
                                 "queued": status == 202 and decision.outcome == Outcome.DEFER}
    return JSONResponse(body, status_code=status, headers=headers)


def refused_response(err: InvalidDelivery) -> JSONResponse:
    """A request refused before its sender was authenticated: nothing recorded, nothing echoed."""
    return JSONResponse({"outcome": "reject", "reason": str(err.reason), "message": err.message,
                         "receipt_id": None, "delivery_id": None}, status_code=err.http_status)


def unvalidated_response() -> JSONResponse:
    """The framework refused a request's parameters (any route): never its ``input``."""
    return JSONResponse({"outcome": "reject", "reason": str(Reason.BAD_INPUT),
                         "message": "the request does not match this endpoint's parameters",
                         "receipt_id": None, "delivery_id": None}, status_code=422)


def invalid_response(err: InvalidDelivery, receipt_id: str | None) -> JSONResponse:
    return JSONResponse({"outcome": "reject", "reason": str(err.reason), "message": err.message,
                         "receipt_id": receipt_id, "delivery_id": err.delivery_id},
                        status_code=err.http_status)
