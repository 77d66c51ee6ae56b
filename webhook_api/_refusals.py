"""Requests refused before their sender was authenticated: a counter and a bounded log, no row.

Anything that fails before authentication — an unknown source, headers too many or too long,
a body over its cap, a missing or wrong signature or token, a missing delivery id — costs a
metric point (``sluicegate.intake.unauthenticated`` by source, reason and status) and at
most a few log lines, never a receipt: a flood of forged requests must not fill the ledger or
take SQLite's write lock away from genuine intake.

Failure modes written against:

* Log flooding: lines go through ``log-rate-limit``'s filter on one logger — at most
  ``webhook_api.refusal_log_lines`` per ``webhook_api.refusal_log_interval_seconds``; the next
  line after a quiet spell carries "suppressed N more". Lines quote nothing the sender chose
  except, for an unknown source, its name made printable and cut to 64 characters.
* Metric cardinality: the ``source`` attribute is a configured name, ``manual`` or
  ``unknown``, never the path segment a request made up.
"""

from __future__ import annotations

import logging

from fastapi import Request
from fastapi.responses import JSONResponse
from log_rate_limit import StreamRateLimitFilter

from intake.decision import Reason
from intake.errors import InvalidDelivery
from intake.hygiene import printable
from sluicegate.observability.metrics import record_unauthenticated
from webhook_api._responses import refused_response

UNKNOWN_SOURCE_LABEL = "unknown"
log = logging.getLogger("sluicegate.refusals")


def limit_refusal_log(lines: int, interval_seconds: float) -> None:
    """Install (once, replacing an earlier one) the rate limit on the refusal logger."""
    for old in [f for f in log.filters if isinstance(f, StreamRateLimitFilter)]:
        log.removeFilter(old)
    log.addFilter(StreamRateLimitFilter(
        period_sec=interval_seconds, allow_next_n=max(0, lines - 1), default_stream_id=None,
        filter_undefined=True, summary_msg="suppressed {numskip} more refusals since the last line"))


NOT_AUTHENTICATED = InvalidDelivery(Reason.BAD_SIGNATURE, "missing or invalid signature, token or delivery headers",
                                    401)
"""The one answer to a webhook whose sender was not authenticated, whatever the source or the check:
an unknown source name, a missing delivery header, a bad signature or token are told apart only
in the counter and the log, so the answers do not reveal which source names exist or what kind
they are."""


def refuse(request: Request, source: str, err: InvalidDelivery, asked_for: str | None = None,
           answer: InvalidDelivery | None = None) -> JSONResponse:
    """Count, log (rate-limited) and answer one unauthenticated request; writes nothing durable.

    ``source``: the configured source name (or ``manual``, or :data:`UNKNOWN_SOURCE_LABEL`);
    ``asked_for``: the unknown name the request used, for the log line only; ``answer``: what the
    caller is told, when that must be less than ``err`` (default ``err``)."""
    record_unauthenticated(source, str(err.reason), err.http_status)
    client = request.client.host if request.client else "-"
    named = f" (asked for {printable(asked_for, 64)!r})" if asked_for is not None else ""
    log.warning("refused unauthenticated request to %s%s from %s: %s %s: %s", source, named, client,
                err.http_status, err.reason, err.message)
    return refused_response(answer or err)
