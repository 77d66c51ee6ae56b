"""``sluicegate simulator model|forge``: the simulators as subcommands of the one CLI.

Source checkout only (simulators do not ship in the wheel). ``python -m simulators.model`` and
``python -m simulators.forge`` run the same commands on their own.
"""

from __future__ import annotations

import sys
from typing import Optional

import typer
import uvicorn

simulator_app = typer.Typer(help="Simulators (NOT the real services): real HTTP servers for tests and demos.",
                            no_args_is_help=True, pretty_exceptions_show_locals=False)

HOST = typer.Option("127.0.0.1", help="address to bind")
LOG_LEVEL = typer.Option("info", help="uvicorn log level")
GRACEFUL_SECONDS = 2
"""On SIGTERM, requests still in flight (a fault that hangs for minutes) get this long, then are
cancelled: as :class:`simulators.ServerThread` does (without it uvicorn waits for them for ever and
the stack's stop has to SIGKILL the simulator after its own grace)."""
KEEP_ALIVE_SECONDS = 75
"""Idle keep-alive, as the webhook API's default (``webhook_api.keep_alive_seconds``): longer than the
clients' pool expiry (httpx: 5 s), so a client never reuses a connection as the simulator closes it.
uvicorn's 5 s default raced httpx's 5 s and failed the quick bench pass in CI now and then; the forge
client repeats a read dropped that way anyway (``tests/activities/test_forge_dropped_connections.py``)."""


@simulator_app.command("model")
def model(
    host: str = HOST,
    port: int = typer.Option(8302, help="port to bind"),
    api_key: Optional[str] = typer.Option(None, help="require 'Authorization: Bearer <KEY>' on every /v1 request"),
    models: Optional[list[str]] = typer.Option(None, "--model", help="model name to list (repeatable; default "
                                                                        "sim-reviewer-1)"),
    tenant_key: list[str] = typer.Option([], metavar="TENANT=KEY", help="require this key for TENANT's work "
                                                                          "(repeatable)"),
    log_level: str = LOG_LEVEL,
) -> None:
    """An OpenAI-compatible Chat Completions endpoint driven by a deterministic reviewer policy."""
    from simulators.model._app import create_model_app
    from simulators.model._state import DEFAULT_MODELS, ModelState

    if any("=" not in item for item in tenant_key):
        raise typer.BadParameter("--tenant-key takes TENANT=KEY", param_hint="--tenant-key")
    tenant_keys = dict(item.split("=", 1) for item in tenant_key)
    app = create_model_app(ModelState(models or DEFAULT_MODELS), api_key=api_key, tenant_keys=tenant_keys)
    print(f"model simulator (NOT OpenAI) on http://{host}:{port}/v1", file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=GRACEFUL_SECONDS,
                timeout_keep_alive=KEEP_ALIVE_SECONDS)


def _refuse(exc: Exception) -> None:
    print(f"forge simulator: {exc}", file=sys.stderr)
    raise typer.Exit(2)


@simulator_app.command("forge")
def forge(
    host: str = HOST,
    port: int = typer.Option(8301, help="port to bind"),
    fixtures: Optional[str] = typer.Option(None, help="directory of <owner>__<repo>.json files (default: the "
                                                      "packaged simulators/fixtures/forge)"),
    token: Optional[str] = typer.Option(None, help="require this token on every API request"),
    commenter: str = typer.Option("sluicegate-bot", help="login shown on posted comments"),
    log_level: str = LOG_LEVEL,
    app_id: Optional[str] = typer.Option(None, help="GitHub App mode: the app's id"),
    app_public_key_file: Optional[str] = typer.Option(None, help="GitHub App mode: the app's PEM public key"),
    app_installation: list[str] = typer.Option([], metavar="ID=ACCOUNT", help="GitHub App mode: an installation "
                                               "id and the account it is installed on (repeatable)"),
    app_slug: str = typer.Option("sluicegate", help="GitHub App mode: the app's slug (its bot is <slug>[bot])"),
    rate_limit: Optional[int] = typer.Option(None, help="requests per credential per hour"),
) -> None:
    """A subset of GitHub's REST API (pull requests, diffs, issues, labels, comments). Exit 2 if the fixtures or the
    app's key cannot be loaded."""
    from simulators.forge._app import create_forge_app
    from simulators.forge._records import DEFAULT_FIXTURES, FixtureError
    from simulators.forge._state import ForgeState

    try:
        app_spec = _app_spec(app_id, app_public_key_file, app_installation, app_slug)
        state = ForgeState(fixtures or str(DEFAULT_FIXTURES), commenter=commenter)
        if rate_limit is not None:
            state.rate_limits.configure({"limit": rate_limit})
        app = create_forge_app(state, token=token, app=app_spec)
    except (OSError, ValueError, FixtureError) as exc:
        _refuse(exc)
    print(f"forge simulator (NOT GitHub) on http://{host}:{port}", file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=GRACEFUL_SECONDS,
                timeout_keep_alive=KEEP_ALIVE_SECONDS)


def _app_spec(app_id: str | None, key_file: str | None, installations_given: list[str], slug: str):
    from simulators.forge._apps import GitHubAppSpec

    given = [app_id, key_file, installations_given or None]
    if not any(given):
        return None
    if not (app_id and key_file and installations_given):
        raise ValueError("GitHub App mode needs --app-id, --app-public-key-file and --app-installation")
    installations = {}
    for item in installations_given:
        ident, _, account = item.partition("=")
        if not ident.isdigit() or not account:
            raise ValueError(f"--app-installation {item!r} is not ID=ACCOUNT")
        installations[int(ident)] = account
    with open(key_file, encoding="utf-8") as fh:
        return GitHubAppSpec(app_id, fh.read(), installations, slug=slug)


def run(command: str, argv: list[str] | None = None) -> int:
    """Run one simulator command as ``python -m simulators.<command>`` would; returns its exit code."""
    try:
        simulator_app([command, *(sys.argv[1:] if argv is None else argv)],
                      prog_name=f"python -m simulators.{command}")
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    return 0
