"""A failed run lands in the dead letters with an owner; `starter.py dlq retry` re-submits it
through intake and the retried run finishes."""

from __future__ import annotations

import subprocess
import sys
import uuid

import httpx
import pytest

from demo.github_payloads import delivery_headers, encode, pull_request_payload
from demo.outcome import wait_for_runs
from ledger import DeadLetters, make_engine

pytestmark = pytest.mark.e2e


def test_failed_run_is_dead_lettered_and_retried_through_intake(stack_factory):
    stack = stack_factory()
    s = stack.settings
    model = f"http://{s.simulators.model.host}:{s.simulators.model.port}"
    forge = f"http://{s.simulators.forge.host}:{s.simulators.forge.port}"
    httpx.post(f"{model}/_sim/faults", json={"status": 400, "times": None}).raise_for_status()
    head = httpx.get(f"{forge}/repos/acme/api/pulls/44", headers={"Authorization": f"Bearer {s.forge.token}"}
                     ).json()["head"]["sha"]
    body = encode(pull_request_payload("acme", "api", 44, head))
    httpx.post(f"http://{s.webhook_api.host}:{s.webhook_api.port}/webhooks/github", content=body,
               headers=delivery_headers(s.sources["github"].secret, body, delivery_id=str(uuid.uuid4())))
    [failed] = wait_for_runs(s, timeout=60)
    assert failed.status == "failed"
    engine = make_engine(s.ledger_url())
    [letter] = DeadLetters(engine).list()
    assert (letter.owner, letter.reason) == ("acme-reviews-team", "model-error: ModelRequestRejected")

    httpx.delete(f"{model}/_sim/faults").raise_for_status()
    retried = subprocess.run([sys.executable, str(s.base_dir / "starter.py"), "dlq", "retry", letter.id,
                              "--reason", "provider fixed the schema"],
                             env={**stack.env, "SLUICEGATE_ACTOR_TOKEN": s.actors["alice"].token},
                             capture_output=True, text=True, timeout=60)
    assert retried.returncode == 0, retried.stdout + retried.stderr
    [done] = wait_for_runs(s, timeout=60)
    assert done.status == "done" and done.generation == failed.generation + 1
    assert DeadLetters(engine).get(letter.id).status == "retried"
    engine.dispose()
    assert len(httpx.get(f"{forge}/_sim/comments").json()) == 1
