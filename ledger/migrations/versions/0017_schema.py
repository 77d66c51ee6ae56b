"""Kept deliveries: raw bodies of verified deliveries rejected ``unsupported-schema``, for replay.

Revision ID: 0017_schema
Revises: 0016_identity
Create Date: 2026-12-01

A new table only (``ledger/_kept.py``); no existing row changes, so the revision can be chained
after any other: re-chaining it changes nothing but ``down_revision``.
"""
import sqlalchemy as sa
from alembic import op

revision = "0017_schema"
down_revision = "0016_identity"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "kept_deliveries",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("source", sa.String(length=128), nullable=False),
        sa.Column("delivery_id", sa.String(length=256), nullable=False),
        sa.Column("tenant", sa.String(length=128), nullable=False),
        sa.Column("event_type", sa.String(length=128), nullable=True),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("receipt_id", sa.String(length=40), nullable=False),
        sa.Column("key_id", sa.String(length=16), nullable=True),
        sa.Column("meta", sa.LargeBinary(), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("size_bytes", sa.Integer(), nullable=False),
        sa.Column("replay_receipt_id", sa.String(length=40), nullable=True),
        sa.Column("replayed_by", sa.String(length=128), nullable=True),
        sa.Column("replayed_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("source", "delivery_id", name="uq_kept_deliveries_delivery"),
    )
    op.create_index("ix_kept_deliveries_created_at", "kept_deliveries", ["created_at"])
    op.create_index("ix_kept_deliveries_delivery_id", "kept_deliveries", ["delivery_id"])


def downgrade() -> None:
    op.drop_index("ix_kept_deliveries_delivery_id", table_name="kept_deliveries")
    op.drop_index("ix_kept_deliveries_created_at", table_name="kept_deliveries")
    op.drop_table("kept_deliveries")
