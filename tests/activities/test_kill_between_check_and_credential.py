"""A kill committed between a tool call's kill check and its credential issue stops that call.

The gateway checks the kills, then issues the mutation's short-lived credential, then checks the
credential right before the external call. A kill revokes the credentials it covers — but a kill
committed after the check and before the issue found none to revoke, and the issue did not look,
so that one call ran under a fresh credential (closing note of session 8). Now the issue itself
refuses while a kill covers the work, ordered against kill writes (``ledger/_credentials.py``).

Real parts: the gateway, kill switch, credential broker and side-effect ledger on SQL (both backends);
the gateway's worker thread is held right after its kill check (``tests/support/pause_at_statement``)
while the kill commits from the test's thread.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import select
from temporalio.exceptions import ApplicationError

from activities.gateway import Mutation, ToolGateway
from ledger import Credential, CredentialBroker, KillSwitch, SideEffectLedger
from tests.support.pause_at_statement import PauseAtStatement, not_in_this_thread, until_blocked_or_done


async def test_a_kill_committed_after_the_check_refuses_the_credential_and_the_call(engine):
    tenant = f"k{uuid.uuid4().hex[:6]}"
    work_key = f"{tenant}/github:{tenant}/api#7:review"
    kills = KillSwitch(engine)
    gateway = ToolGateway(SideEffectLedger(engine), kills, CredentialBroker(engine))
    mutation = Mutation(f"op_{uuid.uuid4().hex}", work_key, "post_review_comment", "ab" * 20, 1, tenant)
    performed: list[str] = []

    async def perform():
        performed.append("sent")
        return "comment-1", {"id": "comment-1"}

    async def reconcile():
        return None

    with PauseAtStatement(engine, lambda sql: "FROM kills" in sql, in_thread=not_in_this_thread(),
                          after=True) as held:
        call = asyncio.create_task(gateway.mutate(mutation, perform, reconcile))
        await asyncio.to_thread(held.wait_reached, "the gateway never checked the kills")
        await asyncio.to_thread(kills.kill, "work_key", work_key, "alice", "stop it now")  # committed here
        held.release()
        with pytest.raises(ApplicationError) as refused:
            await call
    assert (refused.value.type, refused.value.non_retryable) == ("Killed", True)
    assert "killed by alice" in str(refused.value)
    assert performed == []
    with engine.connect() as conn:
        live = conn.execute(select(Credential.id).where(Credential.work_key == work_key,
                                                        Credential.revoked_at.is_(None))).all()
    assert live == []  # no credential the kill did not see


def test_the_issue_refuses_while_a_kill_covers_the_work_and_issues_after_the_unkill(engine):
    tenant = f"k{uuid.uuid4().hex[:6]}"
    work_key = f"{tenant}/github:{tenant}/api#8:review"
    broker, kills = CredentialBroker(engine), KillSwitch(engine)
    kill = kills.kill("tenant", tenant, "bob", "tenant paused")
    refused = broker.issue(tenant, work_key, 1)
    assert getattr(refused, "id", None) == kill.id
    assert isinstance(broker.issue(f"{tenant}-other", work_key, 1), str)  # another tenant's work is not covered
    kills.unkill("tenant", tenant, "bob", "resumed")
    token = broker.issue(tenant, work_key, 1)
    assert isinstance(token, str) and broker.problem(token) is None


@pytest.mark.postgres
def test_an_unkill_committed_between_the_issues_insert_and_its_kill_read_is_not_an_error(postgres_url):
    """The issue's INSERT … WHERE NOT EXISTS sees the kill; an unkill then commits; the issue reads the
    kill that refused it (its own next statement, READ COMMITTED). The unkill is ordered by the kill
    lock too, so that read still finds it: the call is refused ``Killed`` rather than failing with
    ``NoResultFound`` (an unexplained error in the tool call, retried)."""
    import threading

    import ledger
    from ledger import Kill

    engine = ledger.make_engine(postgres_url)
    try:
        tenant = f"k{uuid.uuid4().hex[:6]}"
        work_key = f"{tenant}/github:{tenant}/api#9:review"
        broker, kills = CredentialBroker(engine), KillSwitch(engine)
        kill = kills.kill("work_key", work_key, "carol", "hold on")
        issuer: list[int] = []
        answer: dict[str, object] = {}

        def issue() -> None:
            issuer.append(threading.get_ident())
            try:
                answer["issued"] = broker.issue(tenant, work_key, 1)
            except BaseException as exc:  # noqa: BLE001 - asserted below
                answer["issued"] = exc

        def unkill() -> None:
            answer["lifted"] = kills.unkill("work_key", work_key, "carol", "go on")

        with PauseAtStatement(engine, lambda sql: sql.lstrip().startswith("INSERT INTO credentials"),
                              in_thread=lambda: threading.get_ident() in issuer, after=True) as held:
            first = threading.Thread(target=issue)
            first.start()
            held.wait_reached("the issue never ran its insert")
            second = threading.Thread(target=unkill)
            second.start()
            until_blocked_or_done(engine, second)  # fixed: the unkill waits for the issue's shared kill lock
            held.release()
            first.join(20)
            second.join(20)
        assert not first.is_alive() and not second.is_alive()
        issued = answer["issued"]
        assert isinstance(issued, Kill) and issued.id == kill.id, repr(issued)
        assert answer["lifted"] == 1
        assert isinstance(broker.issue(tenant, work_key, 1), str)  # after the unkill: issued
    finally:
        engine.dispose()
