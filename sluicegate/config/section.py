"""The one base of every configuration section: unknown keys are refused, not ignored.

A misspelt key (``max_inflight`` for ``max_in_flight``) silently falling back to a default is the
failure this prevents: pydantic's ``extra="forbid"`` turns it into a load error naming the key.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """A configuration section (a mapping in ``sluicegate.yaml``); subclasses add the fields."""

    model_config = ConfigDict(extra="forbid")
