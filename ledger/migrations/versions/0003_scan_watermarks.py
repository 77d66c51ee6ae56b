"""Scan watermarks: per scan and repository, the newest pull request update already decided.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""
import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "scan_watermarks",
        sa.Column("scan_id", sa.String(128), primary_key=True),
        sa.Column("repo", sa.String(256), primary_key=True),
        sa.Column("updated_at", TS, nullable=False),
        sa.Column("boundary", sa.JSON(), nullable=False),
        sa.Column("recorded_at", TS, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("scan_watermarks")
