"""Payload encryption: with a key configured, histories hold only ciphertext; the codec server
turns it back into the work order for whoever may read it."""

from __future__ import annotations

import base64
from contextlib import AsyncExitStack

import httpx
import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError

import ledger
from sluicegate.temporal.codec import PLAINTEXT_REFUSED, new_key
from sluicegate.temporal.codec_server import create_codec_app
from simulators import ServerThread
from sluicegate.temporal.client import data_converter, payload_codec
from tests.support.agent_runs import PR42_HEAD, run_orders, start_order, work_order
from worker import create_worker
from workflows.contracts import AgentLoopResult
from tests.support.sims import settings_for

CODEC_TOKEN = "codec-token-for-tests-0001"


async def test_history_holds_ciphertext_and_the_codec_server_decodes_it(temporal_env, sims, tmp_path, task_queue):
    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    settings = settings_for(sims, url, SLUICEGATE_PAYLOAD_KEY=new_key())
    client = Client(temporal_env.client.service_client, namespace=temporal_env.client.namespace,
                    data_converter=data_converter(settings))
    result = await run_orders(client, settings, task_queue, work_order(settings))
    assert result.orders[0].status == "done"

    handle = await start_order(client, task_queue, work_order(settings, generation=2))
    history = await handle.fetch_history()
    raw = history.to_json()
    # Every payload in the history is sealed: none is plain JSON (payload metadata is base64 in this form).
    plain, sealed_encoding = (base64.b64encode(e).decode() for e in (b"json/plain", b"binary/encrypted"))
    assert plain not in raw and sealed_encoding in raw
    signal = next(e for e in history.events if e.HasField("workflow_execution_signaled_event_attributes"))
    sealed = signal.workflow_execution_signaled_event_attributes.input
    assert sealed.payloads[0].metadata["encoding"] == b"binary/encrypted"
    await handle.terminate("test done")

    server = ServerThread(create_codec_app(payload_codec(settings), CODEC_TOKEN)).start()
    try:
        r = httpx.post(f"{server.base_url}/decode", content=json_format.MessageToJson(sealed),
                       headers={"Authorization": f"Bearer {CODEC_TOKEN}"})
        decoded = json_format.Parse(r.content, Payloads())
    finally:
        server.stop()
    assert PR42_HEAD.encode() in decoded.payloads[0].data
    # A codec with another key cannot read it.
    other = settings_for(sims, url, SLUICEGATE_PAYLOAD_KEY=new_key())
    try:
        await payload_codec(other).decode(sealed.payloads)
    except Exception as exc:  # noqa: BLE001
        assert "not configured" in str(exc)
    else:
        raise AssertionError("a foreign key must not decrypt")


@pytest.mark.parametrize("accept_plaintext", [False, True])
async def test_a_plaintext_work_order_is_refused_when_encryption_is_on(temporal_env, sims, tmp_path, task_queue,
                                                                       accept_plaintext):
    """Anyone with namespace access can signal-with-start; without the key their order is plaintext."""
    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    flag = {"SLUICEGATE__TEMPORAL__ACCEPT_PLAINTEXT_PAYLOADS": "true"} if accept_plaintext else {}
    settings = settings_for(sims, url, SLUICEGATE_PAYLOAD_KEY=new_key(), **flag)
    worker_client = Client(temporal_env.client.service_client, namespace=temporal_env.client.namespace,
                           data_converter=data_converter(settings))
    plain_client = temporal_env.client  # the default converter: no key, plaintext payloads
    async with AsyncExitStack() as stack:
        async with await create_worker(worker_client, settings, stack, task_queue, search_attributes=False):
            handle = await start_order(plain_client, task_queue, work_order(settings))
            if accept_plaintext:  # the migration flag lets it through (and the run is encrypted from there on)
                result = await worker_client.get_workflow_handle(handle.id, result_type=AgentLoopResult).result()
                assert result.orders[0].status == "done" and len(sims.comments()) == 1
                return
            with pytest.raises(WorkflowFailureError) as failed:
                await handle.result()
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == PLAINTEXT_REFUSED and cause.non_retryable
    assert "temporal.accept_plaintext_payloads" in cause.message
    assert sims.model_stats()["calls"] == 0 and sims.comments() == []
    history = await handle.fetch_history()
    assert not any(e.HasField("activity_task_scheduled_event_attributes") for e in history.events)
