"""Day budgets per tenant and global, and their reservations.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-29
"""
import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "budget_days",
        sa.Column("scope", sa.String(160), primary_key=True),
        sa.Column("day", sa.String(10), primary_key=True),
        sa.Column("limit_usd", sa.Float(), nullable=False),
        sa.Column("reserved_usd", sa.Float(), nullable=False),
        sa.Column("spent_usd", sa.Float(), nullable=False),
    )
    op.create_table(
        "budget_reservations",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("day", sa.String(10), nullable=False),
        sa.Column("scopes", sa.String(400), nullable=False),
        sa.Column("amount_usd", sa.Float(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("work_key", sa.String(512), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("budget_reservations")
    op.drop_table("budget_days")
