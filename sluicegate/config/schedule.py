"""``schedules:`` and ``goals:`` — scans on Temporal Schedules and goal watchers (docs/schedules.md)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, model_validator

from sluicegate.config.section import Section as _Section
from sluicegate.config.durations import Duration




OverlapName = Literal["skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other", "allow_all"]
MIN_CATCHUP_WINDOW = timedelta(seconds=10)
MAX_CANDIDATES_PER_SCAN = 5000


class ScheduleConfig(_Section):
    """One Temporal Schedule whose action is a ``Scan`` of ``repos`` (see docs/schedules.md)."""

    repos: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")]] = Field(min_length=1)
    tenant: str
    cron: str | None = None
    """Cron expression (5 fields, or a Temporal macro such as ``@hourly``); exclusive with ``interval``."""
    interval: Duration | None = None
    time_zone: str = "UTC"
    """IANA name the cron expression is evaluated in (intervals ignore it)."""
    jitter: Duration = timedelta(0)
    overlap: OverlapName = "skip"
    catchup_window: Duration = timedelta(minutes=10)
    """Ticks missed while the Temporal server was down are still taken if at most this old."""
    pause_on_failure: bool = False
    max_candidates: int = Field(default=200, ge=1, le=10_000)
    """Candidates decided per repository per scan; the rest wait for the next tick."""
    scan_timeout: Duration = timedelta(minutes=10)
    """Execution timeout of one scan workflow (a stuck scan must not hold the schedule forever)."""
    note: str | None = None
    start_paused: bool = False
    """Create the schedule paused (``apply`` never changes the paused state of an existing one)."""

    @model_validator(mode="after")
    def _check(self) -> "ScheduleConfig":
        if (self.cron is None) == (self.interval is None):
            raise ValueError("set exactly one of cron or interval")
        if self.interval is not None and self.interval < timedelta(seconds=1):
            raise ValueError("interval must be at least 1s")
        if len(self.repos) * self.max_candidates > MAX_CANDIDATES_PER_SCAN:
            raise ValueError(f"repos x max_candidates must be at most {MAX_CANDIDATES_PER_SCAN} (one intake "
                             "activity per candidate in one workflow history); split the schedule")
        if self.catchup_window < MIN_CATCHUP_WINDOW:
            raise ValueError("catchup_window must be at least 10s (Temporal's minimum)")
        try:
            ZoneInfo(self.time_zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {self.time_zone!r}") from None
        return self


class GoalsConfig(_Section):
    """Defaults and hard limits for goal watchers (``starter.py goal start``)."""

    tenant: str = "default"
    poll_seconds: float = Field(default=60, gt=0)
    max_polls: int = Field(default=30, ge=1)
    deadline_minutes: float = Field(default=60, gt=0)
    min_poll_seconds: float = Field(default=5, gt=0)
    max_polls_limit: int = Field(default=1000, ge=1)
    max_deadline_minutes: float = Field(default=1440, gt=0)
