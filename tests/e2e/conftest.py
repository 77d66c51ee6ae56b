"""End-to-end fixtures: the whole stack as subprocesses on free ports, state in a temp dir."""

from __future__ import annotations

import pytest

from sluicegate.devstack import DevStack, StackHttp, start_isolated

__all__ = ["StackHttp", "stack_factory"]


@pytest.fixture
def postgres_ledger() -> str:
    """A fresh, empty PostgreSQL database for one stack (the stack migrates it); dropped after.
    Skipped (or failed under SLUICEGATE_REQUIRE_POSTGRES=1) when PostgreSQL is unreachable."""
    from tests.support.postgres import create_database, drop_database

    name, url = create_database("sluicegate_e2e")
    yield url
    drop_database(name)


@pytest.fixture
def stack_factory(tmp_path):
    stacks: list[DevStack] = []

    def make(**overrides: str) -> DevStack:
        stack = start_isolated(tmp_path, {"SLUICEGATE_TELEMETRY_EXPORTER": "file", **overrides},
                               headless=True, log_dir=tmp_path / "logs")
        stacks.append(stack)
        return stack

    yield make
    for stack in stacks:
        stack.stop()
        assert stack.leftover() == [], "processes left running after stop"
        # SIGTERM is a clean stop for the webhook API (uvicorn on uvloop: it drains, flushes its spans and
        # metrics, exits 0); a SIGKILL after the 10 s grace, or a crash on the way out, shows here
        api = stack.processes.get("webhook-api")
        if api is not None and api.proc is not None and not api.killed:
            assert api.proc.returncode == 0, f"webhook API exited {api.proc.returncode} on SIGTERM:\n{api.tail()}"
