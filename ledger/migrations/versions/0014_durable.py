"""At most one waiting deferred item per (tenant, work key); dead letters found by their admission.

Revision ID: 0014_durable
Revises: 0013_journal
Create Date: 2026-12-01

``ux_deferred_waiting`` is a partial unique index (``WHERE status = 'waiting'``) on PostgreSQL and
SQLite alike: the database, not a read-then-insert, keeps the deferred queue at one waiting item
per key. Before it is built, duplicates a race left behind are merged: per key the most recently
updated waiting item stays (the newest version, as a replacement in place would have left it) and
the others end ``superseded``.

Dead-letter ids are now ``dl_`` + a whole SHA-256 (67 characters; the column holds 80, no
widening). Old letters keep their ids; ``ix_dead_letters_admission`` lets a retried outcome find
its letter whichever scheme named it.
"""
import sqlalchemy as sa
from alembic import op

revision = "0014_durable"
down_revision = "0013_journal"
branch_labels = None
depends_on = None

WAITING = sa.text("status = 'waiting'")
_MERGE = sa.text("""
UPDATE deferred_items SET status = 'superseded', last_error = 'merged into the newest waiting item (0014_durable)'
WHERE status = 'waiting' AND EXISTS (
  SELECT 1 FROM deferred_items newer
  WHERE newer.status = 'waiting' AND newer.tenant = deferred_items.tenant
    AND newer.work_key = deferred_items.work_key
    AND (newer.updated_at > deferred_items.updated_at
         OR (newer.updated_at = deferred_items.updated_at AND newer.id > deferred_items.id)))
""")


def upgrade() -> None:
    op.execute(_MERGE)
    op.create_index("ux_deferred_waiting", "deferred_items", ["tenant", "work_key"], unique=True,
                    sqlite_where=WAITING, postgresql_where=WAITING)
    op.create_index("ix_dead_letters_admission", "dead_letters", ["work_key", "input_version", "generation"])


def downgrade() -> None:
    op.drop_index("ix_dead_letters_admission", "dead_letters")
    op.drop_index("ux_deferred_waiting", "deferred_items")
