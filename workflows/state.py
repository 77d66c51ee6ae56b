"""Versioned hand-over state of the agent workflow (continue-as-new), pure.

A state written by a newer schema is refused with a clear error — never misread by older
code. An older one is migrated step by step; each migration is a function from version N
to N+1 registered in ``MIGRATIONS``. Bump ``STATE_SCHEMA_VERSION`` in contracts.py and add
a migration whenever ``AgentLoopState`` changes meaning.
"""

from __future__ import annotations

from typing import Callable

from sluicegate.errors import SluicegateError
from workflows.contracts import STATE_SCHEMA_VERSION, AgentLoopState

MIGRATIONS: dict[int, Callable[[AgentLoopState], AgentLoopState]] = {}
"""version N -> function producing version N+1."""


class StateSchemaError(SluicegateError):
    """The carried state cannot be read by this code."""


def upgrade_state(state: AgentLoopState) -> AgentLoopState:
    if state.schema_version > STATE_SCHEMA_VERSION:
        raise StateSchemaError(f"state schema {state.schema_version} is newer than this worker's "
                               f"{STATE_SCHEMA_VERSION}: deploy the newer worker, do not run it here")
    while state.schema_version < STATE_SCHEMA_VERSION:
        migrate = MIGRATIONS.get(state.schema_version)
        if migrate is None:
            raise StateSchemaError(f"no migration from state schema {state.schema_version}")
        state = migrate(state)
    return state
