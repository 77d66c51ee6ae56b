"""The end-to-end comparison's bare work orders and its verification (``bench/_e2e.py``): every delivery
admitted and recorded in the ledger, every bare start made, every workflow running in Temporal."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from datetime import UTC, datetime

from sqlalchemy import func, select

import ledger
from bench._common import BenchError, Comparison, now, signed_pull_request
from intake.decision import IntakeDecision, Outcome, Reason
from intake.github import parse_github_delivery
from intake.ports import Admission
from ledger import Receipt, WorkVersion
from workflows.contracts import AGENT_WORKFLOW


def bare_admission(settings, secret: str, owner: str, repo: str, n: int, sha: str) -> Admission:
    """An admission as intake would make it for this delivery; the baseline sends the admitter's own
    request for it (``TemporalAdmitter.start_request``: workflow id, argument, work order, search
    attributes, priority and fairness, summary, memo), so both sides make the same Temporal request."""
    headers, body = signed_pull_request(secret, owner, repo, n, sha)
    parsed = parse_github_delivery(headers, body, source="github", tenant=settings.sources["github"].tenant,
                                   secrets=[secret], received_at=datetime.now(UTC))
    cand = parsed.candidate
    decision = IntakeDecision(Outcome.ACCEPT, str(Reason.ADMITTED), "bench", uuid.uuid4().hex, cand.work_key,
                              sha, generation=1)
    return Admission(decision, parsed.envelope, cand)


async def verify(cmp: Comparison, settings, client, key_prefix: str, sent: int, outcomes: Counter) -> None:
    admitted = outcomes.get("202 accept/admitted", 0)
    started = outcomes.get("bare started", 0)
    engine = ledger.make_engine(settings.ledger_url())
    try:
        with engine.connect() as conn:
            ours = Receipt.work_key.like(key_prefix + "%")
            accepts = conn.execute(select(func.count()).select_from(Receipt).where(
                ours, Receipt.outcome == str(Outcome.ACCEPT))).scalar_one()
            with_wf = conn.execute(select(func.count()).select_from(Receipt).where(
                ours, Receipt.outcome == str(Outcome.ACCEPT), Receipt.workflow_id.is_not(None))).scalar_one()
            others = conn.execute(select(func.count()).select_from(Receipt).where(
                ours, Receipt.outcome != str(Outcome.ACCEPT))).scalar_one()
            versions = conn.execute(select(func.count()).select_from(WorkVersion).where(
                WorkVersion.work_key.like(key_prefix + "%"), WorkVersion.status == "admitted")).scalar_one()
    finally:
        engine.dispose()
    running = await running_workflows(client, admitted + started)
    cmp.checks.append(f"ledger: {accepts} accept receipts ({with_wf} with a workflow id, {others} other outcomes), "
                      f"{versions} work versions admitted; expected {admitted} (of {sent} sent)")
    cmp.checks.append(f"temporal: {running} AgentLoop workflows running; expected {admitted} admitted + "
                      f"{started} bare = {admitted + started}")
    problems = [f"{k} x{v}" for k, v in outcomes.items() if k not in ("202 accept/admitted", "bare started")]
    if admitted != sent or started != sent:
        problems.append(f"{admitted} admitted and {started} bare starts of {sent} each")
    if not accepts == with_wf == versions == admitted or others:
        problems.append("ledger counts do not match the admitted answers")
    if running != admitted + started:
        problems.append(f"{running} running workflows, expected {admitted + started}")
    if problems:
        raise BenchError("verification failed: " + "; ".join(problems))


async def running_workflows(client, expected: int, workflow_type: str = AGENT_WORKFLOW, timeout: float = 30.0) -> int:
    """Running workflows of a type on the (fresh) dev server; visibility lags, so poll a while."""
    query = f'WorkflowType = "{workflow_type}" AND ExecutionStatus = "Running"'
    deadline = now() + timeout
    while True:
        count = (await client.count_workflows(query)).count
        if count == expected or now() > deadline:
            return count
        await asyncio.sleep(0.5)
