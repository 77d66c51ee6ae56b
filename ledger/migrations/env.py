"""Alembic environment for the ledger; the URL comes from the caller's Config."""

from alembic import context
from sqlmodel import SQLModel

from ledger import _models  # noqa: F401  (registers the tables on SQLModel.metadata)
from ledger import _budgets, _cancels, _capacity_models, _credentials, _dead_letters, _kills, _watermarks  # noqa: F401  (every table module)
from ledger import _model_journal  # noqa: F401  (the model-response journal)
from ledger._engine import make_engine

target_metadata = SQLModel.metadata


def run_migrations_online() -> None:
    url = context.config.get_main_option("sqlalchemy.url")
    if url is None:
        raise RuntimeError("sqlalchemy.url is not set (ledger._migrate sets it)")
    engine = make_engine(url)
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    context.configure(url=context.config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata,
                      literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()
