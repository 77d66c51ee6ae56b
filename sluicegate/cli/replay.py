"""``starter.py replay DELIVERY_ID``: re-run a delivery kept after ``unsupported-schema`` through the API.

Goes through ``POST /v1/replays`` (never the ledger directly), so the replay is authenticated,
permission-checked (role ``admin`` in the delivery's tenant) and decided by intake exactly like
an arriving delivery, with its own receipt. Replaying twice admits once: the second answer is
``duplicate-delivery`` with the first replay's receipt.
"""

from __future__ import annotations

from typing import Optional

import httpx
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from intake.manual_request import problems
from intake.replay_request import ReplayRequest
from sluicegate.temporal.exit_codes import HTTP_SERVICE
from sluicegate.config.settings import load_settings

console = Console()


def replay_cmd(
    delivery_id: str = typer.Argument(..., help="the kept delivery's id (see its unsupported-schema receipt)"),
    source: Optional[str] = typer.Option(None, help="the source that kept it (only when several kept one id)"),
    reason: str = typer.Option("replay of a kept delivery", help="why (recorded on the replay's receipt)"),
    actor_token: str = typer.Option(..., envvar="SLUICEGATE_ACTOR_TOKEN", help="an admin actor's token"),
    api_url: Optional[str] = typer.Option(None, help="webhook API base URL; default from temporal-dev.yaml"),
) -> None:
    """Replay a kept delivery through intake (admin actors) and print the replay's receipt."""
    body = {"delivery_id": delivery_id, "reason": reason} | ({"source": source} if source is not None else {})
    try:  # the API's own model: a bad value is refused before anything is sent
        ReplayRequest.model_validate(body)
    except ValidationError as exc:
        console.print(f"[red]not sent: invalid {escape(problems(exc, model=ReplayRequest))}[/]")
        raise typer.Exit(2) from None
    if api_url is None:
        s = load_settings()
        api_url = f"http://{s.webhook_api.host}:{s.webhook_api.port}"
    try:
        r = httpx.post(f"{api_url}/v1/replays", json=body, headers={"Authorization": f"Bearer {actor_token}"},
                       timeout=30)
    except httpx.HTTPError as exc:
        typer.echo(f"cannot reach the webhook API at {api_url}: {exc} (is the stack up? `make up`)", err=True)
        raise typer.Exit(HTTP_SERVICE) from None
    console.print_json(data=r.json())
    raise typer.Exit(0 if r.status_code < 400 else 1)
