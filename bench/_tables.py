"""The human report every bench prints: a console, report tables, check lines.

With ``--json`` the harness (``bench._harness.finish``) sends all of it to stderr; the console
writes to whatever ``sys.stdout`` is when it prints.
"""

from __future__ import annotations

import sys
from typing import Collection, Iterable, Sequence

from rich.console import Console
from rich.table import Table

from bench._harness import Measurement


def console(width: int) -> Console:
    """A console for a report: the terminal's width, or ``width`` columns when not on a terminal."""
    return Console(highlight=False, width=None if sys.stdout.isatty() else width)


def log(line: str) -> None:
    print(line, flush=True)


def table(title: str, columns: Sequence[str], left: Collection[str] | None = None) -> Table:
    """A table whose ``left`` columns (by default the first) are left-justified, the others right."""
    t = Table(title=title)
    left = columns[:1] if left is None else left
    for col in columns:
        t.add_column(col, justify="left" if col in left else "right")
    return t


def record_checks(m: Measurement, checks: Iterable[tuple[str, bool, str]], out: Console) -> bool:
    """Print each (name, passed, detail) as a PASS/FAIL line and add it to ``m.checks``; True when all passed."""
    ok = True
    for name, passed, detail in checks:
        ok &= passed
        m.checks.append(f"{'PASS' if passed else 'FAIL'} {name}: {detail}")
        out.print(f"{'[green]PASS[/]' if passed else '[red]FAIL[/]'} {name}: {detail}")
    return ok
