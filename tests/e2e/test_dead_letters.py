"""A failed run lands in the dead letters with an owner; `starter.py dlq retry` re-submits it
through intake, in the letter's tenant, and the retried run finishes."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest

from demo.outcome import wait_for_runs
from ledger import DeadLetters, make_engine
from ledger._queries import ReceiptFilter, list_receipts
from tests.e2e.conftest import StackHttp
from tests.support.tenants import BETA_SOURCE, SHARED_OWNER, TOKENS, two_tenants

pytestmark = pytest.mark.e2e


def test_failed_run_is_dead_lettered_and_retried_through_intake_in_its_own_tenant(stack_factory):
    stack = stack_factory(**two_tenants())
    s, web = stack.settings, StackHttp(stack)
    web.model_fault(status=400, times=None)
    repo = f"{SHARED_OWNER}/api"
    httpx.post(f"{web.forge}/_sim/pulls/{repo}/44", json={"head_sha": "cd" * 20}).raise_for_status()
    assert web.send_opened(repo, 44, source=BETA_SOURCE).status_code == 202
    [failed] = wait_for_runs(s, timeout=60)
    assert (failed.status, failed.work_key) == ("failed", f"beta/github:{repo}#44:review")
    engine = make_engine(s.ledger_url())
    [letter] = DeadLetters(engine).list()
    assert (letter.owner, letter.reason, letter.tenant) == ("platform-oncall", "model-error: ModelRequestRejected",
                                                            "beta")

    httpx.delete(f"{web.model}/_sim/faults").raise_for_status()
    # dana acts in acme and beta: the retry must name the letter's tenant (beta), not the default source's (acme).
    retried = subprocess.run([sys.executable, str(s.base_dir / "starter.py"), "dlq", "retry", letter.id,
                              "--reason", "provider fixed the schema"],
                             env={**stack.env, "SLUICEGATE_ACTOR_TOKEN": TOKENS["dana"]},
                             capture_output=True, text=True, timeout=60)
    assert retried.returncode == 0, retried.stdout + retried.stderr
    [done] = wait_for_runs(s, timeout=60)
    assert (done.status, done.work_key, done.generation) == ("done", failed.work_key, failed.generation + 1)
    assert DeadLetters(engine).get(letter.id).status == "retried"
    [receipt] = [r for r in list_receipts(engine, ReceiptFilter(work_key=failed.work_key, outcome="accept"))
                 if r.trigger_kind == "manual"]
    assert (receipt.tenant, receipt.actor) == ("beta", "dana") and f"dlq retry {letter.id}" in receipt.message
    engine.dispose()
    assert len(web.comments()) == 1
