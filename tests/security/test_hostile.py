"""The hostile-input runner against the running API process, on both ledgers: ~1,500 random
unauthenticated requests, no answer >= 500, no row in any table, a bounded API."""

from __future__ import annotations

import pytest

from tests.security import hostile

pytestmark = [pytest.mark.attack, pytest.mark.e2e]


def test_random_hostile_requests(target):
    s = target.settings
    before = target.unauthenticated()
    report = hostile.check(target.api, target.ledger_url, target.stack.processes["webhook-api"].proc.pid,
                           requests=1500, max_seconds=600, webhook_cap=s.webhook_api.max_body_bytes)
    print(report.summary())
    assert report.sent == 1500 and report.server_errors == 0, report.summary()
    assert report.rows_written == {} and not report.unexpected_errors, report.summary()
    assert report.refused_by_api + report.closed_on_refused_body > 0.9 * report.sent, report.summary()
    counted = target.wait_total(before, report.refused_by_api)
    assert counted == report.refused_by_api  # every refusal in our own shape was counted, once
    assert report.api_memory_kib["VmHWM"] < 400 * 1024, report.summary()  # generous bound: no body buffering
