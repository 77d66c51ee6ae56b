"""Admission sets Temporal's Priority on the run: priority key by trigger family, fairness by tenant.

Runs on the time-skipping server and (``make test``'s second pass) on the dev server, whose
``matching.enableFairness`` is on. Nothing runs the workflow here: it is described and terminated.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from intake.decision import IntakeDecision, Outcome
from intake.envelope import Envelope, PullRequestRef, TriggerKind, WorkCandidate
from intake.ports import Admission
from sluicegate.temporal.admitter import TemporalAdmitter
from sluicegate.config.settings import load_settings


async def test_manual_and_scheduled_runs_get_their_priority_and_the_tenant_as_fairness_key(
        temporal_env, task_queue, request):
    if request.config.getoption("--temporal-env") == "time-skipping":
        pytest.skip("the time-skipping test server does not keep Priority; make test's dev-server pass runs this")
    settings = load_settings(env={"TEMPORAL_TASK_QUEUE": task_queue})
    admitter = TemporalAdmitter(temporal_env.client, settings, search_attributes=False)
    expected = settings.capacity.priority_by_trigger
    for kind, tenant in ((TriggerKind.MANUAL, "acme"), (TriggerKind.SCHEDULE, "globex")):
        number = 1000 + len(tenant)
        key = f"{tenant}/github:{tenant}/api#{number}:review:{uuid.uuid4().hex[:6]}"
        envelope = Envelope(str(uuid.uuid4()), "manual" if kind == TriggerKind.MANUAL else "scan:nightly",
                            "pull_request.opened", None, None, datetime.now(UTC), kind, tenant, actor="alice")
        candidate = WorkCandidate(key, PullRequestRef(tenant, "api", number), "sha1", tenant)
        decision = IntakeDecision(Outcome.ACCEPT, "admitted", "", uuid.uuid4().hex, key, "sha1", 1)
        workflow_id, _ = await admitter.admit(Admission(decision, envelope, candidate))
        handle = temporal_env.client.get_workflow_handle(workflow_id)
        info = (await handle.describe()).raw_description.workflow_execution_info
        assert (info.priority.priority_key, info.priority.fairness_key) == (expected[str(kind)], tenant)
        await handle.terminate("priority test: no worker runs it")
