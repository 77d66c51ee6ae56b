"""End-to-end fixtures: the whole stack as subprocesses on free ports, state in a temp dir."""

from __future__ import annotations

import uuid

import httpx
import pytest

from demo.github_payloads import delivery_headers, encode, pull_request_payload

from sluicegate.devstack import DevStack, isolated_overrides


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


class StackHttp:
    """The HTTP faces of a running stack: the API, the forge and model simulators."""

    def __init__(self, stack: DevStack) -> None:
        s = stack.settings
        self.settings = s
        self.api = f"http://{s.webhook_api.host}:{s.webhook_api.port}"
        self.forge = f"http://{s.simulators.forge.host}:{s.simulators.forge.port}"
        self.model = f"http://{s.simulators.model.host}:{s.simulators.model.port}"

    def head(self, repo: str, number: int) -> str:
        r = httpx.get(f"{self.forge}/repos/{repo}/pulls/{number}",
                      headers={"Authorization": f"Bearer {self.settings.forge.token}"})
        return r.raise_for_status().json()["head"]["sha"]

    def send_opened(self, repo: str, number: int, sha: str | None = None) -> httpx.Response:
        """A signed GitHub ``pull_request`` ``opened`` delivery for the PR's current (or given) head."""
        owner, name = repo.split("/")
        body = encode(pull_request_payload(owner, name, number, sha or self.head(repo, number)))
        return httpx.post(f"{self.api}/webhooks/github", content=body, timeout=30,
                          headers=delivery_headers(self.settings.sources["github"].secret, body,
                                                   delivery_id=str(uuid.uuid4())))

    def model_fault(self, **fault) -> None:
        httpx.post(f"{self.model}/_sim/faults", json=fault).raise_for_status()

    def comments(self) -> list[dict]:
        return httpx.get(f"{self.forge}/_sim/comments").json()
