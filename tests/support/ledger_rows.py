"""Row counts of every ledger table: what a request wrote, measured, not assumed."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlmodel import SQLModel

import ledger


def table_counts(url: str) -> dict[str, int]:
    """``{table: rows}`` for every table the ledger's models define."""
    engine = ledger.make_engine(url)
    try:
        with engine.connect() as conn:
            return {t.name: conn.execute(select(func.count()).select_from(t)).scalar_one()
                    for t in SQLModel.metadata.sorted_tables}
    finally:
        engine.dispose()


def grown(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Tables whose row count changed, with the change (``{}``: nothing was written)."""
    return {name: after[name] - before.get(name, 0) for name in after if after[name] != before.get(name, 0)}
