"""Initial ledger: receipts, deliveries, work items and versions, side effects.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""
import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "receipts",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("reason", sa.String(64), nullable=False),
        sa.Column("message", sa.String(), nullable=False),
        sa.Column("retry_after_seconds", sa.Float(), nullable=True),
        sa.Column("trigger_kind", sa.String(16), nullable=False),
        sa.Column("source", sa.String(128), nullable=False),
        sa.Column("delivery_id", sa.String(256), nullable=True),
        sa.Column("event_type", sa.String(128), nullable=True),
        sa.Column("subject", sa.String(512), nullable=True),
        sa.Column("emitted_at", TS, nullable=True),
        sa.Column("received_at", TS, nullable=False),
        sa.Column("actor", sa.String(128), nullable=True),
        sa.Column("tenant", sa.String(128), nullable=True),
        sa.Column("work_key", sa.String(512), nullable=True),
        sa.Column("target_id", sa.String(512), nullable=True),
        sa.Column("input_version", sa.String(128), nullable=True),
        sa.Column("policy_version", sa.String(64), nullable=True),
        sa.Column("workflow_id", sa.String(600), nullable=True),
        sa.Column("run_id", sa.String(64), nullable=True),
        sa.Column("generation", sa.Integer(), nullable=True),
        sa.Column("operation_keys", sa.JSON(), nullable=False),
        sa.Column("external_ids", sa.JSON(), nullable=False),
    )
    op.create_index("ix_receipts_work_key", "receipts", ["work_key"])
    op.create_index("ix_receipts_delivery", "receipts", ["source", "delivery_id"])
    op.create_index("ix_receipts_created_at", "receipts", ["created_at"])
    op.create_table(
        "deliveries",
        sa.Column("source", sa.String(128), primary_key=True),
        sa.Column("delivery_id", sa.String(256), primary_key=True),
        sa.Column("received_at", TS, nullable=False),
        sa.Column("receipt_id", sa.String(40), nullable=False),
    )
    op.create_table(
        "work_items",
        sa.Column("work_key", sa.String(512), primary_key=True),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("target_id", sa.String(512), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("current_version", sa.String(128), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("workflow_id", sa.String(600), nullable=True),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_table(
        "work_versions",
        sa.Column("work_key", sa.String(512), primary_key=True),
        sa.Column("input_version", sa.String(128), primary_key=True),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("receipt_id", sa.String(40), nullable=False),
        sa.Column("workflow_id", sa.String(600), nullable=True),
        sa.Column("run_id", sa.String(64), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_table(
        "side_effects",
        sa.Column("operation_key", sa.String(128), primary_key=True),
        sa.Column("work_key", sa.String(512), nullable=False),
        sa.Column("operation", sa.String(128), nullable=False),
        sa.Column("target_version", sa.String(128), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("external_id", sa.String(256), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("error", sa.String(), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_index("ix_side_effects_work_key", "side_effects", ["work_key"])


def downgrade() -> None:
    for table in ("side_effects", "work_versions", "work_items", "deliveries", "receipts"):
        op.drop_table(table)
