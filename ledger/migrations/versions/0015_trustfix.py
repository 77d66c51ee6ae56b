"""Per-version re-admission count.

Revision ID: 0015_trustfix
Revises: 0014_durable
Create Date: 2026-11-30

``work_versions.readmissions`` counts how often a version that had ended was admitted again
(a forced re-run, a requeue, a failed version triggered anew); intake refuses
``readmission-limit`` past ``intake.max_readmissions_per_version``. Existing rows start at 0.
"""
import sqlalchemy as sa
from alembic import op

revision = "0015_trustfix"
down_revision = "0014_durable"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("work_versions") as batch:
        batch.add_column(sa.Column("readmissions", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("work_versions") as batch:
        batch.drop_column("readmissions")
