"""`starter.py kill` against the running stack: the run stops, nothing is posted, the kill and
its lifting are on record."""

from __future__ import annotations

import subprocess
import sys
import uuid

import httpx
import pytest

from demo.github_payloads import delivery_headers, encode, pull_request_payload
from demo.outcome import wait_for_runs
from ledger import KillSwitch, make_engine
from sluicegate.devstack import wait_for

pytestmark = pytest.mark.e2e


def _starter(stack, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(stack.settings.base_dir / "starter.py"), *args], env=stack.env,
                          capture_output=True, text=True, timeout=60)


def test_kill_by_tenant_stops_a_running_review_and_unkill_is_recorded(stack_factory):
    stack = stack_factory()
    s = stack.settings
    model = f"http://{s.simulators.model.host}:{s.simulators.model.port}"
    forge = f"http://{s.simulators.forge.host}:{s.simulators.forge.port}"
    httpx.post(f"{model}/_sim/faults", json={"delay_seconds": 3, "times": None}).raise_for_status()
    head = httpx.get(f"{forge}/repos/acme/api/pulls/44", headers={"Authorization": f"Bearer {s.forge.token}"}
                     ).json()["head"]["sha"]
    body = encode(pull_request_payload("acme", "api", 44, head))
    r = httpx.post(f"http://{s.webhook_api.host}:{s.webhook_api.port}/webhooks/github", content=body,
                   headers=delivery_headers(s.sources["github"].secret, body, delivery_id=str(uuid.uuid4())))
    assert r.status_code == 202
    assert wait_for(lambda: httpx.get(f"{model}/_sim/stats").json()["calls"] >= 1, timeout=30)

    killed = _starter(stack, "kill", "--tenant", "acme", "--actor", "alice", "--reason", "bad prompt")
    assert killed.returncode == 0, killed.stderr
    # Visibility is eventually consistent: the signal may miss a run started a moment ago; the
    # recorded kill stops it anyway at its next model or tool call.
    assert "kill" in killed.stdout and "recorded" in killed.stdout
    [version] = wait_for_runs(s, timeout=60)
    assert version.status == "killed" and version.result["reason"].startswith(("killed by alice", "model-error"))
    assert httpx.get(f"{forge}/_sim/comments").json() == []

    lifted = _starter(stack, "unkill", "--tenant", "acme", "--actor", "carol", "--reason", "prompt fixed")
    assert lifted.returncode == 0, lifted.stderr
    engine = make_engine(s.ledger_url())
    assert KillSwitch(engine).active_for("github:acme/api#44:review", "acme") is None
    engine.dispose()
