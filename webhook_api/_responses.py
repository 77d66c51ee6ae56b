"""HTTP answers for intake decisions, in one place.

accept → 202; no-work and reject of a valid delivery (duplicate, stale, closed, policy)
→ 200, so the sender does not redeliver something already decided; every defer → 202 with
``Retry-After`` and ``queued: true``: the item waits in the durable deferred queue (capacity,
quota, rate-limited, breaker-open, and a source that could not be read — ``source-unavailable``,
``freshness-deadline``), so the sender must not redeliver; ``out-of-scope`` → 403 (decided,
with a receipt: a misconfigured sender sees it fail, and a redelivery is a 200 duplicate);
invalid input → the 4xx its check chose. Every body carries the receipt id (when one was
written), outcome and reason. A repeat (``duplicate-delivery``, ``replayed-body``) is a 200 that
tells the original's state from the ledger: ``queued`` (a waiting deferred item holds the original
receipt) and ``admitted`` (the original receipt admitted a workflow, whose ids it carries).

503 means one thing: the ledger could not be reached, so nothing was recorded and the sender
must deliver again (``ledger_down_response``; on-call: docs/runbook.md, "API answers 503").
No decision is ever answered 503.

Error bodies never echo input: messages are written by our checks and name fields and
expectations, not values (an ``out-of-scope`` message names the repository, which has passed
the hygiene rules by then, and the sender's own declared scope). A request refused before
authentication is answered with no delivery id and no receipt id (nothing was recorded), and
a body the framework could not validate (``RequestValidationError``) gets a fixed message,
because pydantic's own errors carry the offending ``input``.
"""

from __future__ import annotations

from fastapi.responses import JSONResponse
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from intake.decision import IntakeDecision, Outcome, Reason
from intake.errors import InvalidDelivery


LEDGER_DOWN = (OperationalError, InterfaceError, PoolTimeout)
"""What the database driver raises when the ledger cannot be reached or written (connection
refused or lost, a database that is gone, SQLite locked past its busy timeout, a full pool)."""
LEDGER_RETRY_SECONDS = 30


def decision_response(decision: IntakeDecision) -> JSONResponse:
    status = {Outcome.ACCEPT: 202, Outcome.DEFER: 202}.get(decision.outcome, 200)
    if str(decision.reason) == Reason.OUT_OF_SCOPE:
        status = 403  # decided and recorded (a redelivery is a 200 duplicate), but the sender must hear "never"
    headers = {}
    if decision.retry_after_seconds is not None:
        headers["Retry-After"] = str(int(max(1, decision.retry_after_seconds)))
    queued = decision.queued if decision.queued is not None else decision.outcome == Outcome.DEFER
    body = decision.as_json() | {"admitted": decision.workflow_id is not None, "queued": queued}
    return JSONResponse(body, status_code=status, headers=headers)


def ledger_down_response() -> JSONResponse:
    """The ledger is unreachable: nothing was recorded, deliver again later (the only 503)."""
    return JSONResponse({"outcome": "unavailable", "reason": str(Reason.LEDGER_UNAVAILABLE),
                         "message": "the ledger cannot be reached; nothing was recorded, deliver again later",
                         "receipt_id": None, "delivery_id": None, "queued": False},
                        status_code=503, headers={"Retry-After": str(LEDGER_RETRY_SECONDS)})


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
