"""Outbox drill: the API dies between committing the accept and starting the run.

Temporal is frozen (SIGSTOP) so the API's signal-with-start hangs after the receipt and
work version committed; the API is then SIGKILLed. After Temporal resumes, the outbox
relay admits the item: exactly one run, one comment, and the receipt gets its workflow id.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import uuid

import httpx
import pytest
from sqlmodel import Session, select
from temporalio.client import Client

from activities.maintenance import RelayRequest, RelayResult
from demo.github_payloads import delivery_headers, encode, pull_request_payload
from demo.outcome import wait_for_runs
from ledger import Receipt, WorkVersion, make_engine
from sluicegate.devstack import wait_for
from workflows.names import OUTBOX_RELAY_WORKFLOW

pytestmark = pytest.mark.e2e


def _versions(url: str) -> list[WorkVersion]:
    engine = make_engine(url)
    with Session(engine) as s:
        rows = list(s.exec(select(WorkVersion)).all())
    engine.dispose()
    return rows


def test_api_killed_between_commit_and_admission_is_relayed(stack_factory):
    stack = stack_factory()
    s = stack.settings
    forge = f"http://{s.simulators.forge.host}:{s.simulators.forge.port}"
    head = httpx.get(f"{forge}/repos/acme/api/pulls/44", headers={"Authorization": f"Bearer {s.forge.token.get_secret_value()}"}
                     ).json()["head"]["sha"]
    body = encode(pull_request_payload("acme", "api", 44, head))
    headers = delivery_headers(s.sources["github"].secret, body, delivery_id=str(uuid.uuid4()))
    temporal = stack.processes["temporal"].proc.pid

    def send() -> None:
        try:
            httpx.post(f"http://{s.webhook_api.host}:{s.webhook_api.port}/webhooks/github", content=body,
                       headers=headers, timeout=30)
        except httpx.HTTPError:
            pass  # the API is killed mid-request: the sender sees a dropped connection

    os.kill(temporal, signal.SIGSTOP)
    try:
        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        assert wait_for(lambda: [v.status for v in _versions(s.ledger_url())] == ["accepted"], timeout=20)
        stack.processes["webhook-api"].kill()
    finally:
        os.kill(temporal, signal.SIGCONT)

    async def relay() -> RelayResult:
        client = await Client.connect(s.temporal.address, namespace=s.temporal.namespace)
        return await client.execute_workflow(OUTBOX_RELAY_WORKFLOW, RelayRequest(grace_seconds=0), id=f"relay-{uuid.uuid4()}",
                                             task_queue=s.temporal.task_queue, result_type=RelayResult)

    result = asyncio.run(relay())
    assert result.admitted == [f"acme/github:acme/api#44:review@{head}"], result
    [version] = wait_for_runs(s, timeout=90)
    assert version.status == "done"
    assert len(httpx.get(f"{forge}/_sim/comments").json()) == 1
    engine = make_engine(s.ledger_url())
    with Session(engine) as session:
        [receipt] = session.exec(select(Receipt).where(Receipt.outcome == "accept")).all()
    engine.dispose()
    assert receipt.workflow_id == "agent/acme/github:acme/api#44:review" and receipt.external_ids
