"""The long-running processes and the source-checkout tools as subcommands of ``sluicegate``.

    sluicegate worker                 # = python worker.py (console script sluicegate-worker)
    sluicegate api                    # = python -m webhook_api (console script sluicegate-api)
    sluicegate codec-server [--host H] [--port P]
    sluicegate bench NAME [ARGS...]   # = python -m bench.NAME ARGS (source checkout only)

``worker.py`` and ``webhook_api/__main__.py`` keep the processes' code; these are entries.
"""

from __future__ import annotations

import asyncio
from importlib import import_module
from typing import Optional

import typer

from sluicegate.temporal.exit_codes import USAGE


def worker() -> None:
    """Run the worker: every Sluicegate workflow and activity (stops gracefully on SIGTERM/SIGINT)."""
    from worker import main

    asyncio.run(main())


def api() -> None:
    """Run the webhook API, console and /metrics (host and port from the config)."""
    from webhook_api.__main__ import main

    main()


def codec_server(host: Optional[str] = typer.Option(None, help="default: codec_server.host"),
                 port: Optional[int] = typer.Option(None, help="default: codec_server.port")) -> None:
    """Run the Temporal codec server (the UI and CLI show encrypted payloads in clear)."""
    from sluicegate.temporal.codec_server import serve

    serve(host, port)


BENCHES = ("intake_bench", "loop_bench", "mixed_stream", "capacity_bench")


def bench(ctx: typer.Context, name: str = typer.Argument(..., help=" | ".join(BENCHES))) -> None:
    """Run one bench with its own flags (``sluicegate bench loop_bench --quick``; ``--help`` after NAME)."""
    if name not in BENCHES:
        raise typer.BadParameter(f"one of {', '.join(BENCHES)}", param_hint="NAME")
    try:
        module = import_module(f"bench.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != "bench":
            raise
        typer.echo("the benches run from a source checkout (they are not in the wheel)", err=True)
        raise typer.Exit(USAGE) from None
    raise typer.Exit(module.main(list(ctx.args)))


PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def add_to(app: typer.Typer) -> None:
    app.command("worker")(worker)
    app.command("api")(api)
    app.command("codec-server")(codec_server)
    app.command("bench", context_settings=PASS_THROUGH)(bench)


def _single(command) -> typer.Typer:
    one = typer.Typer(pretty_exceptions_show_locals=False, add_completion=False)
    one.command()(command)
    return one


def worker_main() -> None:
    """Console script ``sluicegate-worker``."""
    from sluicegate.temporal.process_exit import run_then_exit

    run_then_exit(_single(worker))


def api_main() -> None:
    """Console script ``sluicegate-api``."""
    from sluicegate.temporal.process_exit import run_then_exit

    run_then_exit(_single(api))
