"""``starter.py dlq list|show|retry``: the dead letters, read and acted on by their owners."""

from __future__ import annotations

import uuid
from typing import Optional

import httpx
import typer
from rich.console import Console
from rich.table import Table

import ledger
from intake.outbox import parse_target
from sluicegate.config import load_settings

dlq_app = typer.Typer(pretty_exceptions_show_locals=False, help="Dead letters: failed work with evidence and an owner.", no_args_is_help=True)
console = Console()


def _letters() -> ledger.DeadLetters:
    return ledger.DeadLetters(ledger.make_engine(load_settings().ledger_url()))


@dlq_app.command("list")
def list_letters(status: str = typer.Option("open", help="open | retried | resolved | all"),
                 owner: Optional[str] = typer.Option(None), limit: int = typer.Option(50)) -> None:
    """Dead letters, newest first."""
    rows = [r for r in _letters().list(None if status == "all" else status, limit) if not owner or r.owner == owner]
    table = Table(title=f"dead letters ({len(rows)})")
    for name in ("id", "when (UTC)", "owner", "status", "reason", "retries", "last error"):
        table.add_column(name, overflow="fold")
    for r in rows:
        table.add_row(r.id, r.created_at.strftime("%m-%d %H:%M:%S"), r.owner, r.status, r.reason, str(r.retries),
                      (r.last_error or "-")[:120])
    console.print(table)


@dlq_app.command("show")
def show(letter_id: str) -> None:
    """Everything recorded for one dead letter."""
    letter = _letters().get(letter_id)
    if letter is None:
        console.print(f"[red]no dead letter {letter_id!r}[/]")
        raise typer.Exit(1)
    console.print_json(data=letter.model_dump(mode="json"))
    console.print(f"more: python starter.py explain '{letter.work_key}'")


@dlq_app.command("retry")
def retry(letter_id: str, reason: str = typer.Option(..., help="why it should work now (recorded)"),
          actor_token: str = typer.Option(..., envvar="SLUICEGATE_ACTOR_TOKEN"),
          api_url: Optional[str] = typer.Option(None)) -> None:
    """Re-submit the failed version through intake (a manual trigger: same checks, a receipt)."""
    letters = _letters()
    letter = letters.get(letter_id)
    if letter is None or letter.status != "open":
        console.print(f"[red]no open dead letter {letter_id!r}[/]")
        raise typer.Exit(1)
    s = load_settings()
    target = parse_target(letter.work_key.split(":", 1)[1].rsplit(":", 1)[0])
    r = httpx.post(f"{api_url or f'http://{s.webhook_api.host}:{s.webhook_api.port}'}/v1/triggers/manual",
                   headers={"Authorization": f"Bearer {actor_token}"}, timeout=30,
                   json={"repository": f"{target.owner}/{target.repo}", "number": target.number,
                         "input_version": letter.input_version, "reason": f"dlq retry {letter_id}: {reason}",
                         "request_id": f"dlq-{uuid.uuid4()}"})
    answer = r.json()
    console.print_json(data=answer)
    if answer.get("outcome") != "accept":
        raise typer.Exit(1)
    letters.mark(letter_id, "retried", f"receipt {answer.get('receipt_id')}: {reason}")
