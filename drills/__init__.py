"""Drills: one command each, each against a real stack of its own.

    python starter.py drill cancel             # make drill-cancel
    python starter.py drill temporal-restart   # make drill-temporal-restart
    python starter.py drill duplicate-storm    # make drill-duplicate-storm   (--quick: small sizes)
    python starter.py drill worker-crash       # make drill-worker-crash
    python starter.py drill postgres-restart   # make drill-postgres-restart
    python starter.py drill forge-outage       # make drill-forge-outage

A drill starts the embedded stack (Temporal dev server, ledger, simulators, worker, API) on free
ports in a temporary directory, injects one failure, prints what it injected and every invariant
it checked, and exits non-zero on a violation. The stack is always stopped; the directory (logs,
ledger, Temporal's file) is kept when a check failed, and removed otherwise.
"""

from __future__ import annotations

from typing import Callable

from drills._harness import DrillReport


def _cancel() -> Callable[..., DrillReport]:
    from drills.cancel import run
    return run


def _temporal_restart() -> Callable[..., DrillReport]:
    from drills.temporal_restart import run
    return run


def _duplicate_storm() -> Callable[..., DrillReport]:
    from drills.duplicate_storm import run
    return run


def _worker_crash() -> Callable[..., DrillReport]:
    from drills.worker_crash import run
    return run


def _postgres_restart() -> Callable[..., DrillReport]:
    from drills.postgres_restart import run
    return run


def _forge_outage() -> Callable[..., DrillReport]:
    from drills.forge_outage import run
    return run


DRILLS: dict[str, Callable[[], Callable[..., DrillReport]]] = {
    "cancel": _cancel,
    "temporal-restart": _temporal_restart,
    "duplicate-storm": _duplicate_storm,
    "worker-crash": _worker_crash,
    "postgres-restart": _postgres_restart,
    "forge-outage": _forge_outage,
}

__all__ = ["DRILLS", "DrillReport"]
