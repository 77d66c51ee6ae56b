"""Per-tenant model keys through the real stack: Temporal, the real worker wiring, both simulators
over HTTP. The model simulator requires each tenant's own key and records whose key each request
carried, so the test proves tenant A's run never used B's key (and B's never A's)."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from dataclasses import replace

import httpx
import pytest

import ledger
from intake.envelope import PullRequestRef
from intake.identity import review_work_key
from simulators import serve_in_thread
from simulators.model import create_model_app
from tests.support.agent_runs import PR42_HEAD, start_order, work_order
from tests.support.sims import MODEL_KEY, settings_for
from tests.support.tenants import two_tenants
from worker import create_worker

KEYS = {"acme": "sk-acme-own-model-key", "beta": "sk-beta-own-model-key"}


@pytest.fixture
def tenant_model(sims):
    with serve_in_thread(create_model_app(api_key=MODEL_KEY, tenant_keys=KEYS), name="model-sim-tenants") as srv:
        yield srv


async def test_two_tenants_runs_each_present_only_their_own_model_key(temporal_env, sims, tenant_model, tmp_path,
                                                                      task_queue):
    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    (tmp_path / "beta.key").write_text(KEYS["beta"])
    settings = settings_for(sims, url, **two_tenants(), OPENAI_BASE_URL=f"{tenant_model.base_url}/v1",
                            SLUICEGATE__MODEL__TENANTS=json.dumps({
                                "acme": {"api_key": KEYS["acme"]},
                                "beta": {"api_key_file": str(tmp_path / "beta.key")}}))
    acme = work_order(settings)
    beta = replace(acme, work_key=review_work_key("beta", PullRequestRef("acme", "api", 42)), tenant="beta")
    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue):
            handles = [await start_order(temporal_env.client, task_queue, o) for o in (acme, beta)]
            outcomes = [(await h.result()).orders[0] for h in handles]
    assert [(o.work_key, o.status, o.steps) for o in outcomes] == [
        (acme.work_key, "done", 3), (beta.work_key, "done", 3)]
    stats = httpx.get(f"{tenant_model.base_url}/_sim/stats").json()
    assert stats["keys_by_work"] == {acme.work_key: {"acme": 3}, beta.work_key: {"beta": 3}}
    assert stats["by_work"] == {f"{acme.work_key}@{PR42_HEAD}": 3, f"{beta.work_key}@{PR42_HEAD}": 3}
    assert len(sims.comments()) == 2
