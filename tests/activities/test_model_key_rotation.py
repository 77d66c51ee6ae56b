"""A key rotated during a tenant kill is the one used after the unkill, even when no call of that
tenant reached this worker while the kill was in force (a kill stops runs by signal before their
next step, so usually none does): the cached client remembers the newest kill it was built under."""

from __future__ import annotations

from ledger import KillSwitch
from activities.model import ModelActivities
from tests.activities.test_model_credentials import _call, _keys_by_work, _request, model_sim, tenants  # noqa: F401


async def test_a_key_rotated_during_a_kill_is_used_after_the_unkill_even_without_a_call_during_it(
        engine, tenants, model_sim):  # noqa: F811
    clients = tenants.clients(f"{model_sim}/v1")
    kills = KillSwitch(engine)
    acts = ModelActivities(clients, kills)
    rotated = _request(tenants.b)
    try:
        await _call(acts, _request(tenants.b))  # b's client cached with the (now leaked) key
        kills.kill("tenant", tenants.b, "test", "rotate the leaked key")
        tenants.key_file.write_text("sk-rotated-not-yet-known\n")
        assert kills.unkill("tenant", tenants.b, "test", "key rotated") == 1
        try:
            await _call(acts, rotated)
        except Exception:  # noqa: BLE001 - the simulator refuses the new key: what we want
            pass
    finally:
        await clients.close()
    assert _keys_by_work(model_sim)[rotated.work_key] == {"unknown": 1}  # not the leaked key
