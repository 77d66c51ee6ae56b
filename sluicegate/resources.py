"""Process resources shared by the API and the worker: the ledger engine and the forge client.

Both refuse to start on a ledger whose schema is not at the expected revision.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from sqlalchemy.engine import Engine

from ledger import make_engine, require_current
from sluicegate.config import Settings
from sluicegate.forge_client import ForgeClient


def open_ledger(settings: Settings, stack: AsyncExitStack) -> Engine:
    url = settings.ledger_url()
    require_current(url)
    engine = make_engine(url)
    stack.callback(engine.dispose)
    return engine


def open_forge(settings: Settings, stack: AsyncExitStack) -> ForgeClient:
    forge = ForgeClient(settings.forge.base_url, settings.forge.token, settings.forge.timeout_seconds)
    stack.push_async_callback(forge.aclose)
    return forge
