"""Exit codes of every Sluicegate command, and the one-line message for an expected failure.

An operator who points a command at a bad config, a ledger that is down or a Temporal server that
is not there gets one line on stderr and an exit code a script can branch on, never a traceback:

    0  done               1  the command ran and its answer is "no" (a refusal, a failed drill)
    2  usage              3  configuration invalid or unreadable
    4  ledger unreachable or its schema not at this code's revision
    5  Temporal unreachable
    6  an HTTP service (the webhook API) unreachable or refused the connection
   70  a bug (EX_SOFTWARE): anything else, with its traceback

Only connection-level database errors count as "unreachable" (PostgreSQL's OperationalError or
InterfaceError; SQLite's cannot-open/locked/I-O ones). A missing table or column is a schema not at
this code's revision (run ``sluicegate ledger migrate``); an IntegrityError, a syntax error or any
other ProgrammingError is a bug. Only explicit causes (``raise ... from``) are followed: an
exception raised while handling another is not explained by it. The list lives in docs/cli.md too.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import NamedTuple

OK, NO, USAGE, CONFIG, LEDGER, TEMPORAL, HTTP_SERVICE = 0, 1, 2, 3, 4, 5, 6
BUG = 70  # EX_SOFTWARE (sysexits.h)

_SCHEMA_ERRORS = frozenset({"UndefinedTable", "UndefinedColumn"})  # psycopg's, by class name
_SQLITE_SCHEMA = ("no such table", "no such column")
_SQLITE_UNREACHABLE = ("unable to open database", "database is locked", "disk i/o error",
                       "attempt to write a readonly database", "database disk image is malformed")


class Known(NamedTuple):
    code: int
    message: str


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__  # not __context__: a bug raised in an except block is still a bug


def _one_line(exc: BaseException, limit: int = 300) -> str:
    """``exc`` on one line, cut at ``limit`` characters (a driver's or server's text can be long).
    Our own configuration errors pass a larger limit: the operator needs every setting they name."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _temporal_unreachable(exc: BaseException) -> bool:
    from temporalio.service import RPCError, RPCStatusCode

    if isinstance(exc, RPCError):
        return exc.status == RPCStatusCode.UNAVAILABLE
    # Client.connect reports a refused or unresolvable address as a bare RuntimeError
    return isinstance(exc, RuntimeError) and str(exc).startswith("Failed client connect")


def classify(exc: BaseException) -> Known | None:
    """The exit code and message for an expected failure anywhere in ``exc``'s chain; None for a bug."""
    import httpx
    from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

    from ledger import LedgerSchemaError
    from sluicegate.config.settings import ConfigError

    for link in _chain(exc):
        if isinstance(link, ConfigError):
            return Known(CONFIG, f"configuration error: {_one_line(link, limit=4000)}")
        if isinstance(link, (NoSuchModuleError, ArgumentError)):
            return Known(CONFIG, f"configuration error: the ledger URL is not usable: {_one_line(link)}")
        if isinstance(link, LedgerSchemaError):
            return Known(LEDGER, f"ledger error: {_one_line(link)}")
        if isinstance(link, DBAPIError) and (ledger := _ledger_failure(link)) is not None:
            return ledger
        if _temporal_unreachable(link):
            return Known(TEMPORAL, f"Temporal unreachable: {_one_line(link)}")
        if isinstance(link, httpx.TransportError):
            where = f" at {link.request.url}" if _has_request(link) else ""
            return Known(HTTP_SERVICE, f"cannot reach the service{where}: {_one_line(link)} (is the stack up?)")
    return None


def _ledger_failure(exc: BaseException) -> Known | None:
    """Exit 4 for a ledger that cannot be reached or whose schema is behind; None (a bug) otherwise."""
    from sqlalchemy.exc import InterfaceError, OperationalError

    orig = getattr(exc, "orig", None) or exc
    text = str(orig).lower()
    sqlite = type(orig).__module__.startswith("sqlite3")
    if type(orig).__name__ in _SCHEMA_ERRORS or (sqlite and text.startswith(_SQLITE_SCHEMA)):
        return Known(LEDGER, f"ledger schema is not current: run `sluicegate ledger migrate` ({_one_line(orig)})")
    if isinstance(exc, InterfaceError) or (
            isinstance(exc, OperationalError) and (not sqlite or text.startswith(_SQLITE_UNREACHABLE))):
        return Known(LEDGER, f"ledger unreachable: {_one_line(orig)}")
    return None


def _has_request(exc: BaseException) -> bool:
    try:
        _ = exc.request  # type: ignore[attr-defined]  # httpx raises RuntimeError when unset
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
