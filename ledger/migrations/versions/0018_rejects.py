"""Repeats of a rejected body: the content digest of a verified delivery rejected before intake.

Revision ID: 0018_rejects
Revises: 0017_schema
Create Date: 2026-12-08

A signed body whose unsigned headers were changed (``X-GitHub-Event``, ``Content-Type``) still
verifies and is rejected at normalize, so a captured body could be replayed under new delivery
ids for a reject receipt each. The digest on the reject receipt lets the next one be answered from
it (``replayed-body``) with no row. A nullable column and its index: no existing row changes.
"""
import sqlalchemy as sa
from alembic import op

revision = "0018_rejects"
down_revision = "0017_schema"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("receipts") as batch:
        batch.add_column(sa.Column("reject_digest", sa.String(64), nullable=True))
    op.create_index("ix_receipts_reject_digest", "receipts", ["source", "reject_digest"])


def downgrade() -> None:
    op.drop_index("ix_receipts_reject_digest", "receipts")
    with op.batch_alter_table("receipts") as batch:
        batch.drop_column("reject_digest")
