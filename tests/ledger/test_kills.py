"""The kill switch's record on SQLite and PostgreSQL: scopes, lifting, history kept."""

from __future__ import annotations

import uuid

from ledger import KillSwitch


def test_scopes_cover_work_key_tenant_and_everything(engine):
    switch = KillSwitch(engine)
    key, tenant, other = f"wk-{uuid.uuid4().hex}", f"t-{uuid.uuid4().hex[:8]}", f"t-{uuid.uuid4().hex[:8]}"
    assert switch.active_for(key, tenant) is None
    by_key = switch.kill("work_key", key, "alice", "loops forever")
    assert switch.active_for(key, tenant).id == by_key.id and switch.active_for("other-key", tenant) is None
    switch.kill("tenant", tenant, "bob", "tenant over budget")
    assert switch.active_for("other-key", tenant).reason == "tenant over budget"
    assert switch.active_for("other-key", other) is None


def test_lifting_is_recorded_and_only_for_that_scope(engine):
    switch = KillSwitch(engine)
    key = f"wk-{uuid.uuid4().hex}"
    switch.kill("work_key", key, "alice", "stop")
    assert switch.unkill("tenant", key, "alice", "wrong scope") == 0
    assert switch.unkill("work_key", key, "carol", "fixed the prompt") == 1
    assert switch.active_for(key, None) is None
    assert switch.unkill("work_key", key, "carol", "again") == 0


def test_global_kill_covers_everyone_until_lifted(engine):
    switch = KillSwitch(engine)
    switch.kill("all", "ignored", "carol", "provider incident")
    try:
        assert switch.active_for(f"wk-{uuid.uuid4().hex}", None).scope == "all"
    finally:
        assert switch.unkill("all", "*", "carol", "incident over") >= 1


def test_a_kill_revokes_the_scoped_credentials_it_covers(engine):
    from datetime import timedelta

    from ledger import CredentialBroker

    broker = CredentialBroker(engine, ttl=timedelta(minutes=5))
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    mine, other = broker.issue(tenant, "wk-1", 1), broker.issue(f"{tenant}-other", "wk-2", 1)
    assert broker.problem(mine) is None and broker.problem("sgc_forged").message == "unknown credential"
    KillSwitch(engine).kill("tenant", tenant, "alice", "stop acme")
    revoked = broker.problem(mine)
    assert revoked.revoked and revoked.message.startswith("credential revoked: kill")
    assert broker.problem(other) is None
    # (not the killed tenant's: while its kill is in force no credential is issued for it at all)
    expired = CredentialBroker(engine, ttl=timedelta(seconds=-1)).issue(f"{tenant}-other", "wk-3", 1)
    assert broker.problem(expired).message == "credential expired" and not broker.problem(expired).revoked


def test_the_accept_time_read_finds_the_oldest_kill_in_force_and_only_one_that_covers(engine):
    """``kill_in_force`` (inside an accept's transaction; SQLite answers "none" on the DBAPI cursor)."""
    from sqlmodel import Session

    from ledger._kills import kill_in_force

    switch = KillSwitch(engine)
    key, tenant = f"wk-{uuid.uuid4().hex}", f"t-{uuid.uuid4().hex[:8]}"

    def read(work_key: str, of: str | None):
        with Session(engine) as s, s.begin():
            kill = kill_in_force(s, work_key, of)
            return None if kill is None else (kill.id, kill.scope)

    assert read(key, tenant) is None
    by_tenant = switch.kill("tenant", tenant, "bob", "over budget")
    by_key = switch.kill("work_key", key, "alice", "loops")
    assert read(key, tenant) == (by_tenant.id, "tenant")  # the oldest of the two covering it
    assert read(key, None) == (by_key.id, "work_key") and read("other-key", None) is None
    assert read("other-key", tenant) == (by_tenant.id, "tenant")
    switch.unkill("tenant", tenant, "bob", "paid")
    assert read("other-key", tenant) is None and read(key, tenant) == (by_key.id, "work_key")
