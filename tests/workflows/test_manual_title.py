"""A trigger that carries no pull request title (manual, scan, a generic source) still shows the
pull request's title in the Temporal UI: intake takes it from the freshness read it already made
(``intake.freshness.titled``), cleaned by ``display_title``, with no extra forge read.

Real API server, real intake and ledger (SQLite and PostgreSQL), the forge simulator over HTTP and
the Temporal dev server (``--temporal-env local``: the time-skipping server keeps no summary).
"""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest

from tests.support.tenants import two_tenants
from tests.webhook_api.server import running_api

ROOMY = {f"SLUICEGATE__CAPACITY__{k}": "1000000" for k in (  # shared ledgers: never defer here
    "GLOBAL_ACTIVE_RUNS", "CONCURRENCY_LIMIT", "TENANT_DEFAULTS__MAX_ACTIVE_RUNS", "TENANT_DEFAULTS__ADMISSIONS_PER_DAY",
    "TENANT_DEFAULTS__RATE_PER_SECOND", "TENANT_DEFAULTS__BURST")}
CAROL = {"Authorization": "Bearer dev-admin-token-carol"}


async def test_a_manual_trigger_runs_under_the_title_the_forge_has(sims, temporal_env, ledger_url, request):
    if request.config.getoption("--temporal-env") == "time-skipping":
        pytest.skip("the time-skipping test server keeps no user metadata; make test's dev-server pass runs this")
    repo, sha = f"t{uuid.uuid4().hex[:10]}", uuid.uuid4().hex + "00000000"
    sims.forge_ctl("POST", f"/pulls/acme/{repo}/7",
                   json={"head_sha": sha, "state": "open", "title": "Fix the\nparser\x1b[31m"})
    with running_api(sims, temporal_env, ledger_url, **two_tenants(), **ROOMY) as (server, _):
        r = await asyncio.to_thread(
            httpx.post, f"{server.base_url}/v1/triggers/manual", timeout=30, headers=CAROL,
            json={"repository": f"acme/{repo}", "number": 7, "reason": "title test", "request_id": f"m-{uuid.uuid4()}"})
    assert r.status_code == 202, r.text
    assert r.json()["admitted"] is True
    reads = sims.forge_ctl("GET", "/stats").json()["by_repository"].get(f"acme/{repo}", 0)
    assert reads == 1  # the freshness read, and nothing more for the title
    handle = temporal_env.client.get_workflow_handle(r.json()["workflow_id"])
    try:
        desc = await handle.describe()
        assert await desc.static_summary() == f'acme/{repo}#7 "Fix the parser [31m" — acme, manual'
        memo = await desc.memo()
        assert (memo["title"], memo["trigger"], memo["pull_request"]) == ("Fix the parser [31m", "manual",
                                                                          f"acme/{repo}#7")
    finally:
        try:
            await handle.terminate("title test: the memo is all it checks")
        except Exception:  # noqa: BLE001 - already finished (a worker of another test ran it)
            pass
