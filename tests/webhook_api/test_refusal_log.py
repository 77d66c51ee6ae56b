"""The refusal log is bounded: N lines per interval, then one line saying how many were
suppressed; every refusal is still answered the same (and counted by the metric)."""

from __future__ import annotations

import logging
import time

from starlette.requests import Request

from intake.decision import Reason
from intake.errors import InvalidDelivery
from webhook_api._refusals import limit_refusal_log, log, refuse


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_a_flood_logs_a_bounded_number_of_lines_then_a_summary():
    capture = _Capture()
    log.addHandler(capture)
    request = Request({"type": "http", "method": "POST", "path": "/webhooks/github", "headers": [],
                       "client": ("192.0.2.1", 5000)})
    err = InvalidDelivery(Reason.BAD_SIGNATURE, "signature does not match a configured secret", 401)
    try:
        limit_refusal_log(lines=3, interval_seconds=0.5)
        answers = [refuse(request, "github", err) for _ in range(40)]
        assert {a.status_code for a in answers} == {401} and len(capture.lines) == 3
        assert "192.0.2.1" in capture.lines[0] and "bad-signature" in capture.lines[0]
        time.sleep(0.6)  # the interval passes; the next refusal is logged with the count it stood for
        refuse(request, "github", err)
        assert len(capture.lines) == 4 and "suppressed 37 more refusals" in capture.lines[-1]
    finally:
        log.removeHandler(capture)
        limit_refusal_log(lines=10, interval_seconds=60)
