"""``sluicegate trigger``: a manual review trigger, sent through the webhook API's intake.

The same freshness, policy and dedupe checks as a webhook, and a receipt; nothing here starts a
workflow directly. Exit 0 when admitted, 1 when intake said no (the receipt is printed), 2 when the
request is invalid and was not sent, 6 when the API cannot be reached (``sluicegate.temporal.exit_codes``).
"""

from __future__ import annotations

import uuid
from typing import Optional

import httpx
import typer
from pydantic import ValidationError
from rich.console import Console

from intake.manual_request import ManualTrigger, problems
from sluicegate.temporal.exit_codes import HTTP_SERVICE, USAGE
from sluicegate.config.settings import load_settings

console = Console()


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
    task: Optional[str] = typer.Option(None, help="the registered task to run (default review; triage: --pr is the "
                                                   "issue number, --version its updated_at); docs/tasks.md"),
) -> None:
    """Submit a manual review trigger through intake and print its receipt."""
    s = load_settings()
    base = api_url or f"http://{s.webhook_api.host}:{s.webhook_api.port}"
    body = {"repository": repo, "number": pr, "reason": reason, "input_version": version,
            "request_id": request_id or f"manual-{uuid.uuid4()}", "force": force}
    if tenant is not None:
        body["tenant"] = tenant
    if task is not None:
        body["task"] = task
    try:  # the API's own model and hygiene rules: a bad value is refused before anything is sent
        ManualTrigger.model_validate(body)
    except ValidationError as exc:
        typer.echo(f"not sent: invalid {problems(exc)}", err=True)
        raise typer.Exit(USAGE) from None
    try:
        r = httpx.post(f"{base}/v1/triggers/manual", json=body, headers={"Authorization": f"Bearer {actor_token}"},
                       timeout=30)
    except httpx.HTTPError as exc:
        typer.echo(f"cannot reach the webhook API at {base}: {exc} (is the stack up? `make up`)", err=True)
        raise typer.Exit(HTTP_SERVICE) from None
    answer = r.json()
    console.print_json(data=answer)
    raise typer.Exit(0 if r.status_code < 400 else 1)
