"""Capacity: slot counters and holds, day quotas, rate buckets, deferred queue, breakers.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-29
"""
import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def _ts(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "capacity_counters",
        sa.Column("key", sa.String(600), primary_key=True),
        sa.Column("active", sa.Integer(), nullable=False),
    )
    op.create_table(
        "capacity_holds",
        sa.Column("work_key", sa.String(512), primary_key=True),
        sa.Column("slot_key", sa.String(600), primary_key=True),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        _ts("acquired_at"),
    )
    op.create_index("ix_capacity_holds_slot", "capacity_holds", ["slot_key"])
    op.create_table(
        "admission_counts",
        sa.Column("tenant", sa.String(128), primary_key=True),
        sa.Column("day", sa.String(10), primary_key=True),
        sa.Column("count", sa.Integer(), nullable=False),
    )
    op.create_table(
        "rate_buckets",
        sa.Column("key", sa.String(300), primary_key=True),
        sa.Column("tokens", sa.Float(), nullable=False),
        _ts("updated_at"),
    )
    op.create_table(
        "deferred_items",
        sa.Column("id", sa.String(40), primary_key=True),
        _ts("enqueued_at"),
        _ts("updated_at"),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("source", sa.String(128), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("work_key", sa.String(512), nullable=False),
        sa.Column("input_version", sa.String(128), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("blocked_on", sa.String(32), nullable=False),
        sa.Column("blocked_key", sa.String(600), nullable=True),
        _ts("next_attempt_at"),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.String(), nullable=True),
        sa.Column("receipt_id", sa.String(40), nullable=False),
        sa.Column("final_receipt_id", sa.String(40), nullable=True),
        sa.Column("payload", sa.JSON(), nullable=False),
    )
    op.create_index("ix_deferred_status_due", "deferred_items", ["status", "next_attempt_at"])
    op.create_index("ix_deferred_work_key", "deferred_items", ["work_key", "status"])
    op.create_index("ix_deferred_tenant", "deferred_items", ["tenant", "status"])
    op.create_table(
        "breakers",
        sa.Column("provider", sa.String(128), primary_key=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        _ts("window_start", nullable=True),
        _ts("opened_at", nullable=True),
        sa.Column("last_error", sa.String(), nullable=True),
        _ts("updated_at"),
    )


def downgrade() -> None:
    for table in ("breakers", "deferred_items", "rate_buckets", "admission_counts", "capacity_holds",
                  "capacity_counters"):
        op.drop_table(table)
