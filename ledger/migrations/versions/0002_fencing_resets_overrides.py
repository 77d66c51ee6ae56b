"""Tombstones for domain resets, override notes on receipts, delivery pruning index.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""
import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("work_items") as batch:
        batch.add_column(sa.Column("reset_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("receipts") as batch:
        batch.add_column(sa.Column("override", sa.String(256), nullable=True))
    op.create_index("ix_deliveries_received_at", "deliveries", ["received_at"])
    op.create_index("ix_work_versions_status", "work_versions", ["status"])


def downgrade() -> None:
    op.drop_index("ix_work_versions_status", "work_versions")
    op.drop_index("ix_deliveries_received_at", "deliveries")
    with op.batch_alter_table("receipts") as batch:
        batch.drop_column("override")
    with op.batch_alter_table("work_items") as batch:
        batch.drop_column("reset_at")
