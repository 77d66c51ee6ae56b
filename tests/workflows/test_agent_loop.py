"""The agent workflow on a real Temporal server with the real activities and simulators."""

from __future__ import annotations

import httpx
import pytest

import ledger

from activities.keys import marker_for, operation_key
from activities.markers import CommentMarks
from ledger import BeginState, SideEffectLedger, make_engine
from tests.support.agent_runs import PR42_HEAD, accept_versions, run_orders, work_order
from tests.support.sims import settings_for
from workflows.budget import cost_usd
from workflows.contracts import TaskBudget


@pytest.fixture
def settings(sims, tmp_path):
    """Fresh simulators and a fresh ledger per test: operation keys repeat across tests."""
    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    return settings_for(sims, url, SLUICEGATE__ACTIVITIES__MODEL_MAX_ATTEMPTS="3")


async def test_review_run_posts_one_comment_and_accounts_tokens(temporal_env, settings, sims, task_queue):
    # The time-skipping server has no custom search attributes; the dev server does.
    order = work_order(settings, search_attributes=not temporal_env.supports_time_skipping)
    result = await run_orders(temporal_env.client, settings, task_queue, order)
    [outcome] = result.orders
    assert (outcome.status, outcome.steps) == ("done", 3)
    comments = sims.comments()
    assert len(comments) == 1
    op = operation_key(order.work_key, "post_review_comment", PR42_HEAD)
    assert marker_for(op) in comments[0]["body"] and outcome.operation_keys == [op]
    assert outcome.external_ids == [str(comments[0]["id"])]
    assert outcome.usage.input > 0 and outcome.usage.output > 0 and outcome.usage.reasoning > 0
    assert outcome.usage.cached_input > 0  # later steps resend the earlier conversation
    assert outcome.cost_usd == pytest.approx(cost_usd(outcome.usage, order.price))
    assert sims.model_stats()["by_work"] == {f"{order.work_key}@{PR42_HEAD}": 3}


async def test_rate_limited_model_call_is_retried(temporal_env, settings, sims, task_queue):
    sims.model_ctl("POST", "/faults", json={"status": 429, "times": 2, "retry_after": 1})
    result = await run_orders(temporal_env.client, settings, task_queue, work_order(settings))
    assert result.orders[0].status == "done"
    assert sims.model_stats()["by_status"] == {"429": 2, "200": 3}


async def test_server_errors_are_retried_up_to_the_cap(temporal_env, settings, sims, task_queue):
    sims.model_ctl("POST", "/faults", json={"status": 503, "times": None})
    result = await run_orders(temporal_env.client, settings, task_queue, work_order(settings))
    [outcome] = result.orders
    assert (outcome.status, outcome.reason) == ("failed", "model-error: ModelUnavailable")
    assert sims.model_stats()["calls"] == settings.activities.model_max_attempts == 3
    assert sims.comments() == []


@pytest.mark.parametrize("status", [400, 401, 403])
async def test_client_errors_are_not_retried(temporal_env, settings, sims, task_queue, status):
    sims.model_ctl("POST", "/faults", json={"status": status, "times": None})
    result = await run_orders(temporal_env.client, settings, task_queue, work_order(settings))
    [outcome] = result.orders
    assert (outcome.status, outcome.reason) == ("failed", "model-error: ModelRequestRejected")
    assert sims.model_stats()["calls"] == 1


async def test_budget_stops_before_the_next_model_call(temporal_env, settings, sims, task_queue):
    order = work_order(settings, budget=TaskBudget(max_steps=1, max_total_tokens=10**6, max_usd=10.0))
    [outcome] = (await run_orders(temporal_env.client, settings, task_queue, order)).orders
    assert outcome.status == "budget_exhausted" and outcome.reason.startswith("max-steps")
    assert sims.model_stats()["calls"] == 1 and sims.comments() == []


