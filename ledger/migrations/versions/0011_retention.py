"""Retention: when a capacity counter was last used, and indexes the prune schedule filters on.

Revision ID: 0011_retention
Revises: 0012_outcomes
Create Date: 2026-11-30
"""
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0011_retention"
down_revision = "0012_outcomes"
branch_labels = None
depends_on = None

# table -> (index name, column) the prune rules select by age on
INDEXES = {
    "side_effects": ("ix_side_effects_updated_at", "updated_at"),
    "credentials": ("ix_credentials_expires_at", "expires_at"),
    "budget_reservations": ("ix_budget_reservations_created_at", "created_at"),
    "deferred_items": ("ix_deferred_updated_at", "updated_at"),
    "dead_letters": ("ix_dead_letters_created_at", "created_at"),
}


def upgrade() -> None:
    op.add_column("capacity_counters", sa.Column("updated_at", sa.DateTime(timezone=True), nullable=True))
    counters = sa.table("capacity_counters", sa.column("updated_at", sa.DateTime(timezone=True)))
    op.execute(counters.update().values(updated_at=datetime.now(UTC)))  # existing counters start their idle clock now
    for table, (name, column) in INDEXES.items():
        op.create_index(name, table, [column])


def downgrade() -> None:
    for table, (name, _) in INDEXES.items():
        op.drop_index(name, table_name=table)
    with op.batch_alter_table("capacity_counters") as batch:
        batch.drop_column("updated_at")
