"""The gateway asks the generation fence again right before the external call, and only the claim
that holds an entry records its outcome.

Found by an adversarial review (session 17): the fence was asked only in ``SideEffectLedger.begin``,
so a generation superseded while its reconcile ran still performed; and a stalled attempt's late
422 marked ``failed`` an effect the newer attempt had performed, so the run ended
``SideEffectFailed``. Real parts: the gateway, the intake store and the side-effect ledger on SQL
(both backends); ``perform`` and ``reconcile`` are the tool's callables, written here.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import pytest
from temporalio.exceptions import ApplicationError

from activities.gateway import Mutation, PermanentToolError, ToolGateway
from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.receipts import ReceiptDraft
from ledger import BeginState, SideEffectLedger, SqlIntakeStore


def _admit(engine, key: str, version: str):
    return SqlIntakeStore(engine).decide(ReceiptDraft(
        outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="", source="github", trigger_kind=TriggerKind.EVENT,
        received_at=datetime.now(UTC), delivery_id=uuid.uuid4().hex, work_key=key, input_version=version, tenant="t"))


async def test_a_generation_superseded_during_its_reconcile_does_not_perform(engine):
    key = f"t/github:t/api#{uuid.uuid4().int % 10**6}:review"
    first = _admit(engine, key, "v1")
    ledger = SideEffectLedger(engine)
    mutation = Mutation(f"op_{uuid.uuid4().hex}", key, "post_review_comment", "v1", first.generation, "t")
    ledger.begin(mutation.operation_key, work_key=key, operation=mutation.operation, target_version="v1",
                 generation=first.generation)  # an earlier attempt died in flight: the next one reconciles
    performed: list[str] = []
    newer: list[int] = []

    async def reconcile():  # slow: a push is admitted meanwhile
        newer.append((await asyncio.to_thread(_admit, engine, key, "v2")).generation)
        return None

    async def perform():
        performed.append("posted")
        return "c-1", {"id": "c-1"}

    with pytest.raises(ApplicationError) as refused:
        await ToolGateway(ledger).mutate(mutation, perform, reconcile)
    assert (refused.value.type, refused.value.non_retryable) == ("FencedOut", True)
    assert f"current generation {newer[0]}" in str(refused.value)
    assert performed == []
    assert ledger.get(mutation.operation_key).status == "fenced"


async def test_a_stalled_attempts_late_refusal_does_not_undo_the_newer_attempts_effect(engine):
    key = f"t/github:t/api#{uuid.uuid4().int % 10**6}:review"
    first = _admit(engine, key, "v1")
    ledger = SideEffectLedger(engine)
    gateway = ToolGateway(ledger)
    mutation = Mutation(f"op_{uuid.uuid4().hex}", key, "post_review_comment", "v1", first.generation, "t")
    sent, release = asyncio.Event(), asyncio.Event()

    async def nothing_yet():
        return None

    async def stalled_perform():  # attempt 1: its request is out, its answer comes late
        sent.set()
        await release.wait()
        raise PermanentToolError("422 already exists")

    stalled = asyncio.create_task(gateway.mutate(mutation, stalled_perform, nothing_yet))
    await sent.wait()

    async def perform():  # attempt 2 took the entry over; attempt 1's 422 lands while its own call is out
        release.set()
        with pytest.raises(ApplicationError):
            await stalled
        return "c-2", {"id": "c-2"}

    second = await gateway.mutate(mutation, perform, nothing_yet)
    assert second.external_id == "c-2"
    again = ledger.begin(mutation.operation_key, work_key=key, operation=mutation.operation, target_version="v1",
                         generation=first.generation)
    assert (again.state, again.external_id) == (BeginState.DONE, "c-2")
