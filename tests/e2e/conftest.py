"""End-to-end fixtures: the whole stack as subprocesses on free ports, state in a temp dir."""

from __future__ import annotations

import pytest

from sluicegate.devstack import DevStack, StackHttp, isolated_overrides

__all__ = ["StackHttp", "stack_factory"]


@pytest.fixture
def postgres_ledger(request: pytest.FixtureRequest) -> str:
    """A fresh, empty PostgreSQL database for one stack (the stack migrates it); dropped after.
    Skipped (or failed under SLUICEGATE_REQUIRE_POSTGRES=1) like the ``postgres_url`` fixture."""
    import psycopg

    from tests.conftest import _postgres_admin_url

    request.getfixturevalue("postgres_url")  # skips (or fails) when PostgreSQL is unreachable
    admin = _postgres_admin_url()
    name = f"sluicegate_e2e_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield admin.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def stack_factory(tmp_path):
    stacks: list[DevStack] = []

    def make(**overrides: str) -> DevStack:
        env = {**isolated_overrides(tmp_path), "SLUICEGATE_TELEMETRY_EXPORTER": "file", **overrides}
        stack = DevStack(env, headless=True, log_dir=tmp_path / "logs").start()
        stacks.append(stack)
        return stack

    yield make
    for stack in stacks:
        stack.stop()
        assert stack.leftover() == [], "processes left running after stop"