async def test_in_flight_comment_is_reconciled_not_posted_again(temporal_env, settings, sims, task_queue):
    order = work_order(settings)
    op = operation_key(order.work_key, "post_review_comment", PR42_HEAD)
    # A previous attempt got as far as the forge, then died before recording "done".
    engine = make_engine(settings.ledger_url())
    ledger = SideEffectLedger(engine)
    ledger.begin(op, work_key=order.work_key, operation="post_review_comment", target_version=PR42_HEAD,
                 generation=order.generation)
    marker = CommentMarks.from_forge_config(settings.forge).marker(op)  # posted as the bot, signed
    httpx.post(f"{sims.forge.base_url}/repos/acme/api/issues/42/comments", json={"body": f"earlier\n{marker}"},
               headers={"Authorization": "Bearer test-forge-token"}).raise_for_status()
    [outcome] = (await run_orders(temporal_env.client, settings, task_queue, order)).orders
    comments = sims.comments()
    assert outcome.status == "done" and len(comments) == 1
    entry = ledger.begin(op, work_key=order.work_key, operation="post_review_comment", target_version=PR42_HEAD,
                         generation=order.generation)
    assert (entry.state, entry.external_id) == (BeginState.DONE, str(comments[0]["id"]))
    engine.dispose()


async def test_resent_work_order_is_processed_once(temporal_env, settings, sims, task_queue):
    order = work_order(settings)
    result = await run_orders(temporal_env.client, settings, task_queue, order, order)
    assert len(result.orders) == 1 and len(sims.comments()) == 1


async def test_newer_version_supersedes_at_the_next_step_boundary(temporal_env, settings, sims, task_queue):
    from contextlib import AsyncExitStack

    from tests.support.agent_runs import start_order
    from worker import create_worker

    sims.hold_model_calls()  # the old order's first model call is held until the new order is in
    old = work_order(settings, generation=1)
    new = work_order(settings, version="5c1e6b2d9a8f4e3c7b0a1d2e3f405162738495a6", generation=2)
    sims.forge_ctl("POST", "/pulls/acme/api/42", json={"head_sha": new.input_version})
    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue):
            handle = await start_order(temporal_env.client, task_queue, old)
            await sims.model_called()  # the old order is inside its first model call
            await start_order(temporal_env.client, task_queue, new, workflow_id=handle.id)
            assert sims.release_model_calls() >= 1  # ours (and any a previous test left waiting on this session server)
            result = await handle.result()
    superseded, done = result.orders
    assert (superseded.status, superseded.generation, superseded.steps) == ("superseded", 1, 1)
    assert new.input_version in superseded.reason
    assert (done.status, done.generation) == ("done", 2)
    [comment] = sims.comments()
    assert marker_for(operation_key(new.work_key, "post_review_comment", new.input_version)) in comment["body"]


async def test_an_order_older_than_the_ledgers_generation_is_superseded_without_a_model_call(
        temporal_env, settings, sims, task_queue):
    order = work_order(settings, generation=1)
    accept_versions(settings, order.work_key, order.input_version, "newer-version")  # generation 2 is current
    [outcome] = (await run_orders(temporal_env.client, settings, task_queue, order)).orders
    assert (outcome.status, outcome.reason) == ("superseded", "superseded by newer-version (generation 2)")
    assert sims.model_stats()["calls"] == 0 and sims.comments() == []
    engine = make_engine(settings.ledger_url())
    letters = ledger.DeadLetters(engine).list()
    engine.dispose()
    assert letters == []  # no false dead letter


async def test_stale_generation_cannot_post(temporal_env, settings, sims, task_queue):
    """A newer admission committed while the order runs (after its claim) fences its post."""
    from contextlib import AsyncExitStack

    from tests.support.agent_runs import start_order
    from worker import create_worker

    order = work_order(settings, generation=1)
    accept_versions(settings, order.work_key, order.input_version)
    sims.hold_model_calls()  # the first model call is held until the newer admission is committed
    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue):
            handle = await start_order(temporal_env.client, task_queue, order)
            await sims.model_called()
            accept_versions(settings, order.work_key, "newer-version")
            assert sims.release_model_calls() >= 1  # ours (and any a previous test left waiting on this session server)
            [outcome] = (await handle.result()).orders
    # superseded, not failed (patch fenced-tool-call-is-superseded): a newer admission owns the work
    assert (outcome.status, outcome.reason) == (
        "superseded", "superseded: post_review_comment fenced out by a newer admission of the work")
    assert sims.comments() == []


