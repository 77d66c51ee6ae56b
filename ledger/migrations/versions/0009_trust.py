"""Replay detection: the body digest of a delivery, unique per source.

A signed body seen again under another delivery id (same source, same digest) is a replay
(``replayed-body``). The digest lives on the delivery row, so it is claimed in the same
statement as the delivery id and forgotten with it when the dedupe window prunes the row.
Existing rows get no digest (NULL never conflicts).

Revision ID: 0009_trust
Revises: 0008
Create Date: 2026-11-30
"""
import sqlalchemy as sa
from alembic import op

revision = "0009_trust"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("deliveries") as batch:
        batch.add_column(sa.Column("body_digest", sa.String(64), nullable=True))
    op.create_index("ux_deliveries_body_digest", "deliveries", ["source", "body_digest"], unique=True)


def downgrade() -> None:
    op.drop_index("ux_deliveries_body_digest", "deliveries")
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_column("body_digest")
