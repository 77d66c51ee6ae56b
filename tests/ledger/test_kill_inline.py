"""``KillSwitch.active_for_inline``: the kill gate's read on the API's event loop (SQLite), the same
answers as ``active_for``; PostgreSQL always goes to a thread."""

from __future__ import annotations

import uuid

from ledger import KillSwitch


def test_the_inline_read_answers_like_active_for(engine):
    switch = KillSwitch(engine)
    key, tenant = f"wk-{uuid.uuid4().hex}", f"t-{uuid.uuid4().hex[:8]}"
    if engine.dialect.name != "sqlite":
        assert switch.active_for_inline(key, tenant) is None  # a network round trip: never on the loop
        return
    assert switch.active_for_inline(key, tenant) == (None,)
    by_key = switch.kill("work_key", key, "alice", "loops forever")
    [found] = switch.active_for_inline(key, tenant)
    assert found is not None and (found.id, found.reason, found.actor) == (by_key.id, "loops forever", "alice")
    assert found.created_at == switch.active_for(key, tenant).created_at  # typed like active_for's
    assert switch.active_for_inline("other-key", tenant) == (None,)
    switch.kill("tenant", tenant, "bob", "over budget")
    assert switch.active_for_inline("other-key", tenant)[0].reason == "over budget"
    assert switch.active_for_inline("other-key", None) == (None,)
    switch.unkill("work_key", key, "carol", "fixed")
    switch.unkill("tenant", tenant, "carol", "fixed")
    assert switch.active_for_inline(key, tenant) == (None,)
