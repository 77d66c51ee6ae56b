"""Dead letters.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-29
"""
import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "dead_letters",
        sa.Column("id", sa.String(80), primary_key=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("work_key", sa.String(512), nullable=False),
        sa.Column("input_version", sa.String(128), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("source", sa.String(128), nullable=False),
        sa.Column("owner", sa.String(128), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.String(), nullable=False),
        sa.Column("last_error", sa.String(), nullable=True),
        sa.Column("retries", sa.Integer(), nullable=False),
        sa.Column("workflow_id", sa.String(600), nullable=True),
        sa.Column("run_id", sa.String(64), nullable=True),
        sa.Column("operation_keys", sa.JSON(), nullable=False),
        sa.Column("note", sa.String(), nullable=True),
    )
    op.create_index("ix_dead_letters_status", "dead_letters", ["status"])


def downgrade() -> None:
    op.drop_table("dead_letters")
