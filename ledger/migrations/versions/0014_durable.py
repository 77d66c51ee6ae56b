"""At most one waiting deferred item per (tenant, work key); dead letters found by their admission.

Revision ID: 0014_durable
Revises: 0013_journal
Create Date: 2026-12-01

``ux_deferred_waiting`` is a partial unique index (``WHERE status = 'waiting'``) on PostgreSQL and
SQLite alike: the database, not a read-then-insert, keeps the deferred queue at one waiting item
per key. Before it is built, duplicates a race left behind are merged by the queue's own rule
(``emitted_later``, copied here from ``intake.capacity.payload`` as ``ledger._deferred.enqueue`` applies it): taken in
``enqueued_at`` order (then id), each item replaces the one kept unless the kept one's event was
emitted strictly later — so the newest *event* stays, with ties and unknown times going to the
later-enqueued item, and not the last-touched one (a retry touches ``updated_at``). The others end
``superseded``. Done in Python, the same on PostgreSQL and SQLite.

Dead-letter ids are now ``dl_`` + a whole SHA-256 (67 characters; the column holds 80, no
widening). Old letters keep their ids; ``ix_dead_letters_admission`` lets a retried outcome find
its letter whichever scheme named it.
"""
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0014_durable"
down_revision = "0013_journal"
branch_labels = None
depends_on = None

WAITING = sa.text("status = 'waiting'")
_ITEMS = sa.table("deferred_items", sa.column("id", sa.String), sa.column("tenant", sa.String),
                  sa.column("work_key", sa.String), sa.column("status", sa.String),
                  sa.column("enqueued_at", sa.DateTime), sa.column("payload", sa.JSON),
                  sa.column("last_error", sa.String))
_MERGED_NOTE = "merged into the newest waiting item (0014_durable)"


def emitted_later(queued: dict[str, Any], incoming: dict[str, Any]) -> bool:
    """``intake.capacity.payload.emitted_later`` as of this revision, copied so that the migration
    keeps doing what it did when written whatever later becomes of the application's copy."""
    try:
        mine, theirs = queued["envelope"].get("time"), incoming["envelope"].get("time")
        return bool(mine and theirs) and datetime.fromisoformat(mine) > datetime.fromisoformat(theirs)
    except (KeyError, TypeError, ValueError, AttributeError):
        return False


def _merge_duplicates(conn) -> None:
    """Keep one waiting item per (tenant, work key): the one the queue's merge would have kept."""
    waiting = _ITEMS.c.status == "waiting"
    dup_keys = (sa.select(_ITEMS.c.tenant, _ITEMS.c.work_key).where(waiting)
                .group_by(_ITEMS.c.tenant, _ITEMS.c.work_key).having(sa.func.count() > 1).subquery())
    rows = conn.execute(
        sa.select(_ITEMS.c.id, _ITEMS.c.tenant, _ITEMS.c.work_key, _ITEMS.c.payload)
        .join(dup_keys, (dup_keys.c.tenant == _ITEMS.c.tenant) & (dup_keys.c.work_key == _ITEMS.c.work_key))
        .where(waiting).order_by(_ITEMS.c.tenant, _ITEMS.c.work_key, _ITEMS.c.enqueued_at, _ITEMS.c.id)).all()
    kept: dict[tuple[str, str], tuple[str, dict]] = {}
    losers: list[str] = []
    for row in rows:
        key, incoming = (row.tenant, row.work_key), row.payload or {}
        if key in kept and emitted_later(kept[key][1], incoming):
            losers.append(row.id)  # the kept event is newer: the incoming one is merged into it
            continue
        if key in kept:
            losers.append(kept[key][0])
        kept[key] = (row.id, incoming)
    if losers:
        conn.execute(sa.update(_ITEMS).where(_ITEMS.c.id.in_(sa.bindparam("ids", expanding=True)), waiting)
                     .values(status="superseded", last_error=_MERGED_NOTE), {"ids": losers})


def upgrade() -> None:
    _merge_duplicates(op.get_bind())
    op.create_index("ux_deferred_waiting", "deferred_items", ["tenant", "work_key"], unique=True,
                    sqlite_where=WAITING, postgresql_where=WAITING)
    op.create_index("ix_dead_letters_admission", "dead_letters", ["work_key", "input_version", "generation"])


def downgrade() -> None:
    op.drop_index("ix_dead_letters_admission", "dead_letters")
    op.drop_index("ux_deferred_waiting", "deferred_items")
