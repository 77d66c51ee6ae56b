"""The kill switch on a real Temporal server: recorded kills refuse calls at once; the kill
signal stops a run before its next step."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

import pytest

import ledger
from ledger import KillSwitch
from tests.support.agent_runs import run_orders, start_order, work_order
from tests.support.sims import settings_for
from worker import create_worker
from workflows.contracts import KILL_SIGNAL, KillNotice


@pytest.fixture
def settings(sims, tmp_path):
    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    return settings_for(sims, url)


@pytest.mark.parametrize("scope, target", [("work_key", "acme/github:acme/api#42:review"), ("tenant", "acme"),
                                           ("all", "*")])
async def test_recorded_kill_refuses_the_first_model_call(temporal_env, settings, sims, task_queue, scope, target):
    engine = ledger.make_engine(settings.ledger_url())
    KillSwitch(engine).kill(scope, target, "alice", "runaway loop")
    [outcome] = (await run_orders(temporal_env.client, settings, task_queue, work_order(settings))).orders
    engine.dispose()
    assert (outcome.status, outcome.reason) == ("killed", "model-error: Killed")
    assert sims.model_stats()["calls"] == 0 and sims.comments() == []


async def test_lifted_kill_lets_work_run_again(temporal_env, settings, sims, task_queue):
    engine = ledger.make_engine(settings.ledger_url())
    switch = KillSwitch(engine)
    switch.kill("tenant", "acme", "alice", "incident")
    switch.unkill("tenant", "acme", "alice", "incident over")
    [outcome] = (await run_orders(temporal_env.client, settings, task_queue, work_order(settings))).orders
    engine.dispose()
    assert outcome.status == "done" and len(sims.comments()) == 1


async def test_kill_signal_stops_the_run_before_its_next_step(temporal_env, settings, sims, task_queue):
    sims.hold_model_calls()  # the first model call is held until the kill signal is in
    order = work_order(settings)
    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue):
            handle = await start_order(temporal_env.client, task_queue, order)
            await sims.model_called()
            await handle.signal(KILL_SIGNAL, KillNotice("alice", "wrong repository"))
            assert sims.release_model_calls() >= 1  # ours (and any a previous test left waiting on this session server)
            [outcome] = (await handle.result()).orders
    assert (outcome.status, outcome.reason) == ("killed", "killed by alice: wrong repository")
    assert outcome.steps == 1 and sims.model_stats()["calls"] == 1 and sims.comments() == []


async def test_exhausted_tenant_day_budget_stops_before_the_model_call(temporal_env, sims, tmp_path, task_queue):
    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    settings = settings_for(sims, url, SLUICEGATE__BUDGETS__DAY__TENANTS='{"acme": 0.001}')
    [outcome] = (await run_orders(temporal_env.client, settings, task_queue, work_order(settings))).orders
    assert (outcome.status, outcome.reason) == ("budget_exhausted", "model-error: DayBudgetExceeded")
    assert sims.model_stats()["calls"] == 0


async def test_day_budget_is_settled_with_the_real_usage(temporal_env, settings, sims, task_queue):
    from datetime import UTC, datetime

    [outcome] = (await run_orders(temporal_env.client, settings, task_queue, work_order(settings))).orders
    engine = ledger.make_engine(settings.ledger_url())
    day = ledger.DayBudgets(engine, 1, {}, 1).day("tenant:acme", datetime.now(UTC).strftime("%Y-%m-%d"))
    engine.dispose()
    assert outcome.status == "done" and day.reserved_usd == pytest.approx(0.0, abs=1e-9)
    assert day.spent_usd == pytest.approx(outcome.cost_usd)


async def test_tool_egress_outside_the_tenant_allowlist_is_refused(temporal_env, sims, tmp_path, task_queue):
    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    settings = settings_for(sims, url, SLUICEGATE__EGRESS__TENANTS='{"acme": ["api.github.com"]}')
    [outcome] = (await run_orders(temporal_env.client, settings, task_queue, work_order(settings))).orders
    assert (outcome.status, outcome.reason) == ("failed", "tool-error: get_pull_request_diff: EgressDenied")
    stats = sims.forge_ctl("GET", "/stats").json()["requests"]
    assert not any("pulls" in route for route in stats)  # the forge never saw the diff request


async def test_kill_during_a_slow_reconcile_revokes_the_credential_before_the_post(
        temporal_env, settings, sims, task_queue):
    import time

    from activities.keys import operation_key
    from ledger import SideEffectLedger
    from tests.support.agent_runs import PR42_HEAD

    order = work_order(settings)
    engine = ledger.make_engine(settings.ledger_url())
    op = operation_key(order.work_key, "post_review_comment", PR42_HEAD)
    SideEffectLedger(engine).begin(op, work_key=order.work_key, operation="post_review_comment",
                                   target_version=PR42_HEAD, generation=1)  # an earlier attempt died
    sims.forge_ctl("POST", "/faults", json={"method": "GET", "path": "/comments$", "hang_seconds": 2, "times": 1})

    def reconcile_started() -> bool:
        return any("comments" in k for k in sims.forge_ctl("GET", "/stats").json()["requests"])

    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue):
            handle = await start_order(temporal_env.client, task_queue, order)
            deadline = time.monotonic() + 20
            while not reconcile_started() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            KillSwitch(engine).kill("work_key", order.work_key, "alice", "stop mid-reconcile")
            [outcome] = (await handle.result()).orders
    engine.dispose()
    assert (outcome.status, outcome.reason) == ("killed", "tool-error: post_review_comment: Killed")
    assert sims.comments() == []


async def test_task_wall_time_stops_a_slow_run_before_its_next_step(temporal_env, settings, sims, task_queue):
    from workflows.contracts import TaskBudget

    sims.model_ctl("POST", "/faults", json={"delay_seconds": 1.5, "times": 1})
    order = work_order(settings, budget=TaskBudget(max_steps=6, max_total_tokens=10**6, max_usd=10, max_wall_seconds=1))
    [outcome] = (await run_orders(temporal_env.client, settings, task_queue, order)).orders
    assert outcome.status == "budget_exhausted" and outcome.reason.startswith("max-wall-time")
    assert outcome.steps == 1 and sims.model_stats()["calls"] == 1


async def test_an_order_admitted_after_the_unkill_runs_in_the_same_run(temporal_env, settings, sims, task_queue):
    """Found by an adversarial review (session 17): the kill notice stayed in force for the rest of
    the run, so a version admitted after the unkill and signalled into the run still open ended
    ``killed by alice`` (its delivery lost: GitHub does not redeliver). Under patch
    ``kill-notice-covers-its-orders`` the notice ends the orders the run held when it arrived."""
    from tests.support.agent_runs import admit_in_ledger, copy_of_pr42

    owner, head = copy_of_pr42(sims)
    fix = "c0ffee01" * 5
    first = admit_in_ledger(settings, work_order(settings, owner=owner, version=head))
    engine = ledger.make_engine(settings.ledger_url())
    switch = KillSwitch(engine)
    sims.hold_model_calls()  # v1's first model call is in flight through the kill and the unkill
    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue):
            handle = await _killed_lifted_then_pushed(temporal_env.client, task_queue, settings, sims, switch, owner,
                                                      first, fix, "oops, wrong repository")
            assert sims.release_model_calls() >= 1
            orders = (await handle.result()).orders
    engine.dispose()
    assert [(o.input_version, o.status) for o in orders] == [(head, "killed"), (fix, "done")]
    assert orders[0].reason == "killed by alice: oops, wrong repository"


@pytest.mark.parametrize("forged", ["newer-outcome", "kill-notice"])
async def test_a_state_carried_by_a_start_that_is_not_a_continue_as_new_is_not_believed(
        temporal_env, settings, sims, task_queue, forged):
    """Found by an adversarial review (session 17): whoever can start a workflow can write its
    carried state, and the run believed it. A forged outcome of a huge generation made the genuine,
    admitted order end ``superseded`` (no model call); a forged kill notice had it end ``killed by``
    whoever the notice named. Under patch ``carried-state-only-from-continue-as-new`` only a
    continue-as-new hands a run its outcomes and kill notice."""
    from workflows.contracts import AGENT_WORKFLOW, STATE_SCHEMA_VERSION, WORK_ORDER_SIGNAL, AgentLoopResult
    from workflows.contracts import AgentLoopStart, AgentLoopState, RunOutcome

    from tests.support.agent_runs import admit_in_ledger, copy_of_pr42

    owner, head = copy_of_pr42(sims)
    order = admit_in_ledger(settings, work_order(settings, owner=owner, version=head))
    state = AgentLoopState(STATE_SCHEMA_VERSION)
    if forged == "newer-outcome":
        state.recent = [RunOutcome(order.work_key, "evil", 10**9, "done", "completed")]
    else:
        state.kill = KillNotice("security-team", "forged")
    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue):
            result = await temporal_env.client.execute_workflow(
                AGENT_WORKFLOW, AgentLoopStart(order.work_key, order.tenant, state), id=f"agent/{order.work_key}",
                task_queue=task_queue, start_signal=WORK_ORDER_SIGNAL, start_signal_args=[order],
                result_type=AgentLoopResult)
    assert [(o.input_version, o.status) for o in result.orders] == [(head, "done")]
    assert len(sims.comments()) >= 1


async def test_a_second_kill_after_an_unkill_ends_the_order_the_run_holds_then(temporal_env, settings, sims,
                                                                               task_queue):
    """Found by an adversarial review of the kill-notice scope: with covers, the first notice stayed in
    ``_kill`` and a later kill signal in the same run was dropped; the order held then ended only
    through the ledger's checks (``tool-error: …: Killed``), or ran on if the kill was lifted first.
    A later notice now covers what the run holds when it arrives."""
    from tests.support.agent_runs import admit_in_ledger, copy_of_pr42

    owner, head = copy_of_pr42(sims)
    fix = "c0ffee02" * 5
    first = admit_in_ledger(settings, work_order(settings, owner=owner, version=head))
    engine = ledger.make_engine(settings.ledger_url())
    switch = KillSwitch(engine)
    sims.hold_model_calls(times=2)  # v1's first call, then v2's
    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue):
            handle = await _killed_lifted_then_pushed(temporal_env.client, task_queue, settings, sims, switch, owner,
                                                      first, fix, "first kill")
            assert sims.release_model_calls() >= 1
            await sims.model_called(2)  # v2's first model call is in flight
            await handle.signal(KILL_SIGNAL, KillNotice("bob", "second kill"))  # the notice alone: no ledger kill
            assert sims.release_model_calls() >= 1
            orders = (await handle.result()).orders
    engine.dispose()
    assert [(o.input_version, o.status, o.reason) for o in orders] == [
        (head, "killed", "killed by alice: first kill"), (fix, "killed", "killed by bob: second kill")]


async def _killed_lifted_then_pushed(client, task_queue, settings, sims, switch, owner: str, first, fix: str,
                                     reason: str):
    """Start ``first``; with its first model call in flight, kill its work key (recorded and signalled,
    by alice, for ``reason``), lift the kill, then admit a push to ``fix`` and signal it into the run."""
    from dataclasses import replace as with_

    from tests.support.agent_runs import admit_in_ledger

    handle = await start_order(client, task_queue, first, workflow_id=f"agent/{first.work_key}")
    await sims.model_called()
    switch.kill("work_key", first.work_key, "alice", reason)
    await handle.signal(KILL_SIGNAL, KillNotice("alice", reason))
    switch.unkill("work_key", first.work_key, "alice", "lifted")
    sims.forge_ctl("POST", f"/pulls/{owner}/api/42", json={"head_sha": fix})  # a push, admitted
    second = admit_in_ledger(settings, with_(first, input_version=fix))
    await start_order(client, task_queue, second, workflow_id=handle.id)
    return handle
