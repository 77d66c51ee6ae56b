"""Event, scan and manual trigger for one pull request at one head: one work key, one run."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from sqlmodel import Session, select
from temporalio.client import Client

from demo.github_payloads import delivery_headers, encode, pull_request_payload
from demo.outcome import wait_for_runs
from ledger import Receipt, SideEffect, make_engine
from workflows.scan_contracts import SCAN_WORKFLOW, ScanRequest, ScanResult

pytestmark = pytest.mark.e2e
KEY = "acme/github:acme/api#44:review"


def test_event_scan_and_manual_converge_on_one_run(stack_factory):
    stack = stack_factory()
    s = stack.settings
    api = f"http://{s.webhook_api.host}:{s.webhook_api.port}"
    forge = f"http://{s.simulators.forge.host}:{s.simulators.forge.port}"
    head = httpx.get(f"{forge}/repos/acme/api/pulls/44", headers={"Authorization": f"Bearer {s.forge.token.get_secret_value()}"}
                     ).json()["head"]["sha"]

    body = encode(pull_request_payload("acme", "api", 44, head))
    event = httpx.post(f"{api}/webhooks/github", content=body,
                       headers=delivery_headers(s.sources["github"].secret, body, delivery_id=str(uuid.uuid4())))

    async def scan() -> ScanResult:
        client = await Client.connect(s.temporal.address, namespace=s.temporal.namespace)
        return await client.execute_workflow(SCAN_WORKFLOW, ScanRequest(scan_id="converge", tenant="acme",
                                                                        repos=["acme/api"]),
                                             id=f"scan/converge-{uuid.uuid4().hex[:6]}",
                                             task_queue=s.temporal.task_queue, result_type=ScanResult)

    asyncio.run(scan())
    manual = httpx.post(f"{api}/v1/triggers/manual", headers={"Authorization": f"Bearer {s.actors['alice'].token.get_secret_value()}"},
                        json={"repository": "acme/api", "number": 44, "reason": "make sure it ran"})
    assert event.json()["work_key"] == manual.json()["work_key"] == KEY
    wait_for_runs(s, timeout=90)

    engine = make_engine(s.ledger_url())
    with Session(engine) as session:
        rows = session.exec(select(Receipt).where(Receipt.work_key == KEY).order_by(Receipt.created_at)).all()
        [effect] = session.exec(select(SideEffect).where(SideEffect.work_key == KEY)).all()
    engine.dispose()
    by_path = {r.trigger_kind: (r.outcome, r.reason, r.input_version) for r in rows}
    assert by_path == {"event": ("accept", "admitted", head), "schedule": ("reject", "duplicate-work", head),
                       "manual": ("reject", "duplicate-work", head)}
    # The identity bundle across processes: the API's receipts, the worker's (scan) receipt with its
    # activity attempt, and the worker's side effect with the admission's key and policy version.
    by_kind = {r.trigger_kind: r for r in rows}
    accept = by_kind["event"]
    assert {r.concurrency_key for r in rows} == {"repo:acme/api"}
    assert {r.policy_version for r in rows} == {s.intake.policy_version}
    assert (accept.activity_attempt, by_kind["manual"].activity_attempt, by_kind["schedule"].activity_attempt) == (
        None, None, 1)
    assert (effect.status, effect.generation, effect.target_version) == ("done", accept.generation, head)
    assert (effect.workflow_id, effect.run_id, effect.activity_attempt) == (accept.workflow_id, accept.run_id, 1)
    assert (effect.concurrency_key, effect.policy_version) == ("repo:acme/api", s.intake.policy_version)
    comments = [c for c in httpx.get(f"{forge}/_sim/comments").json() if c.get("number") == 44]
    assert len(comments) == 1
