"""``starter.py drill NAME``: run one drill on a stack of its own (see ``drills/``).

Prints what was injected and every invariant checked; exits 1 on a violation (the stack's
directory is then kept and named), 0 otherwise. Needs nothing running: ports are picked free. On a terminal a spinner shows the drill is alive
and how long it has run; its printed steps scroll above it (``sluicegate.observability.progress``).
"""

from __future__ import annotations

from typing import Optional

import typer

from sluicegate.observability.progress import spinner

drill_app = typer.Typer(help="Drills: one failure injected into a throwaway stack, invariants checked.",
                        no_args_is_help=True)


def _run(name: str, keep: bool) -> None:
    from drills import DRILLS

    with spinner(f"drill {name} running", tick=1):
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


def _sized(name: str, keep: bool, quick: bool, **given) -> None:
    """A drill with sizes: the full defaults, ``--quick`` ones, and any size given as a flag on top."""
    from dataclasses import replace
    from importlib import import_module

    from drills import DRILLS

    sizes_cls = import_module(f"drills.{name.replace('-', '_')}").Sizes
    sizes = replace(sizes_cls.quick() if quick else sizes_cls(), **{k: v for k, v in given.items() if v is not None})
    print(f"drill {name}: {sizes}", flush=True)
    with spinner(f"drill {name} running", tick=1):
        report = DRILLS[name]()(keep=keep, sizes=sizes)
    print(report.render(), flush=True)
    raise typer.Exit(0 if report.ok else 1)


KEEP = typer.Option(False, "--keep", help="keep the stack's directory even if it passed")
QUICK = typer.Option(False, "--quick", help="small sizes (all drills together in a few minutes)")


@drill_app.command("duplicate-storm")
def duplicate_storm(keep: bool = KEEP, quick: bool = QUICK,
                    deliveries: Optional[int] = typer.Option(None, help="signed deliveries in all (default 1000)"),
                    pulls: Optional[int] = typer.Option(None, help="pull requests, one version each (default 50)"),
                    in_flight: Optional[int] = typer.Option(None, help="requests in flight (default 32)"),
                    redeliver_share: Optional[float] = typer.Option(None, help="share of copies that are exact "
                                                                    "redeliveries; the rest are new events")) -> None:
    """N signed deliveries (redeliveries, same-version duplicates) for M pull requests, K in flight."""
    _sized("duplicate-storm", keep, quick, deliveries=deliveries, pulls=pulls, in_flight=in_flight,
           redeliver_share=redeliver_share)


@drill_app.command("worker-crash")
def worker_crash(keep: bool = KEEP, quick: bool = QUICK,
                 pulls: Optional[int] = typer.Option(None, help="pull requests per batch (default 40)"),
                 crashes: Optional[int] = typer.Option(None, help="worker kills during the stream (default 8)"),
                 in_flight: Optional[int] = typer.Option(None, help="requests in flight (default 8)"),
                 model_delay: Optional[float] = typer.Option(None, help="seconds a model call (default 0.2)")) -> None:
    """The worker SIGKILLed between a stored comment and its checkpoint, several times during a stream."""
    _sized("worker-crash", keep, quick, pulls=pulls, crashes=crashes, in_flight=in_flight, model_delay=model_delay)


@drill_app.command("postgres-restart")
def postgres_restart(keep: bool = KEEP, quick: bool = QUICK,
                     deliveries: Optional[int] = typer.Option(None, help="signed deliveries in all (default 400)"),
                     pulls: Optional[int] = typer.Option(None, help="pull requests, one version each (default 40)"),
                     in_flight: Optional[int] = typer.Option(None, help="requests in flight (default 8)"),
                     seconds: Optional[float] = typer.Option(None, help="how long the stream lasts (default 30)"),
                     down_seconds: Optional[float] = typer.Option(None, help="seconds down (default 5)")) -> None:
    """A private PostgreSQL ledger restarted mid-stream; the sender redelivers what was answered 5xx."""
    _sized("postgres-restart", keep, quick, deliveries=deliveries, pulls=pulls, in_flight=in_flight, seconds=seconds,
           down_seconds=down_seconds)


@drill_app.command("forge-outage")
def forge_outage(keep: bool = KEEP, quick: bool = QUICK,
                 deliveries: Optional[int] = typer.Option(None, help="signed deliveries in all (default 500)"),
                 pulls: Optional[int] = typer.Option(None, help="pull requests, one version each (default 100)"),
                 in_flight: Optional[int] = typer.Option(None, help="requests in flight (default 8)"),
                 seconds: Optional[float] = typer.Option(None, help="the stream's length without the outage (60)"),
                 outage_seconds: Optional[float] = typer.Option(None, help="how long the forge is down (120)"),
                 mode: Optional[str] = typer.Option(None, help="503 (default) or hang")) -> None:
    """The forge answers 503 (or hangs) for a window during a stream; the sender redelivers 5xx answers."""
    _sized("forge-outage", keep, quick, deliveries=deliveries, pulls=pulls, in_flight=in_flight, seconds=seconds,
           outage_seconds=outage_seconds, mode=mode)
