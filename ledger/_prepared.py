"""A Core statement compiled once per dialect and run on the connection's DBAPI cursor.

The accept's transaction (``SqlIntakeStore.decide`` with a capacity context) is ~17 statements, and
``mark_admitted_many`` three more. Built once at import they no longer pay for building expressions
(``ledger/_accept_sql.py``), but each execution still went through SQLAlchemy's execution context
(``_init_compiled``, parameter processing, the cursor result): profiled in the webhook API under
admissions, several times SQLite's own work per statement (issue 11, item 4). :class:`Prepared` keeps
the Core statement as the single source of its SQL: the statement is compiled by SQLAlchemy for the
connection's dialect on first use (the same SQL string, the same parameter order, the same bind and
result processors SQLAlchemy would apply: timestamps as SQLAlchemy's DateTime writes them on SQLite,
JSON serialised by the column's type), and from then on each execution is the driver's ``execute``
with those processors applied. Driver errors are raised as SQLAlchemy's (``ledger/_raw_cursor.py``),
so a race's ``IntegrityError`` and a deadlock's ``OperationalError`` reach ``decide``'s retry and a
lost ledger the API's 503 exactly as before.

Run inside the caller's transaction (a ``Session`` or a ``Connection``): the statement is part of it,
in the order the caller runs it. Nothing the ORM holds is flushed first: the callers run these only
when the Session has no pending change (it flushes its own writes where it makes them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql.expression import Executable
from sqlmodel import Session

from ledger._raw_cursor import run_raw, run_raw_many

Processor = Callable[[Any], Any] | None


@dataclass
class _Compiled:
    sql: str
    positional: tuple[str, ...] | None
    """sqlite3 (qmark): the parameter names in the order of the ``?``; None: the driver takes a dict."""
    defaults: dict[str, Any]
    """Values compiled into the statement as bound literals (``values(active=1)``), by name."""
    required: frozenset[str]
    """The parameters every execution must give (SQLAlchemy refuses to run without them too)."""
    binds: tuple[tuple[str, Callable[[Any], Any]], ...]
    """(name, bind processor) for each parameter whose type processes its value."""
    columns: tuple[Any, ...]
    """The returned columns (their types' result processors are made on the first result: some need the
    driver's type code of the column, from the cursor's description)."""
    results: tuple[Processor, ...] | None = None
    """A result processor (or None) per returned column, once known."""


class Prepared:
    """``statement`` (or one per dialect name) run on the DBAPI cursor of the caller's transaction."""

    def __init__(self, statement: Executable | Mapping[str, Executable],
                 column_keys: Sequence[str] | None = None) -> None:
        """``column_keys``: an INSERT's columns (the keys of every row it is run with); else all of them."""
        self._statement = statement
        self._column_keys = list(column_keys) if column_keys is not None else None
        self._compiled: dict[tuple[str, str], _Compiled] = {}

    def _for(self, dialect: Dialect) -> _Compiled:
        key = (dialect.name, dialect.driver)
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self._compiled[key] = self._compile(dialect)
        return compiled

    def _compile(self, dialect: Dialect) -> _Compiled:
        statement = self._statement[dialect.name] if isinstance(self._statement, Mapping) else self._statement
        c = statement.compile(dialect=dialect, column_keys=self._column_keys)  # type: ignore[attr-defined]
        if "POSTCOMPILE" in c.string:
            raise ValueError("an expanding parameter cannot run on the cursor: build one statement per length")
        if dialect.paramstyle == "qmark":
            positional: tuple[str, ...] | None = tuple(c.positiontup or ())
        elif dialect.paramstyle == "pyformat":
            positional = None
        else:  # pragma: no cover - the ledger runs on sqlite3 (qmark) or psycopg (pyformat)
            raise ValueError(f"unsupported paramstyle {dialect.paramstyle}")
        binds: dict[str, Callable[[Any], Any]] = {}
        for bind, name in c.bind_names.items():  # a name used twice ("now") is processed once
            processor = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if processor is not None:
                binds.setdefault(name, processor)
        columns: Any = getattr(statement, "selected_columns", None) or getattr(statement, "exported_columns", ())
        required = frozenset(name for bind, name in c.bind_names.items()
                             if bind.required or _required(c.params.get(name)))
        defaults = {k: v for k, v in c.params.items() if k not in required}
        return _Compiled(c.string, positional, defaults, required, tuple(binds.items()), tuple(columns))

    def _params(self, compiled: _Compiled, params: Mapping[str, Any]) -> Any:
        if not compiled.required <= params.keys():
            raise ValueError(f"a value is required for {sorted(compiled.required - params.keys())}")
        values = {**compiled.defaults, **params}
        for name, processor in compiled.binds:
            if name in values:
                values[name] = processor(values[name])
        if compiled.positional is None:
            return values
        return [values[name] for name in compiled.positional]

    def rows(self, conn: Session | Connection, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """Every row the statement returns, each value through its column's result processor."""
        c = _connection(conn)
        compiled = self._for(c.dialect)

        def fetch(cursor: Any) -> list[Any]:
            if compiled.results is None and cursor.description is not None:
                compiled.results = tuple(
                    col.type.dialect_impl(c.dialect).result_processor(c.dialect, described[1])
                    for col, described in zip(compiled.columns, cursor.description, strict=True))
            return cursor.fetchall()
        fetched = run_raw(c, compiled.sql, self._params(compiled, params), fetch)
        if not compiled.results or not any(compiled.results):
            return [tuple(row) for row in fetched]
        return [tuple(v if p is None else p(v) for v, p in zip(row, compiled.results, strict=True)) for row in fetched]

    def first(self, conn: Session | Connection, params: Mapping[str, Any]) -> tuple[Any, ...] | None:
        rows = self.rows(conn, params)
        return rows[0] if rows else None

    def run(self, conn: Session | Connection, params: Mapping[str, Any]) -> None:
        """A statement without a result (an INSERT or UPDATE)."""
        c = _connection(conn)
        compiled = self._for(c.dialect)
        run_raw(c, compiled.sql, self._params(compiled, params), lambda cursor: None)

    def run_many(self, conn: Session | Connection, params: Sequence[Mapping[str, Any]]) -> None:
        """The driver's ``executemany``: the statement once per parameter set, in the order given."""
        if len(params) <= 1:  # one set: execute, as SQLAlchemy does (psycopg's executemany costs a pipeline)
            if params:
                self.run(conn, params[0])
            return
        c = _connection(conn)
        compiled = self._for(c.dialect)
        run_raw_many(c, compiled.sql, [self._params(compiled, p) for p in params])


def _required(value: Any) -> bool:
    return type(value).__name__ == "symbol"  # SQLAlchemy's REQUIRED marker: a parameter with no value


def _connection(conn: Session | Connection) -> Connection:
    return conn if isinstance(conn, Connection) else conn.connection()
