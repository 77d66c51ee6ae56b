"""Verified means durable, at the HTTP boundary (real API server, forge simulator, both ledgers).

A signed, in-scope delivery whose pull request cannot be read — the forge answers 503, or hangs
past the freshness deadline — is answered 202 ``queued`` with ``Retry-After``, recorded (a
redelivery is a duplicate) and waits in the deferred queue; once the forge answers again, the
real dispatcher re-decides it with freshness and admits it. A 503 means the ledger is down.
"""

from __future__ import annotations

import asyncio
import uuid
from contextlib import AsyncExitStack

import psycopg
import pytest
from sqlmodel import Session, select

import ledger
from demo.github_payloads import delivery_headers, encode, pull_request_payload
from sluicegate.temporal.admitter import TemporalAdmitter
from ledger import DeferredItem, DeferredQueue, WorkVersion
from ledger._dead_letters import DeadLetters
from ledger._deferred import PoisonLetters
from sluicegate.services.intake import intake_service
from sluicegate.services.resources import open_forge
from tests.support.deferred import dispatch_until_decided
from tests.support.postgres import admin_url, create_database, drop_database
from tests.webhook_api.server import fresh_pull, post, receipts, running_api

QUICK = {"SLUICEGATE__INTAKE__FRESHNESS_DEADLINE_SECONDS": "1", "SLUICEGATE__INTAKE__SOURCE_RETRY_SECONDS": "0.2",
         "SLUICEGATE__INTAKE__SOURCE_RETRY_MAX_SECONDS": "1"}
FAULTS = {"forge-503": ({"status": 503, "times": 1}, "source-unavailable"),
          "forge-hangs": ({"hang_seconds": 4, "times": 1}, "freshness-deadline")}


def _waiting(url: str) -> list[DeferredItem]:
    engine = ledger.make_engine(url)
    try:
        with Session(engine) as s:
            return list(s.exec(select(DeferredItem).where(DeferredItem.status == "waiting")).all())
    finally:
        engine.dispose()


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_a_verified_delivery_the_forge_cannot_answer_is_queued_then_admitted(
        fault, sims, temporal_env, fresh_ledger_url):
    spec, reason = FAULTS[fault]
    with running_api(sims, temporal_env, fresh_ledger_url, **QUICK) as (server, settings):
        owner, repo, number, sha = pull = fresh_pull(sims)
        sims.forge_ctl("POST", "/faults", json={"method": "GET", "path": f"/repos/{owner}/{repo}/pulls/{number}$",
                                                **spec})
        body = encode(pull_request_payload(*pull))
        headers = delivery_headers(settings.sources["github"].secret, body, delivery_id=f"d-{uuid.uuid4()}")
        r = await asyncio.to_thread(post, server, "github", headers, body)
        assert r.status_code == 202, r.text
        assert (r.json()["outcome"], r.json()["reason"], r.json()["queued"]) == ("defer", reason, True)
        assert int(r.headers["Retry-After"]) >= 1
        [item] = _waiting(fresh_ledger_url)
        assert (item.tenant, item.input_version, item.blocked_on) == ("acme", sha, "source-unavailable")
        again = await asyncio.to_thread(post, server, "github", headers, body)  # redelivered while queued
        assert (again.status_code, again.json()["reason"]) == (200, "duplicate-delivery")
        assert (again.json()["queued"], again.json()["admitted"]) == (True, False)  # the original's state
        assert again.json()["receipt_id"] == r.json()["receipt_id"]  # the original's receipt, no new row
        assert [i.id for i in _waiting(fresh_ledger_url)] == [item.id]

        async with AsyncExitStack() as stack:  # the worker's dispatcher, wired as in production
            engine = ledger.make_engine(fresh_ledger_url)
            stack.callback(engine.dispose)
            service = intake_service(settings, engine, open_forge(settings, stack),
                                     TemporalAdmitter(temporal_env.client, settings, search_attributes=False))
            ended, _ = await dispatch_until_decided(DeferredQueue(engine), service, item.id)
            with Session(engine) as s:
                version = s.get(WorkVersion, (item.work_key, sha))
        assert ended.status == "admitted" and version.status == "admitted"
        decided = [(rc.outcome, rc.reason) for rc in receipts(fresh_ledger_url, headers["x-github-delivery"])]
        assert decided == [("defer", reason), ("accept", "admitted")]  # the redelivery wrote no row


async def test_a_queued_item_the_forge_refuses_for_good_dead_letters_instead_of_waiting_forever(
        sims, temporal_env, fresh_ledger_url):
    """A non-retryable forge answer (401 bad credentials) still queues the verified delivery, but
    re-reading it cannot help: each dispatch counts a failure, and past the limit the item is
    ``dead`` with a dead letter an admin can retry — not re-read every few minutes forever."""
    with running_api(sims, temporal_env, fresh_ledger_url, **QUICK) as (server, settings):
        owner, repo, number, sha = pull = fresh_pull(sims)
        sims.forge_ctl("POST", "/faults", json={"method": "GET", "path": f"/repos/{owner}/{repo}/pulls/{number}$",
                                                "status": 401, "times": 1000})
        body = encode(pull_request_payload(*pull))
        headers = delivery_headers(settings.sources["github"].secret, body, delivery_id=f"d-{uuid.uuid4()}")
        r = await asyncio.to_thread(post, server, "github", headers, body)
        assert (r.status_code, r.json()["reason"], r.json()["queued"]) == (202, "source-unavailable", True), r.text
        [item] = _waiting(fresh_ledger_url)

        async with AsyncExitStack() as stack:
            engine = ledger.make_engine(fresh_ledger_url)
            stack.callback(engine.dispose)
            service = intake_service(settings, engine, open_forge(settings, stack),
                                     TemporalAdmitter(temporal_env.client, settings, search_attributes=False))
            letters = PoisonLetters(engine, settings.dead_letters.owner_for)
            ended, reports = await dispatch_until_decided(DeferredQueue(engine), service, item.id, passes=6,
                                                          dead_letters=letters, max_failures=3, retry_after=0.05)
            open_letters = DeadLetters(engine).list()
        assert ended.status == "dead" and ended.failures == 3 and "401" in ended.last_error
        assert [rep.dead for rep in reports] == [[], [], [item.id]]
        assert [(d.work_key, d.reason) for d in open_letters] == [(item.work_key, "deferred-dispatch-failed")]


@pytest.mark.postgres
def test_the_api_answers_503_only_when_the_ledger_cannot_be_reached(sims, temporal_env, postgres_url):
    name, url = create_database("sluicegate_down")
    try:
        ledger.upgrade(url)
        with running_api(sims, temporal_env, url) as (server, settings):
            pull = fresh_pull(sims)
            body = encode(pull_request_payload(*pull))
            secret = settings.sources["github"].secret
            assert post(server, "github", delivery_headers(secret, body), body).status_code == 202  # ledger up
            with psycopg.connect(admin_url(), autocommit=True) as conn:  # the ledger goes away mid-flight
                conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            r = post(server, "github", delivery_headers(secret, body), body)
            assert r.status_code == 503, r.text
            assert (r.json()["reason"], r.json()["receipt_id"], r.json()["queued"]) == ("ledger-unavailable", None, False)
            assert int(r.headers["Retry-After"]) >= 1
    finally:
        drop_database(name)
