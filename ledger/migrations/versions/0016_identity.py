"""The whole identity bundle on receipts and side effects.

Revision ID: 0016_identity
Revises: 0015_trustfix
Create Date: 2026-12-01

``receipts`` gain the concurrency key the admission was planned under and the activity attempt
that wrote the receipt (receipts written from an activity: scans, goals, the deferred-queue
dispatcher). ``side_effects`` gain the workflow id, run id and activity attempt of the attempt
that last claimed the operation, and the admission's concurrency key and policy version. Every
new column is nullable: rows written before this revision do not know them.
"""
import sqlalchemy as sa
from alembic import op

revision = "0016_identity"
down_revision = "0015_trustfix"
branch_labels = None
depends_on = None

_SIDE_EFFECT_COLUMNS = (
    ("workflow_id", sa.String(600)), ("run_id", sa.String(64)), ("activity_attempt", sa.Integer()),
    ("concurrency_key", sa.String(600)), ("policy_version", sa.String(64)),
)


def upgrade() -> None:
    with op.batch_alter_table("receipts") as batch:
        batch.add_column(sa.Column("concurrency_key", sa.String(600), nullable=True))
        batch.add_column(sa.Column("activity_attempt", sa.Integer(), nullable=True))
    with op.batch_alter_table("side_effects") as batch:
        for name, type_ in _SIDE_EFFECT_COLUMNS:
            batch.add_column(sa.Column(name, type_, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("side_effects") as batch:
        for name, _ in reversed(_SIDE_EFFECT_COLUMNS):
            batch.drop_column(name)
    with op.batch_alter_table("receipts") as batch:
        batch.drop_column("activity_attempt")
        batch.drop_column("concurrency_key")
