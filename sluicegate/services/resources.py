"""Process resources shared by the API and the worker: the ledger engine and the forge client.

Both refuse to start on a ledger whose schema is not at the expected revision.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from sqlalchemy.engine import Engine

from ledger import make_engine, require_current
from sluicegate.config.settings import Settings
from sluicegate.services.forge_credentials import credentials_from_settings
from sluicegate.forge.client import ForgeClient


def open_ledger(settings: Settings, stack: AsyncExitStack) -> Engine:
    url = settings.ledger_url()
    require_current(url)
    engine = make_engine(url)
    stack.callback(engine.dispose)
    return engine


def open_forge(settings: Settings, stack: AsyncExitStack) -> ForgeClient:
    """The forge client; with ``forge.app`` every call gets a repository-scoped installation token."""
    forge = ForgeClient(settings.forge.base_url, timeout_seconds=settings.forge.timeout_seconds,
                        credentials=credentials_from_settings(settings))
    stack.push_async_callback(forge.aclose)
    return forge
