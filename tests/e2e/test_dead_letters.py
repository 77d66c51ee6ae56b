"""A failed run lands in the dead letters with an owner; `starter.py dlq retry` re-submits it
through intake and the retried run finishes."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest

from demo.outcome import wait_for_runs
from ledger import DeadLetters, make_engine
from tests.e2e.conftest import StackHttp

pytestmark = pytest.mark.e2e


def test_failed_run_is_dead_lettered_and_retried_through_intake(stack_factory):
    stack = stack_factory()
    s, web = stack.settings, StackHttp(stack)
    web.model_fault(status=400, times=None)
    assert web.send_opened("acme/api", 44).status_code == 202
    [failed] = wait_for_runs(s, timeout=60)
    assert failed.status == "failed"
    engine = make_engine(s.ledger_url())
    [letter] = DeadLetters(engine).list()
    assert (letter.owner, letter.reason) == ("acme-reviews-team", "model-error: ModelRequestRejected")

    httpx.delete(f"{web.model}/_sim/faults").raise_for_status()
    retried = subprocess.run([sys.executable, str(s.base_dir / "starter.py"), "dlq", "retry", letter.id,
                              "--reason", "provider fixed the schema"],
                             env={**stack.env, "SLUICEGATE_ACTOR_TOKEN": s.actors["alice"].token.get_secret_value()},
                             capture_output=True, text=True, timeout=60)
    assert retried.returncode == 0, retried.stdout + retried.stderr
    [done] = wait_for_runs(s, timeout=60)
    assert done.status == "done" and done.generation == failed.generation + 1
    assert DeadLetters(engine).get(letter.id).status == "retried"
    engine.dispose()
    assert len(web.comments()) == 1
