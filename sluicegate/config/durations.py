"""Durations in the configuration: ``90`` (seconds), ``"90s"``, ``"5m"``, ``"1h30m"``, ``"90d"``.

A value that does not parse is handed to pydantic unchanged, which then reports it with its
dotted path (``maintenance.retention.receipts: Input should be a valid timedelta``).
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator

_DURATION = re.compile(
    r"^(?:(\d+(?:\.\d+)?)d)?(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?$")


def parse_duration(value: Any) -> Any:
    """``90`` / ``"90s"`` / ``"5m"`` / ``"1h30m"`` / ``"90d"`` -> timedelta; other values go to pydantic as they are."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return timedelta(seconds=value)
    if isinstance(value, str):
        text = value.strip().lower()
        m = _DURATION.match(text)
        if text and m and any(m.groups()):
            d, h, mi, sec = (float(g) if g else 0.0 for g in m.groups())
            return timedelta(days=d, hours=h, minutes=mi, seconds=sec)
    return value


Duration = Annotated[timedelta, BeforeValidator(parse_duration)]
