"""``budgets.stale_reservations:`` — the sweep that ends reservations whose worker died.

A model call's reservation normally ends in its own attempt (settled, released, or charged at
its estimate) or in the step's next attempt. One is left ``reserved`` only when nobody comes
back for it: the worker died and the run was terminated, or the step was never retried. The
``sluicegate-settle-stale-reservations`` schedule ends those after ``grace_seconds``: with the
journaled usage if the answer had arrived, else at the estimate (see ``ledger/_budgets.py``).
"""

from __future__ import annotations

from pydantic import Field

from sluicegate.config.section import Section


class StaleReservationsConfig(Section):

    interval_seconds: float = Field(default=300.0, gt=0)
    """How often the sweep runs."""
    grace_seconds: float = Field(default=900.0, gt=0)
    """A reservation held longer than this is stale. Must exceed ``activities.model_start_to_close_seconds``
    (a live attempt holds its reservation at most that long, plus its settle)."""
