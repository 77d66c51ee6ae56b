"""Model-response journal; reservations know their step and attempt and how they ended.

Revision ID: 0013_journal
Revises: 0010_tenancy
Create Date: 2026-12-01

``budget_reservations.id`` widens to 80 characters: ids are now ``rsv_`` + a whole SHA-256
(deterministic per attempt of a step; never truncated). The new columns are nullable:
rows written before this revision have no step, attempt, spent amount or note.
"""
import sqlalchemy as sa
from alembic import op

revision = "0013_journal"
down_revision = "0010_tenancy"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("budget_reservations") as batch:
        batch.alter_column("id", type_=sa.String(80), existing_type=sa.String(40), existing_nullable=False)
        batch.add_column(sa.Column("input_version", sa.String(128), nullable=True))
        batch.add_column(sa.Column("generation", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("step", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("attempt", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("spent_usd", sa.Float(), nullable=True))
        batch.add_column(sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("note", sa.String(), nullable=True))
    op.create_index("ix_budget_reservations_status_created", "budget_reservations", ["status", "created_at"])
    op.create_index("ix_budget_reservations_work_key", "budget_reservations", ["work_key"])
    op.create_table(
        "model_journal",
        sa.Column("work_key", sa.String(512), primary_key=True),
        sa.Column("input_version", sa.String(128), primary_key=True),
        sa.Column("generation", sa.Integer(), primary_key=True),
        sa.Column("step", sa.Integer(), primary_key=True),
        sa.Column("request_digest", sa.String(64), nullable=False),
        sa.Column("response", sa.JSON(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("reservation_id", sa.String(80), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_model_journal_created_at", "model_journal", ["created_at"])
    op.create_index("ix_model_journal_reservation", "model_journal", ["reservation_id"])


def downgrade() -> None:
    op.drop_table("model_journal")
    op.drop_index("ix_budget_reservations_work_key", "budget_reservations")
    op.drop_index("ix_budget_reservations_status_created", "budget_reservations")
    with op.batch_alter_table("budget_reservations") as batch:
        for name in ("note", "ended_at", "spent_usd", "attempt", "step", "generation", "input_version"):
            batch.drop_column(name)
        batch.alter_column("id", type_=sa.String(40), existing_type=sa.String(80), existing_nullable=False)
