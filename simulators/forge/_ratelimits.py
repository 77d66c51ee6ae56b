"""GitHub's REST rate limits, answered the way GitHub answers them ("Rate limits for the REST API").

**Primary limit**, per credential (a user token's login, an App installation, or the anonymous
caller): ``limit`` requests per ``window_seconds`` (github.com: 5,000 an hour; the simulator's
default is generous so demos and benchmarks never meet it). Every API answer carries
``x-ratelimit-limit``, ``-remaining``, ``-used``, ``-reset`` (UTC epoch seconds) and
``-resource: core``. Once used up, requests are refused until the reset: ``403`` (or ``429``,
settable) ``{"message": "API rate limit exceeded for user ID <id>. ..."}`` with
``x-ratelimit-remaining: 0``. ``exhaust_for_seconds`` uses every budget up now and lets them
refill that many seconds later. A refused request is not counted.

**Secondary limits** (no budget to watch, as on GitHub): content-creating requests (POST, PATCH,
PUT, DELETE) beyond ``writes_per_minute`` per credential in a rolling minute answer ``403``
``{"message": "You have exceeded a secondary rate limit. ..."}`` with ``retry-after: <seconds>``
and the primary headers as usual (remaining is *not* 0).

**Injected limits**, for tests that must not depend on the wall clock: the next ``times``
requests matching ``method``/``path`` meet a ``secondary`` limit (``retry-after`` when
``retry_after`` is given; GitHub sometimes omits it) or a ``primary`` one (remaining 0, the reset
``reset_in_seconds`` ahead), answered exactly as above; the request after them goes through.

Thread-safe (one lock); the clock is injectable for tests of the reset arithmetic.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from simulators._faults import FaultList, FaultSpecError, check_number, check_route, route_matches

__all__ = ["Caller", "RateLimits", "Refusal"]

DEFAULT_LIMIT = 1_000_000
DOCS_PRIMARY = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
DOCS_SECONDARY = DOCS_PRIMARY + "#about-secondary-rate-limits"
_WRITES = {"POST", "PATCH", "PUT", "DELETE"}
_POLICY_KEYS = {"limit", "window_seconds", "status", "writes_per_minute", "exhaust_for_seconds"}
_INJECT_KEYS = {"kind", "method", "path", "times", "status", "retry_after", "reset_in_seconds"}


@dataclass(frozen=True)
class Caller:
    """Who a request is, for authorship and rate limiting."""

    login: str
    rate_key: str
    """The budget the request counts against (``user:<login>``, ``installation:<id>``, ``anonymous``)."""
    subject: str
    """How GitHub names that budget in its refusal ("user ID 123", "installation ID 7")."""


@dataclass(frozen=True)
class Refusal:
    status: int
    body: dict[str, Any]
    headers: dict[str, str]


def _status(spec: Mapping[str, Any], key: str = "status") -> int:
    value = spec.get(key, 403)
    if value not in (403, 429):
        raise FaultSpecError(f"'{key}' must be 403 or 429 (what GitHub answers for a rate limit)")
    return int(value)


def _positive_int(spec: Mapping[str, Any], key: str, default: int | None) -> int | None:
    value = spec.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise FaultSpecError(f"'{key}' must be a non-negative integer")
    return value


class RateLimits:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self._limit, self._window, self._primary_status = DEFAULT_LIMIT, 3600.0, 403
            self._writes_per_minute: int | None = None
            self._windows: dict[str, list[float]] = {}  # rate key -> [window start, used]
            self._writes: dict[str, deque[float]] = {}
            self._exhausted_until = 0.0
            self._refusals: Counter[str] = Counter()
        self._injected = FaultList()

    # -- control ------------------------------------------------------------------
    def configure(self, spec: Any) -> dict[str, Any]:
        """Set the primary policy and the writes-per-minute rule (``FaultSpecError`` if bad)."""
        if not isinstance(spec, Mapping) or set(spec) - _POLICY_KEYS:
            raise FaultSpecError(f"rate limit settings are an object with keys among {sorted(_POLICY_KEYS)}")
        limit = _positive_int(spec, "limit", self._limit)
        window = check_number(spec, "window_seconds", self._window)
        status = _status(spec) if "status" in spec else self._primary_status
        writes = _positive_int(spec, "writes_per_minute", self._writes_per_minute)
        exhaust = check_number(spec, "exhaust_for_seconds", None)
        if not window:
            raise FaultSpecError("'window_seconds' must be positive")
        if limit is None:  # {"limit": null} would compare None with a count on the next request
            raise FaultSpecError("'limit' must be a non-negative integer")
        with self._lock:
            self._limit, self._window, self._primary_status, self._writes_per_minute = limit, window, status, writes
            if exhaust is not None:
                self._exhausted_until = self._clock() + exhaust
                self._windows.clear()
        return self.snapshot()

    def inject(self, spec: Any) -> dict[str, Any]:
        """The next ``times`` requests matching ``method``/``path`` meet a primary or secondary limit."""
        if not isinstance(spec, Mapping) or set(spec) - _INJECT_KEYS:
            raise FaultSpecError(f"an injected limit is an object with keys among {sorted(_INJECT_KEYS)}")
        kind = spec.get("kind", "secondary")
        if kind not in ("primary", "secondary"):
            raise FaultSpecError("'kind' must be 'primary' or 'secondary'")
        method, path = check_route(spec)
        return self._injected.add({"kind": kind, "method": method, "path": path,
                                   "times": spec.get("times", 1), "status": _status(spec),
                                   "retry_after": check_number(spec, "retry_after", None),
                                   "reset_in_seconds": check_number(spec, "reset_in_seconds", 60.0)})

    def snapshot(self) -> dict[str, Any]:
        now = self._clock()
        with self._lock:
            return {"limit": self._limit, "window_seconds": self._window, "status": self._primary_status,
                    "writes_per_minute": self._writes_per_minute,
                    "exhausted_for_seconds": max(self._exhausted_until - now, 0.0),
                    "used": {key: int(used) for key, (_, used) in sorted(self._windows.items())},
                    "refusals": dict(sorted(self._refusals.items())), "injected": self._injected.list()}

    # -- requests -------------------------------------------------------------------
    def admit(self, caller: Caller, method: str, path: str) -> tuple[Refusal | None, dict[str, str]]:
        """``(refusal or None, rate-limit headers for the answer)``; an admitted request is counted."""
        now = self._clock()
        with self._lock:
            window = self._window_for(caller.rate_key, now)
            if now < self._exhausted_until or window[1] >= self._limit:
                return self._primary(caller, window, max(self._exhausted_until, window[0] + self._window),
                                     self._primary_status)
            injected = self._injected.take(lambda f: route_matches(f, method, path))
            if injected is not None and injected["kind"] == "primary":
                return self._primary(caller, window, now + injected["reset_in_seconds"], injected["status"])
            if injected is not None:
                return self._secondary(window, injected["status"], injected["retry_after"])
            wait = self._write_wait(caller.rate_key, method, now)
            if wait is not None:
                return self._secondary(window, 403, wait)
            window[1] += 1
            if method in _WRITES:
                self._writes.setdefault(caller.rate_key, deque()).append(now)
            return None, self._headers(window, window[0] + self._window)

    def refund(self, caller: Caller) -> None:
        """Take back one counted request: GitHub does not count a ``304 Not Modified`` answer."""
        with self._lock:
            window = self._windows.get(caller.rate_key)
            if window is not None and window[1] > 0:
                window[1] -= 1

    def _primary(self, caller: Caller, window: list[float], reset: float,
                 status: int) -> tuple[Refusal, dict[str, str]]:
        self._refusals["primary"] += 1
        headers = self._headers(window, reset, remaining=0)
        return Refusal(status, _primary_body(caller, status), headers), headers

    def _secondary(self, window: list[float], status: int, wait: float | None) -> tuple[Refusal, dict[str, str]]:
        self._refusals["secondary"] += 1
        headers = self._headers(window, window[0] + self._window)
        answer = dict(headers) if wait is None else {**headers, "retry-after": str(math.ceil(wait))}
        return Refusal(status, _secondary_body(status), answer), headers

    def _window_for(self, key: str, now: float) -> list[float]:
        window = self._windows.get(key)
        if window is None or now >= window[0] + self._window:
            window = self._windows[key] = [max(now, self._exhausted_until), 0]
        return window

    def _write_wait(self, key: str, method: str, now: float) -> float | None:
        """Seconds until a write fits in the rolling minute again; None if it fits now."""
        if method not in _WRITES or self._writes_per_minute is None:
            return None
        recent = self._writes.setdefault(key, deque())
        while recent and recent[0] <= now - 60:
            recent.popleft()
        if len(recent) < self._writes_per_minute:
            return None
        return max(recent[0] + 60 - now, 1.0) if recent else 60.0

    def _headers(self, window: list[float], reset: float, remaining: int | None = None) -> dict[str, str]:
        left = max(self._limit - int(window[1]), 0) if remaining is None else remaining
        return {"x-ratelimit-limit": str(self._limit), "x-ratelimit-remaining": str(left),
                "x-ratelimit-used": str(int(window[1])), "x-ratelimit-reset": str(math.ceil(reset)),
                "x-ratelimit-resource": "core"}


def _primary_body(caller: Caller, status: int) -> dict[str, Any]:
    message = f"API rate limit exceeded for {caller.subject}."
    if caller.rate_key == "anonymous":
        message += (" (But here's the good news: Authenticated requests get a higher rate limit. "
                    "Check out the documentation for more details.)")
    else:
        message += " If you reach out to GitHub Support for help, please include the request ID SIM."
    return {"message": message, "documentation_url": DOCS_PRIMARY, "status": str(status)}


def _secondary_body(status: int) -> dict[str, Any]:
    return {"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
                       "If you reach out to GitHub Support for help, please include the request ID SIM.",
            "documentation_url": DOCS_SECONDARY, "status": str(status)}
