"""Exit codes of every Sluicegate command, and the one-line message for an expected failure.

An operator who points a command at a bad config, a ledger that is down or a Temporal server that
is not there gets one line on stderr and an exit code a script can branch on, never a traceback:

    0  done               1  the command ran and its answer is "no" (a refusal, a failed drill)
    2  usage              3  configuration invalid or unreadable
    4  ledger unreachable or its schema not at this code's revision
    5  Temporal unreachable
    6  an HTTP service (the webhook API) unreachable or refused the connection

Anything else is a bug and keeps its traceback. The list lives in docs/cli.md too.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import NamedTuple

OK, NO, USAGE, CONFIG, LEDGER, TEMPORAL, HTTP_SERVICE = 0, 1, 2, 3, 4, 5, 6


class Known(NamedTuple):
    code: int
    message: str


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _temporal_unreachable(exc: BaseException) -> bool:
    from temporalio.service import RPCError, RPCStatusCode

    if isinstance(exc, RPCError):
        return exc.status == RPCStatusCode.UNAVAILABLE
    # Client.connect reports a refused or unresolvable address as a bare RuntimeError
    return isinstance(exc, RuntimeError) and str(exc).startswith("Failed client connect")


def classify(exc: BaseException) -> Known | None:
    """The exit code and message for an expected failure anywhere in ``exc``'s chain; None for a bug."""
    import httpx
    from sqlalchemy.exc import DBAPIError, NoSuchModuleError, ArgumentError

    from ledger import LedgerSchemaError
    from sluicegate.config.settings import ConfigError

    for link in _chain(exc):
        if isinstance(link, ConfigError):
            return Known(CONFIG, f"configuration error: {_one_line(link)}")
        if isinstance(link, (NoSuchModuleError, ArgumentError)):
            return Known(CONFIG, f"configuration error: the ledger URL is not usable: {_one_line(link)}")
        if isinstance(link, LedgerSchemaError):
            return Known(LEDGER, f"ledger error: {_one_line(link)}")
        if isinstance(link, DBAPIError):
            return Known(LEDGER, f"ledger unreachable: {_one_line(link.orig or link)}")
        if _temporal_unreachable(link):
            return Known(TEMPORAL, f"Temporal unreachable: {_one_line(link)}")
        if isinstance(link, httpx.TransportError):
            where = f" at {link.request.url}" if _has_request(link) else ""
            return Known(HTTP_SERVICE, f"cannot reach the service{where}: {_one_line(link)} (is the stack up?)")
    return None


def _has_request(exc: BaseException) -> bool:
    try:
        exc.request  # type: ignore[attr-defined]  # httpx raises RuntimeError when unset
    except RuntimeError:
        return False
    return True


def report(exc: BaseException, prog: str | None = None) -> int | None:
    """Print the one-line message for an expected failure and return its exit code; None for a bug."""
    known = classify(exc)
    if known is None:
        return None
    print(f"{prog or 'sluicegate'}: {known.message}", file=sys.stderr)
    return known.code
