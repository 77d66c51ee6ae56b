"""Kill at the gate through the real API (HTTP server thread, real intake, SQLite and PostgreSQL):
a signed delivery for a killed tenant is answered 200 ``reject``/``killed`` with a receipt, nothing
is queued and the forge is not read; a delivery after the unkill (a new event; the killed delivery
itself stays decided) is admitted (202)."""

from __future__ import annotations

import asyncio
import uuid

from sqlmodel import Session, select

import ledger
from demo.github_payloads import delivery_headers, encode, pull_request_payload
from ledger import DeferredItem, KillSwitch, WorkVersion
from tests.webhook_api.server import fresh_pull, post, receipts, running_api


def _rows(url: str, model, work_key: str) -> list:
    engine = ledger.make_engine(url)
    try:
        with Session(engine) as s:
            return list(s.exec(select(model).where(model.work_key == work_key)).all())
    finally:
        engine.dispose()


async def test_a_delivery_for_a_killed_tenant_is_refused_then_admitted_after_unkill(sims, temporal_env,
                                                                                  fresh_ledger_url):
    with running_api(sims, temporal_env, fresh_ledger_url) as (server, settings):
        owner, repo, number, sha = pull = fresh_pull(sims)  # tenant acme
        secret = settings.sources["github"].secret
        engine = ledger.make_engine(fresh_ledger_url)
        kills = KillSwitch(engine)
        kill = kills.kill("tenant", "acme", "alice", "incident 7")
        body = encode(pull_request_payload(*pull))
        delivery = f"d-{uuid.uuid4()}"
        try:
            r = await asyncio.to_thread(post, server, "github", delivery_headers(secret, body, delivery_id=delivery),
                                        body)
        finally:
            kills.unkill("tenant", "acme", "carol", "incident over")
            engine.dispose()
        assert r.status_code == 200, r.text
        answer = r.json()
        assert (answer["outcome"], answer["reason"], answer["queued"], answer["admitted"]) == \
            ("reject", "killed", False, False)
        assert kill.id in answer["message"]
        [receipt] = receipts(fresh_ledger_url, delivery)
        assert (receipt.id, receipt.reason) == (answer["receipt_id"], "killed")
        work_key = receipt.work_key
        assert _rows(fresh_ledger_url, DeferredItem, work_key) == []
        reads = sims.forge_ctl("GET", "/stats").json()["by_repository"].get(f"{owner}/{repo}", 0)
        assert reads == 0

        # The killed delivery is decided: its redelivery is a duplicate. New work is a new event.
        again, body2 = f"d-{uuid.uuid4()}", encode(pull_request_payload(*pull, action="synchronize"))
        r2 = await asyncio.to_thread(post, server, "github", delivery_headers(secret, body2, delivery_id=again), body2)
        assert r2.status_code == 202, r2.text
        assert (r2.json()["outcome"], r2.json()["reason"]) == ("accept", "admitted")
        assert [v.status for v in _rows(fresh_ledger_url, WorkVersion, work_key)] in (["accepted"], ["admitted"])
