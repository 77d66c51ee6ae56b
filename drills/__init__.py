"""Drills: one command each, each against a real stack of its own.

    python starter.py drill cancel             # make drill-cancel
    python starter.py drill temporal-restart   # make drill-temporal-restart

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


DRILLS: dict[str, Callable[[], Callable[..., DrillReport]]] = {
    "cancel": _cancel,
    "temporal-restart": _temporal_restart,
}

__all__ = ["DRILLS", "DrillReport"]
