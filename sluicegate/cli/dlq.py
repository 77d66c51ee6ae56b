"""``starter.py dlq list|show|retry|resolve``: the dead letters, read and acted on by their owners."""

from __future__ import annotations

from typing import Optional

import httpx
import typer
from rich.console import Console
from rich.table import Table

import ledger
from intake.actors import actor_for_token
from sluicegate.config.settings import load_settings
from sluicegate.cli.json_output import JSON_OPTION, print_json
from sluicegate.operations.actions import resolved_note, retried_note, retry_took, retry_trigger

dlq_app = typer.Typer(pretty_exceptions_show_locals=False, help="Dead letters: failed work with evidence and an owner.", no_args_is_help=True)
console = Console()


def _letters() -> ledger.DeadLetters:
    return ledger.DeadLetters(ledger.make_engine(load_settings().ledger_url()))


@dlq_app.command("list")
def list_letters(status: str = typer.Option("open", help="open | retried | resolved | all"),
                 owner: Optional[str] = typer.Option(None), limit: int = typer.Option(50),
                 as_json: bool = JSON_OPTION) -> None:
    """Dead letters, newest first."""
    rows = [r for r in _letters().list(None if status == "all" else status, limit) if not owner or r.owner == owner]
    if as_json:
        print_json(rows)
        return
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
    """Re-submit the failed version through intake (a manual trigger: same checks, a receipt).

    It runs in the letter's tenant (its work key's), so the actor needs a role there, and the
    tenant's scope, budget, forge credentials and egress list apply — never those of whichever
    source happens to be the default (``sluicegate/operations/actions.py``, shared with the console)."""
    letters = _letters()
    letter = letters.get(letter_id)
    if letter is None or letter.status != "open":
        console.print(f"[red]no open dead letter {letter_id!r}[/]")
        raise typer.Exit(1)
    s = load_settings()
    try:
        trigger = retry_trigger(letter, reason)
    except ValueError as exc:
        console.print(f"[red]dead letter {letter_id} has no usable work key: {exc}[/]")
        raise typer.Exit(1) from None
    r = httpx.post(f"{api_url or f'http://{s.webhook_api.host}:{s.webhook_api.port}'}/v1/triggers/manual",
                   headers={"Authorization": f"Bearer {actor_token}"}, timeout=30,
                   json=trigger.model_dump(exclude_none=True))
    answer = r.json()
    console.print_json(data=answer)
    if not retry_took(answer):
        raise typer.Exit(1)
    actor = actor_for_token(actor_token, s.actors) or "?"  # the API accepted the token: it names a configured actor
    if not letters.close(letter_id, "retried", retried_note(actor, answer.get("receipt_id"), reason)):
        console.print(f"[yellow]dead letter {letter_id} was closed by someone else meanwhile[/]")


@dlq_app.command("resolve")
def resolve(letter_id: str, actor: str = typer.Option(..., help="who (recorded)"),
            reason: str = typer.Option(..., help="why no retry is needed (recorded)")) -> None:
    """Close an open dead letter without re-running it (handled by hand, or no longer wanted)."""
    if not _letters().close(letter_id, "resolved", resolved_note(actor, reason)):
        console.print(f"[red]no open dead letter {letter_id!r}[/]")
        raise typer.Exit(1)
    console.print(f"dead letter {letter_id} resolved by {actor}")
