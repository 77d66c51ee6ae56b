"""Review finding (PostgreSQL): a delivery that takes over a source-blocked queued item deadlocks
with the dispatcher re-deciding that same item.

The dispatcher's ``decide`` (resume) locks the deferred item first (``_resumed_item_changed``), then
takes the capacity counters and the work item. An arriving delivery of a newer version for the same
work key, whose read succeeded, takes the counters and the work item and only then marks the
source-blocked item ``superseded`` (``_deferred.finish``): the opposite order. PostgreSQL aborts one;
when it is the API's, a verified delivery is answered 503 (GitHub does not redeliver on its own).
Triage makes this common: an issue whose updated_at the API lags is queued ``source-unavailable``
and re-read every few seconds, and the issue's next edit is exactly the taking-over delivery.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import replace
from datetime import UTC, datetime

import pytest

import ledger
from intake.capacity import Block, CapacityRequest, SlotClaim
from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.ports import CapacityContext
from intake.receipts import ReceiptDraft
from ledger import DeferredQueue, SqlIntakeStore
from tests.support.pause_at_statement import PauseAtStatement, in_threads, until_blocked_or_done

pytestmark = pytest.mark.postgres


def _draft(tenant: str, key: str, version: str, outcome: Outcome = Outcome.ACCEPT,
           reason: Reason = Reason.ADMITTED) -> ReceiptDraft:
    return ReceiptDraft(outcome=outcome, reason=reason, message=str(reason), trigger_kind=TriggerKind.EVENT,
                        source="github", received_at=datetime.now(UTC), delivery_id=uuid.uuid4().hex, tenant=tenant,
                        work_key=key, target_id="acme/api#1", input_version=version, retry_after_seconds=5.0)


def _ctx(tenant: str, **kw) -> CapacityContext:
    return CapacityContext(CapacityRequest(tenant, 3, (SlotClaim(f"global-{tenant}", 10, Block.GLOBAL),)),
                           {"envelope": {}, "candidate": {}}, **kw)


@pytest.mark.parametrize("ordered_versions", [False, True], ids=["unordered", "triage-ordered"])
def test_a_delivery_taking_over_a_queued_item_while_the_dispatcher_resumes_it_does_not_deadlock(postgres_url,
                                                                                               ordered_versions):
    """``triage-ordered``: both accepts also take the version-order lock (ledger/_version_order_lock.py),
    first of all; the arriving delivery then waits on it instead of on a row."""
    engine = ledger.make_engine(postgres_url)
    try:
        tenant = f"sup-{uuid.uuid4().hex[:8]}"
        key = f"{tenant}/github:acme/api#1:triage"
        store = SqlIntakeStore(engine)
        queued = store.decide(_draft(tenant, key, "2026-12-01T10:00:00Z", Outcome.DEFER, Reason.SOURCE_UNAVAILABLE),
                              _ctx(tenant))
        assert queued.outcome == Outcome.DEFER
        [item] = [i for i in DeferredQueue(engine).waiting() if i.work_key == key]
        dispatcher: list[int] = []
        errors: dict[str, BaseException] = {}

        def dispatcher_resumes() -> None:
            dispatcher.append(threading.get_ident())
            try:
                store.decide(replace(_draft(tenant, key, "2026-12-01T10:00:00Z"), ordered_versions=ordered_versions),
                             _ctx(tenant, resume_item=item.id, resume_receipt=item.receipt_id))
            except BaseException as exc:  # noqa: BLE001 - asserted below
                errors["dispatcher"] = exc

        def api_takes_over() -> None:
            try:
                store.decide(replace(_draft(tenant, key, "2026-12-01T10:05:00Z"), ordered_versions=ordered_versions),
                             _ctx(tenant))
            except BaseException as exc:  # noqa: BLE001 - asserted below
                errors["api"] = exc

        # The dispatcher holds the deferred item's lock; stop it before its counters until the
        # arriving delivery waits on a lock.
        with PauseAtStatement(engine, lambda sql: "capacity_counters" in sql, in_thread=in_threads(dispatcher)) as held:
            first = threading.Thread(target=dispatcher_resumes)
            first.start()
            held.wait_reached("the dispatcher never reached its capacity counters")
            second = threading.Thread(target=api_takes_over)
            second.start()
            until_blocked_or_done(engine, second)
            held.release()
            first.join(20)
            second.join(20)
        assert not first.is_alive() and not second.is_alive()
        assert errors == {}, {k: f"{type(v).__name__}: {str(v)[:200]}" for k, v in errors.items()}
    finally:
        engine.dispose()
