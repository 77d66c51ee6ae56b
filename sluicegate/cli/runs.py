"""Operator commands on runs: ``starter.py cancel`` and ``starter.py reconcile`` (wired into starter.py).

``cancel`` records who asked and why in the ledger *first*, then cancels the work key's running
workflow with a reason naming that record, so the run's outcome says ``cancelled by <actor>``
(the ledger, not the text in Temporal, vouches for the actor). If nothing is running, or the
cancel RPC fails, the record says so and nothing else changed (exit 1). The key must start with
its tenant (``acme/github:acme/api#42:review``); the workflow cancelled is the one the ledger
recorded for the key — for a run admitted before the tenancy upgrade that is its old id
(``agent/github:…``), not one derived from today's key. ``reconcile`` runs one
pass of the run reconciler now (the ``sluicegate-reconcile-runs`` schedule does it every few
minutes); it needs the ledger and Temporal.
"""

from __future__ import annotations

import asyncio
import time
from typing import Optional

import typer
from rich.console import Console
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

import ledger
from intake.identity import parse_work_key, workflow_id_for
from sluicegate.config.settings import load_settings
from sluicegate.cli.json_output import JSON_OPTION, print_json
from workflows.cancellation import cancel_reason_text

console = Console()


def _tenant_first(work_key: str) -> str:
    try:
        tenant = parse_work_key(work_key).tenant
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    if tenant is None:
        raise typer.BadParameter("work keys start with their tenant: e.g. acme/github:acme/api#42:review")
    return work_key


def recorded_workflow_id(engine, work_key: str) -> str:
    """The workflow the ledger admitted ``work_key`` into, else the one today's key names."""
    from sqlmodel import Session

    with Session(engine) as s:
        item = s.get(ledger.WorkItem, work_key)
        recorded = item.workflow_id if item is not None else None
    return recorded or workflow_id_for(work_key)


async def _send_cancel(client: Client, workflow_id: str, reason: str) -> tuple[str, str | None, str | None]:
    """``(status, run id, error)`` for the ledger's record of the request."""
    try:
        desc = await client.get_workflow_handle(workflow_id).describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return "no-run", None, f"no workflow {workflow_id}"
        return "failed", None, str(err)
    if desc.status != WorkflowExecutionStatus.RUNNING:
        return "no-run", desc.run_id, f"its latest run is {desc.status.name if desc.status else 'unknown'}"
    try:
        await client.get_workflow_handle(workflow_id, run_id=desc.run_id).cancel(reason=reason)
    except RPCError as err:
        return "failed", desc.run_id, str(err)
    return "sent", desc.run_id, None


async def _closed_status(client: Client, workflow_id: str, run_id: str | None, timeout: float) -> str:
    handle = client.get_workflow_handle(workflow_id, run_id=run_id)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = (await handle.describe()).status
        if status != WorkflowExecutionStatus.RUNNING:
            return status.name if status else "unknown"
        await asyncio.sleep(0.5)
    return "still RUNNING"


def cancel_cmd(
    work_key: str = typer.Argument(..., help="the work key whose run to cancel (acme/github:acme/api#42:review)",
                                   callback=_tenant_first),
    actor: str = typer.Option(..., help="who is cancelling it (recorded)"),
    reason: str = typer.Option(..., help="why (recorded)"),
    wait_seconds: float = typer.Option(60.0, help="wait this long for the run to close (0: do not wait)"),
) -> None:
    """Cancel a work key's run: recorded first, then its workflow is cancelled.

    Its current and pending orders end `cancelled` (no dead letter); a manual trigger runs the
    version again, webhooks and scans for the same version do not."""
    from sluicegate.temporal.client import connect

    settings = load_settings()
    engine = ledger.make_engine(settings.ledger_url())
    workflow_id = recorded_workflow_id(engine, work_key)
    requests = ledger.CancelRequests(engine)
    request = requests.record(work_key, workflow_id, actor, reason)
    console.print(f"cancel request {request.id} recorded: {work_key} by {actor}: {reason}")

    async def run() -> tuple[str, str | None, str | None, str | None]:
        client = await connect(settings)
        status, run_id, error = await _send_cancel(client, workflow_id, cancel_reason_text(request.id, actor, reason))
        closed = None
        if status == "sent" and wait_seconds > 0:
            closed = await _closed_status(client, workflow_id, run_id, wait_seconds)
        return status, run_id, error, closed

    try:
        status, run_id, error, closed = asyncio.run(run())
    except Exception as exc:  # noqa: BLE001 - Temporal unreachable: say so, keep the record honest
        status, run_id, error, closed = "failed", None, repr(exc), None
    requests.mark(request.id, status, run_id, error)
    engine.dispose()
    if status != "sent":
        console.print(f"[red]not cancelled ({status}): {error}[/]")
        raise typer.Exit(1)
    console.print(f"cancel sent to {workflow_id} run {run_id}" + (f"; the run closed {closed}" if closed else ""))
    if closed == "still RUNNING":
        console.print("[yellow]the run has not closed yet: is a worker polling? (runbook: A run is stuck)[/]")
    elif closed not in (None, "CANCELED"):
        raise typer.Exit(1)


def reconcile_cmd(
    grace_seconds: Optional[float] = typer.Option(None, help="default: maintenance.reconcile_grace_seconds"),
    limit: int = typer.Option(200, help="versions looked at, oldest first"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Give versions whose run closed without an outcome their real one, now.

    failed, terminated, timed_out (each with a dead letter) or cancelled; the
    sluicegate-reconcile-runs schedule does the same every few minutes."""
    from activities.run_reconciler import RunReconciler
    from sluicegate.temporal.client import connect
    from workflows.stranded import ReconcileRequest

    settings = load_settings()
    grace = settings.maintenance.reconcile_grace_seconds if grace_seconds is None else grace_seconds

    async def run():
        engine = ledger.make_engine(settings.ledger_url())
        try:
            store = ledger.WorkStore(engine, settings.dead_letters.owner_for)
            return await RunReconciler(await connect(settings), store).reconcile(ReconcileRequest(grace, limit))
        finally:
            engine.dispose()

    result = asyncio.run(run())
    if as_json:
        print_json(result)
        return
    for line in result.settled:
        console.print(f"settled {line}")
    console.print(f"{len(result.settled)} settled, {result.open} still running, "
                  f"{result.raced} recorded by their run meanwhile")