async def test_forced_rerun_posts_its_review_again(temporal_env, settings, sims, task_queue):
    from dataclasses import replace

    first = work_order(settings, generation=1)
    await run_orders(temporal_env.client, settings, task_queue, first)
    again = replace(work_order(settings, generation=1), receipt_id="r2")  # a plain re-send: already done
    await run_orders(temporal_env.client, settings, task_queue, again)
    assert len(sims.comments()) == 1
    forced = replace(work_order(settings, generation=2), effect_discriminator="rerun-gen2")
    [outcome] = (await run_orders(temporal_env.client, settings, task_queue, forced)).orders
    assert outcome.status == "done" and len(sims.comments()) == 2


async def test_exhausted_retries_land_in_the_dead_letters_with_evidence(temporal_env, settings, sims, task_queue):
    sims.model_ctl("POST", "/faults", json={"status": 503, "times": None})
    order = work_order(settings)
    [outcome] = (await run_orders(temporal_env.client, settings, task_queue, order)).orders
    engine = make_engine(settings.ledger_url())
    [letter] = ledger.DeadLetters(engine).list()
    engine.dispose()
    assert (letter.work_key, letter.input_version, letter.status) == (order.work_key, PR42_HEAD, "open")
    assert letter.owner == settings.dead_letters.owner_for("acme", "github") == "acme-reviews-team"
    assert letter.retries == outcome.retries == settings.activities.model_max_attempts - 1
    assert "503" in letter.last_error and letter.reason == "model-error: ModelUnavailable"


async def test_task_retry_cap_stops_the_order_at_the_next_step(temporal_env, sims, tmp_path, task_queue):
    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    settings = settings_for(sims, url, SLUICEGATE__ACTIVITIES__MAX_TASK_RETRIES="1")
    sims.model_ctl("POST", "/faults", json={"status": 429, "times": 2, "retry_after": 0})
    [outcome] = (await run_orders(temporal_env.client, settings, task_queue, work_order(settings))).orders
    assert outcome.status == "failed" and outcome.reason.startswith("retry-cap: 2 retries over 1")
    assert outcome.steps == 1 and sims.model_stats()["by_status"] == {"429": 2, "200": 1}


async def test_continue_as_new_between_orders_carries_the_versioned_state(temporal_env, settings, sims, task_queue):
    from contextlib import AsyncExitStack

    from tests.support.agent_runs import start_order
    from worker import create_worker
    from workflows.contracts import AGENT_WORKFLOW, WORK_ORDER_SIGNAL, AgentLoopResult, AgentLoopStart

    first = work_order(settings, generation=1)
    second = work_order(settings, version="5c1e6b2d9a8f4e3c7b0a1d2e3f405162738495a6", generation=2)
    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue):
            handle = await temporal_env.client.start_workflow(
                AGENT_WORKFLOW, AgentLoopStart(first.work_key, "acme", max_orders_per_run=1),
                id=f"agent/can-{task_queue}", task_queue=task_queue, start_signal=WORK_ORDER_SIGNAL,
                start_signal_args=[first], result_type=AgentLoopResult)
            await start_order(temporal_env.client, task_queue, second, workflow_id=handle.id)
            result = await handle.result()  # follows the continue-as-new chain
            first_run = temporal_env.client.get_workflow_handle(handle.id, run_id=handle.result_run_id)
            last_event = (await first_run.fetch_history()).events[-1]
    statuses = [(o.generation, o.status) for o in result.orders]
    assert statuses in ([(1, "superseded"), (2, "done")], [(1, "done"), (2, "done")])
    # The first run handed the second order over by continue-as-new.
    assert last_event.HasField("workflow_execution_continued_as_new_event_attributes")


