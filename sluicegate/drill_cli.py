"""``starter.py drill NAME``: run one drill on a stack of its own (see ``drills/``).

Prints what was injected and every invariant checked; exits 1 on a violation (the stack's
directory is then kept and named), 0 otherwise. Needs nothing running: ports are picked free.
"""

from __future__ import annotations

import typer

drill_app = typer.Typer(help="Drills: one failure injected into a throwaway stack, invariants checked.",
                        no_args_is_help=True)


def _run(name: str, keep: bool) -> None:
    from drills import DRILLS

    report = DRILLS[name]()(keep=keep)
    print(report.render(), flush=True)
    raise typer.Exit(0 if report.ok else 1)


@drill_app.command("cancel")
def cancel(keep: bool = typer.Option(False, "--keep", help="keep the stack's directory even if it passed")) -> None:
    """Operator cancel: a run cancelled with the Temporal CLI, another with starter.py cancel."""
    _run("cancel", keep)


@drill_app.command("temporal-restart")
def temporal_restart(keep: bool = typer.Option(False, "--keep", help="keep the stack's directory")) -> None:
    """The Temporal server restarted (same database file) while reviews are in flight."""
    _run("temporal-restart", keep)
