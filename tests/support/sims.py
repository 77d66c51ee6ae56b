"""Simulator fixtures: the forge and model simulators as real HTTP servers in this process."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import httpx
import pytest

from simulators import ServerThread
from simulators.forge import create_forge_app
from simulators.model import create_model_app
from sluicegate.config.settings import DEFAULT_CONFIG_FILE, Settings, load_settings

FORGE_TOKEN = "test-forge-token"
MODEL_KEY = "test-model-key"
HOLD_SECONDS = 300
"""How long a held model call waits when nothing releases it (longer than any test runs)."""


@dataclass
class Sims:
    forge: ServerThread
    model: ServerThread

    def forge_ctl(self, method: str, path: str, **kw) -> httpx.Response:
        r = httpx.request(method, f"{self.forge.base_url}/_sim{path}", timeout=10, **kw)
        r.raise_for_status()
        return r

    def model_ctl(self, method: str, path: str, **kw) -> httpx.Response:
        r = httpx.request(method, f"{self.model.base_url}/_sim{path}", timeout=10, **kw)
        r.raise_for_status()
        return r

    def reset(self) -> None:
        self.forge_ctl("POST", "/reset")
        self.model_ctl("POST", "/reset")

    def comments(self) -> list[dict]:
        return self.forge_ctl("GET", "/comments").json()

    def model_stats(self) -> dict:
        return self.model_ctl("GET", "/stats").json()

    def hold_model_calls(self, times: int | None = 1) -> None:
        """The next ``times`` model calls wait until :meth:`release_model_calls` (a test's event, not a
        fixed delay that a loaded machine may outrun)."""
        self.model_ctl("POST", "/faults", json={"delay_seconds": HOLD_SECONDS, "times": times})

    async def model_called(self, calls: int = 1, timeout: float = 120) -> None:
        """Until the model simulator has seen ``calls`` calls (arrived, answered or not)."""
        deadline = time.monotonic() + timeout
        while self.model_stats()["calls"] < calls:
            assert time.monotonic() < deadline, f"fewer than {calls} model calls after {timeout:.0f} s"
            await asyncio.sleep(0.05)

    def release_forge_hangs(self) -> int:
        """End the forge fault hangs and stalls under way now; how many there were."""
        return self.forge_ctl("POST", "/faults/release").json()["released"]

    def release_model_calls(self) -> int:
        """Answer the held model calls now; how many were held."""
        return self.model_ctl("POST", "/faults/release").json()["released"]


@pytest.fixture(scope="session")
def sims():
    forge = ServerThread(create_forge_app(token=FORGE_TOKEN)).start()
    model = ServerThread(create_model_app(api_key=MODEL_KEY)).start()
    yield Sims(forge, model)
    forge.stop()
    model.stop()


def settings_for(sims: Sims, ledger_url: str, **extra: str) -> Settings:
    env = {"FORGE_BASE_URL": sims.forge.base_url, "FORGE_TOKEN": FORGE_TOKEN,
           "OPENAI_BASE_URL": f"{sims.model.base_url}/v1", "OPENAI_API_KEY": MODEL_KEY,
           "SLUICEGATE_LEDGER_URL": ledger_url, "SLUICEGATE_TELEMETRY_EXPORTER": "none",
           # Most workflow tests signal orders straight in (tests/support/agent_runs.py), bypassing
           # intake; tests of the admission check (tests/security/test_forged_order.py) turn it on.
           "SLUICEGATE__TEMPORAL__REQUIRE_ADMISSION": "false", **extra}
    return load_settings(DEFAULT_CONFIG_FILE, env=env)


def fresh_ledger(sims: Sims, tmp_path) -> str:
    """Reset simulators; the URL of a new migrated SQLite ledger under ``tmp_path``."""
    import ledger

    sims.reset()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    return url


def fresh_settings(sims: Sims, tmp_path, **extra: str) -> Settings:
    """Reset simulators, a new migrated SQLite ledger under ``tmp_path``, settings pointing at both."""
    return settings_for(sims, fresh_ledger(sims, tmp_path), **extra)
