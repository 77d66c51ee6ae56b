"""A thread-safe list of injected faults, shared by both simulators.

Each fault is a plain mapping of simulator-specific settings plus
``times``: how many matching requests it still applies to (``None`` means
forever). :meth:`FaultList.take` finds the first fault whose predicate
matches and decrements ``times`` under the lock, so two concurrent
requests can never both consume the last use of a ``times: 1`` fault.
Faults are checked in the order they were added; exhausted faults are
removed. Each fault gets an increasing ``id`` so a listing is stable.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["FaultDelays", "FaultList", "FaultSpecError", "check_number", "check_route", "check_status", "route_matches"]


class FaultSpecError(ValueError):
    """A fault definition posted to ``/_sim/faults`` is invalid."""


def _check_times(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise FaultSpecError("'times' must be a positive integer or null")
    return value


def check_number(spec: Mapping[str, Any], key: str, default: float | None = 0.0) -> float | None:
    """Validate an optional non-negative number field of a fault spec."""
    value = spec.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise FaultSpecError(f"'{key}' must be a non-negative number")
    return float(value)


def check_route(spec: Mapping[str, Any]) -> tuple[str | None, str]:
    """Validate the optional ``method`` (upper-cased) and ``path`` regex (default: any) of a spec."""
    method = spec.get("method")
    if method is not None and not isinstance(method, str):
        raise FaultSpecError("'method' must be a string or null")
    path = spec.get("path") or ".*"
    try:
        re.compile(path)
    except (re.error, TypeError) as exc:
        raise FaultSpecError(f"'path' is not a valid regex: {exc}") from exc
    return (method.upper() if method else None), path


def route_matches(fault: Mapping[str, Any], method: str, path: str) -> bool:
    """Does a request (``method``, ``path``) match a fault's route (see :func:`check_route`)?"""
    if fault["method"] and fault["method"] != method:
        return False
    return re.search(fault["path"], path) is not None


def check_status(spec: Mapping[str, Any], *, required: bool = False) -> int | None:
    """Validate the optional HTTP ``status`` field (400..599)."""
    value = spec.get("status")
    if value is None:
        if required:
            raise FaultSpecError("'status' is required")
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 400 <= value <= 599:
        raise FaultSpecError("'status' must be an integer between 400 and 599")
    return value


class FaultList:
    """Ordered, lock-protected faults; ``take`` consumes one use atomically."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[dict[str, Any]] = []
        self._next_id = 1

    def add(self, fault: Mapping[str, Any]) -> dict[str, Any]:
        entry = dict(fault)
        entry["times"] = _check_times(entry.get("times", 1))
        with self._lock:
            entry["id"] = self._next_id
            self._next_id += 1
            self._faults.append(entry)
            return dict(entry)

    def list(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(f) for f in self._faults]

    def clear(self) -> int:
        with self._lock:
            count = len(self._faults)
            self._faults.clear()
            return count

    def take(self, matches: Callable[[Mapping[str, Any]], bool]) -> dict[str, Any] | None:
        """Return a copy of the first matching fault, consuming one use."""
        with self._lock:
            for index, fault in enumerate(self._faults):
                if not matches(fault):
                    continue
                if fault["times"] is not None:
                    fault["times"] -= 1
                    if fault["times"] <= 0:
                        del self._faults[index]
                return dict(fault)
        return None


class FaultDelays:
    """The waits faults impose (a delay, a hang, a stall), which ``POST /_sim/faults/release`` ends
    early: a test holds a request "as long as needed" and ends the wait once it has seen what it
    waited for, instead of guessing a duration a loaded machine may outrun. Used on the server's
    event loop only."""

    def __init__(self) -> None:
        self._release = asyncio.Event()
        self._waiting = 0

    async def wait(self, seconds: float) -> None:
        """``seconds``, or less when :meth:`release` is called meanwhile."""
        release = self._release
        self._waiting += 1
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(release.wait(), seconds)
        finally:
            self._waiting -= 1

    def release(self) -> int:
        """End every wait under way now (later ones wait in full); how many there were."""
        release, self._release = self._release, asyncio.Event()
        release.set()
        return self._waiting
