"""The kill switch's record.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29
"""
import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "kills",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("scope", sa.String(16), nullable=False),
        sa.Column("target", sa.String(512), nullable=False),
        sa.Column("actor", sa.String(128), nullable=False),
        sa.Column("reason", sa.String(500), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("lifted_at", TS, nullable=True),
        sa.Column("lifted_by", sa.String(128), nullable=True),
        sa.Column("lift_reason", sa.String(500), nullable=True),
    )
    op.create_index("ix_kills_scope_target", "kills", ["scope", "target"])


def downgrade() -> None:
    op.drop_table("kills")
