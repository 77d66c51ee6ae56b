"""Operator CLI: manual triggers, receipts, ledger schema.

    python starter.py trigger --repo acme/api --pr 44 --reason "webhook lost"   # token: $SLUICEGATE_ACTOR_TOKEN
    python starter.py receipts --work-key 'github:acme/api#42:review'
    python starter.py ledger migrate

A manual trigger goes through the webhook API's intake like any webhook: the same
freshness, policy and dedupe checks, and a receipt. Nothing here starts a workflow directly.
"""

from __future__ import annotations

import uuid
from typing import Optional

import httpx
import typer
from rich.console import Console
from rich.table import Table
from sqlmodel import Session, col, select

import ledger
from ledger import Receipt
from sluicegate.config import load_settings
from sluicegate.trigger_cli import goal_app, schedule_app

app = typer.Typer(help=__doc__.splitlines()[0], no_args_is_help=True)
ledger_app = typer.Typer(help="Ledger schema.", no_args_is_help=True)
app.add_typer(ledger_app, name="ledger")
app.add_typer(schedule_app, name="schedule")
app.add_typer(goal_app, name="goal")
console = Console()


@app.command()
def trigger(
    repo: str = typer.Option(..., help="owner/repo"),
    pr: int = typer.Option(..., help="pull request number"),
    reason: str = typer.Option(..., help="why a person asked for this run (recorded)"),
    actor_token: str = typer.Option(..., envvar="SLUICEGATE_ACTOR_TOKEN", help="a configured actor's token"),
    version: Optional[str] = typer.Option(None, help="head sha to review; default: the current head"),
    request_id: Optional[str] = typer.Option(None, help="idempotency key; re-sending it is a duplicate"),
    api_url: Optional[str] = typer.Option(None, help="webhook API base URL; default from temporal-dev.yaml"),
) -> None:
    """Submit a manual review trigger through intake and print its receipt."""
    s = load_settings()
    base = api_url or f"http://{s.webhook_api.host}:{s.webhook_api.port}"
    body = {"repository": repo, "number": pr, "reason": reason, "input_version": version,
            "request_id": request_id or f"manual-{uuid.uuid4()}"}
    try:
        r = httpx.post(f"{base}/v1/triggers/manual", json=body, headers={"Authorization": f"Bearer {actor_token}"},
                       timeout=30)
    except httpx.HTTPError as exc:
        console.print(f"[red]cannot reach the webhook API at {base}: {exc}[/] (is the stack up? `make up`)")
        raise typer.Exit(2) from None
    answer = r.json()
    console.print_json(data=answer)
    raise typer.Exit(0 if r.status_code < 400 else 1)


@app.command()
def receipts(
    work_key: Optional[str] = typer.Option(None), outcome: Optional[str] = typer.Option(None),
    reason: Optional[str] = typer.Option(None), delivery: Optional[str] = typer.Option(None),
    limit: int = typer.Option(50),
) -> None:
    """List receipts, newest first."""
    s = load_settings()
    engine = ledger.make_engine(s.ledger_url())
    query = select(Receipt).order_by(col(Receipt.created_at).desc()).limit(limit)
    for column, value in ((Receipt.work_key, work_key), (Receipt.outcome, outcome), (Receipt.reason, reason),
                          (Receipt.delivery_id, delivery)):
        if value is not None:
            query = query.where(column == value)
    with Session(engine) as session:
        rows = session.exec(query).all()
    engine.dispose()
    table = Table(title=f"receipts ({len(rows)})")
    for name in ("time", "source", "delivery", "work key", "version", "gen", "outcome", "reason", "workflow"):
        table.add_column(name, overflow="fold")
    for r in rows:
        table.add_row(r.created_at.strftime("%H:%M:%S"), r.source, (r.delivery_id or "-")[:13], r.work_key or "-",
                      (r.input_version or "-")[:10], str(r.generation or "-"), r.outcome, r.reason,
                      r.workflow_id or "-")
    console.print(table)


@ledger_app.command("migrate")
def migrate() -> None:
    """Upgrade the ledger schema to the latest revision."""
    url = load_settings().ledger_url()
    console.print(f"ledger at revision {ledger.upgrade(url)} ({ledger.normalize_url(url).split('@')[-1]})")


if __name__ == "__main__":
    app()
