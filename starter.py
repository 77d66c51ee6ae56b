"""Operator CLI: manual triggers, receipts and explanations, schedules, goals, outbox, ledger.

    python starter.py trigger --repo acme/api --pr 44 --reason "webhook lost"   # token: $SLUICEGATE_ACTOR_TOKEN
    python starter.py trigger --repo acme/api --pr 44 --reason "missed a bug" --force   # admins only
    python starter.py trigger --tenant beta --repo beta/app --pr 3 --reason "..."  # actors in several tenants
    python starter.py receipts --work-key 'acme/github:acme/api#42:review' --outcome reject
    python starter.py explain 'acme/github:acme/api#42:review'   # or a delivery id
    python starter.py schedule apply | list | trigger ID | pause ID | backfill ID ...
    python starter.py goal start --repo acme/api --pr 44 ...
    python starter.py kill --work-key K | --tenant T | --all --actor A --reason R ; unkill (same flags)
    python starter.py kills                    # kills newest first, in force and lifted
    python starter.py cancel 'acme/github:acme/api#42:review' --actor A --reason R   # recorded, then cancelled
    python starter.py reconcile                # give runs that closed without an outcome their real one
    python starter.py replay DELIVERY_ID       # re-run a delivery kept after unsupported-schema (admins)
    python starter.py drill cancel | temporal-restart | duplicate-storm | worker-crash | postgres-restart
        | forge-outage [--quick]               # one drill on its own throwaway stack
    python starter.py dlq list | show ID | retry ID --reason R
    python starter.py status [--tenant T] [--top N | --all]   # busy counters, deferred queue, breakers
    (every list command — status, receipts, explain, kills, dlq list, schedule list, reconcile — takes --json)
    python starter.py breaker reset model --actor A --reason R
    python starter.py outbox relay ; python starter.py ledger migrate | prune

A manual trigger goes through the webhook API's intake like any webhook: the same
freshness, policy and dedupe checks, and a receipt. Nothing here starts a workflow directly.
"""

from __future__ import annotations

import uuid
from typing import Optional

import httpx
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from intake.manual_request import ManualTrigger, problems

from sluicegate.config import load_settings
from sluicegate.dlq_cli import dlq_app
from sluicegate.drill_cli import drill_app
from sluicegate.operator_cli import explain_cmd, kill_cmd, kills_cmd, ledger_app, outbox_app, receipts, unkill_cmd
from sluicegate.replay_cli import replay_cmd
from sluicegate.runs_cli import cancel_cmd, reconcile_cmd
from sluicegate.status_cli import breaker_app, status_cmd
from sluicegate.trigger_cli import goal_app, schedule_app

# Every Typer app here prints tracebacks without locals: a local may hold a token or the settings.
app = typer.Typer(pretty_exceptions_show_locals=False, help=__doc__.splitlines()[0], no_args_is_help=True)
app.add_typer(ledger_app, name="ledger")
app.add_typer(outbox_app, name="outbox")
app.add_typer(schedule_app, name="schedule")
app.add_typer(goal_app, name="goal")
app.add_typer(dlq_app, name="dlq")
app.add_typer(breaker_app, name="breaker")
app.add_typer(drill_app, name="drill")
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
    force: bool = typer.Option(False, "--force", help="re-run a version already done (admin actors; recorded)"),
    tenant: Optional[str] = typer.Option(None, help="which of the actor's tenants to act in (needed only when it "
                                                     "holds roles in several)"),
) -> None:
    """Submit a manual review trigger through intake and print its receipt."""
    s = load_settings()
    base = api_url or f"http://{s.webhook_api.host}:{s.webhook_api.port}"
    body = {"repository": repo, "number": pr, "reason": reason, "input_version": version,
            "request_id": request_id or f"manual-{uuid.uuid4()}", "force": force}
    if tenant is not None:
        body["tenant"] = tenant
    try:  # the API's own model and hygiene rules: a bad value is refused before anything is sent
        ManualTrigger.model_validate(body)
    except ValidationError as exc:
        console.print(f"[red]not sent: invalid {escape(problems(exc))}[/]")
        raise typer.Exit(2) from None
    try:
        r = httpx.post(f"{base}/v1/triggers/manual", json=body, headers={"Authorization": f"Bearer {actor_token}"},
                       timeout=30)
    except httpx.HTTPError as exc:
        console.print(f"[red]cannot reach the webhook API at {base}: {exc}[/] (is the stack up? `make up`)")
        raise typer.Exit(2) from None
    answer = r.json()
    console.print_json(data=answer)
    raise typer.Exit(0 if r.status_code < 400 else 1)


app.command()(receipts)
app.command("explain")(explain_cmd)
app.command("kill")(kill_cmd)
app.command("unkill")(unkill_cmd)
app.command("kills")(kills_cmd)
app.command("status")(status_cmd)
app.command("cancel")(cancel_cmd)
app.command("reconcile")(reconcile_cmd)
app.command("replay")(replay_cmd)


if __name__ == "__main__":
    from sluicegate.process_exit import run_then_exit

    run_then_exit(app)
