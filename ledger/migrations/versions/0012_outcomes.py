"""Operator cancel requests (who asked to cancel a run, and why), recorded before the cancel.

Revision ID: 0012_outcomes
Revises: 0009_trust
Create Date: 2026-12-02
"""
import sqlalchemy as sa
from alembic import op

revision = "0012_outcomes"
down_revision = "0009_trust"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "cancel_requests",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("work_key", sa.String(512), nullable=False),
        sa.Column("workflow_id", sa.String(600), nullable=False),
        sa.Column("run_id", sa.String(64), nullable=True),
        sa.Column("actor", sa.String(128), nullable=False),
        sa.Column("reason", sa.String(500), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error", sa.String(500), nullable=True),
    )
    op.create_index("ix_cancel_requests_work_key", "cancel_requests", ["work_key"])


def downgrade() -> None:
    op.drop_table("cancel_requests")
