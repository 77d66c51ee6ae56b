"""``--json`` for every list command of the CLI: one way to turn what a command shows into JSON.

pydantic serializes whatever the command has — ledger rows (SQLModel), dataclasses, datetimes,
enums — in JSON mode; keys are sorted so the output is stable from one run to the next and can
be diffed or fed to ``jq``. Printed as one document on stdout, without Rich's markup or wrapping.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

import typer
from pydantic import TypeAdapter

_ANY = TypeAdapter(Any)

JSON_OPTION = typer.Option(False, "--json", help="print machine-readable JSON (stable keys) instead of tables")


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON types (pydantic's JSON mode: datetimes as ISO 8601, enums by value)."""
    return _ANY.dump_python(value, mode="json")


def dumps(value: Any) -> str:
    return json.dumps(jsonable(value), sort_keys=True, ensure_ascii=False, indent=2)


def print_json(value: Any, out: TextIO | None = None) -> None:
    (out or sys.stdout).write(dumps(value) + "\n")
