"""The dev stack with payload encryption on: ``make up`` also runs the codec server, the run's history
holds ciphertext only, and the codec server (with its token) turns it back into the work order."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads
from temporalio.client import Client

from demo.outcome import wait_for_runs
from sluicegate.temporal.codec import new_key
from sluicegate.devstack import dev_server_argv
from tests.e2e.conftest import StackHttp

pytestmark = pytest.mark.e2e
_PAYLOAD_FIELDS = [("workflow_execution_started_event_attributes", "input"),
                   ("workflow_execution_signaled_event_attributes", "input"),
                   ("activity_task_scheduled_event_attributes", "input"),
                   ("activity_task_completed_event_attributes", "result"),
                   ("workflow_execution_completed_event_attributes", "result")]
TOKEN = "e2e-codec-token-0123456789"


def test_encrypted_stack_runs_a_review_and_the_codec_server_reads_it(stack_factory):
    stack = stack_factory(SLUICEGATE_PAYLOAD_KEY=new_key(), SLUICEGATE_CODEC_TOKEN=TOKEN)
    s, web = stack.settings, StackHttp(stack)
    assert "codec-server" in stack.processes
    head = web.head("acme/api", 44)
    assert web.send_opened("acme/api", 44, head).status_code == 202
    [version] = [v for v in wait_for_runs(s) if v.work_key == "acme/github:acme/api#44:review"]
    assert version.status == "done" and len(web.comments()) == 1

    async def signal_payloads() -> Payloads:
        client = await Client.connect(s.temporal.address, namespace=s.temporal.namespace)  # no key: raw payloads
        history = await client.get_workflow_handle(version.workflow_id, run_id=version.run_id).fetch_history()
        carried = [p for e in history.events for attrs, field in _PAYLOAD_FIELDS if e.HasField(attrs)
                   for p in getattr(getattr(e, attrs), field).payloads]
        assert len(carried) > 5 and {p.metadata["encoding"] for p in carried} == {b"binary/encrypted"}
        signal = next(e for e in history.events if e.HasField("workflow_execution_signaled_event_attributes"))
        return signal.workflow_execution_signaled_event_attributes.input  # (search attributes stay indexable)

    sealed = json_format.MessageToJson(asyncio.run(signal_payloads()))
    codec = f"http://{s.codec_server.host}:{s.codec_server.port}"
    assert httpx.post(f"{codec}/decode", content=sealed).status_code == 401
    opened = httpx.post(f"{codec}/decode", content=sealed, headers={"Authorization": f"Bearer {TOKEN}"})
    [order] = json_format.Parse(opened.content, Payloads()).payloads
    assert head.encode() in order.data and b"acme" in order.data


def test_the_ui_is_pointed_at_the_codec_server_only_when_encryption_is_on(tmp_path):
    from sluicegate.config.settings import DEFAULT_CONFIG_FILE, load_settings

    plain = load_settings(DEFAULT_CONFIG_FILE, env={"SLUICEGATE_TELEMETRY_EXPORTER": "none"})
    assert "--ui-codec-endpoint" not in dev_server_argv(plain)
    sealed = load_settings(DEFAULT_CONFIG_FILE, env={"SLUICEGATE_PAYLOAD_KEY": new_key(), "SLUICEGATE_CODEC_TOKEN": TOKEN,
                                                     "SLUICEGATE__DEV_SERVER__DB_FILENAME": str(tmp_path / "t.db")})
    argv = dev_server_argv(sealed, codec=True)
    assert argv[argv.index("--ui-codec-endpoint") + 1] == f"http://127.0.0.1:8888/ui/{TOKEN}"
    assert "--ui-codec-endpoint" not in dev_server_argv(sealed, headless=True, codec=True)