async def test_a_state_from_a_newer_schema_is_refused_not_misread(temporal_env, settings, task_queue):
    from contextlib import AsyncExitStack

    from temporalio.client import WorkflowFailureError

    from worker import create_worker
    from workflows.contracts import AGENT_WORKFLOW, AgentLoopResult, AgentLoopStart, AgentLoopState

    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue):
            with pytest.raises(WorkflowFailureError) as failed:
                await temporal_env.client.execute_workflow(
                    AGENT_WORKFLOW, AgentLoopStart("acme/github:acme/api#42:review", "acme", AgentLoopState(99)),
                    id=f"agent/future-{task_queue}", task_queue=task_queue, result_type=AgentLoopResult)
    assert failed.value.cause.type == "StateSchemaUnsupported" and "newer" in str(failed.value.cause)


async def test_a_model_answer_asking_for_too_many_tool_calls_runs_only_the_cap(temporal_env, sims, tmp_path, task_queue):
    """Found by an adversarial review (session 17): the model (or a prompt-injected diff) chose how
    many tool calls one answer held, and each was an activity in the run's history; the step cap did
    not bound one order's history. Under patch ``tool-calls-per-step-cap`` the first
    ``activities.max_tool_calls_per_step`` run and the rest are answered ``not run``."""
    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    settings = settings_for(sims, url, SLUICEGATE__ACTIVITIES__MAX_TOOL_CALLS_PER_STEP="2")
    sims.model_ctl("POST", "/faults", json={"repeat_tool_calls": 5, "times": 1})  # the first answer fans out
    reads_before = sims.forge_ctl("GET", "/stats").json()["total"]
    [outcome] = (await run_orders(temporal_env.client, settings, task_queue, work_order(settings))).orders
    assert (outcome.status, outcome.reason) == ("done", "completed")
    assert sims.forge_ctl("GET", "/stats").json()["total"] - reads_before == 2 + 1  # 2 diff reads, then the post
    assert len(sims.comments()) == 1


async def test_a_tool_call_fenced_out_by_a_newer_admission_ends_the_order_superseded(temporal_env, sims, tmp_path,
                                                                                     task_queue):
    """Found by an adversarial review of session 17's fence: a newer admission committed while an
    order ran (a push, not yet signalled into the run) made its comment post ``FencedOut``, and the
    order ended ``failed`` with a dead letter for an obsolete version. Under patch
    ``fenced-tool-call-is-superseded`` it ends ``superseded``, as at a step boundary: nobody is paged."""
    from ledger import DeadLetters, make_engine
    from tests.support.agent_runs import accept_versions, admit_in_ledger, copy_of_pr42

    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    settings = settings_for(sims, url)
    owner, head = copy_of_pr42(sims)
    order = admit_in_ledger(settings, work_order(settings, owner=owner, version=head))
    sims.hold_model_calls()  # the first model call waits while the push is admitted
    from contextlib import AsyncExitStack

    from tests.support.agent_runs import start_order
    from worker import create_worker

    async with AsyncExitStack() as stack:
        async with await create_worker(temporal_env.client, settings, stack, task_queue):
            handle = await start_order(temporal_env.client, task_queue, order)
            await sims.model_called()
            accept_versions(settings, order.work_key, "c0ffee03" * 5)  # a push: accepted, not signalled yet
            assert sims.release_model_calls() >= 1
            [outcome] = (await handle.result()).orders
    assert outcome.status == "superseded" and "fenced out" in outcome.reason, outcome
    engine = make_engine(url)
    assert [d for d in DeadLetters(engine).list(status=None, limit=100) if d.work_key == order.work_key] == []
    engine.dispose()
    assert sims.comments() == []
