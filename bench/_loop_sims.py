"""The forge and model simulators the loop bench's overhead measurement talks to, and its pull requests.

By default the dev stack's simulator processes (external services, as GitHub and the model provider
are); with ``--sims-in-process`` threads of the bench process (sharing the workers' GIL).
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from simulators import ServerThread
from simulators.forge import create_forge_app
from simulators.model import create_model_app
from sluicegate.devstack import DevStack

DIFF = ("diff --git a/src/app.py b/src/app.py\n--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,3 @@\n"
        " import os\n+import sys\n def main():\n")
FORGE_TOKEN, MODEL_KEY = "bench-forge-token", "bench-model-key"


@dataclass
class _External:
    """A simulator the dev stack runs in its own process (nothing to stop here)."""
    base_url: str

    def stop(self) -> None:
        pass


@dataclass
class Sims:
    forge: ServerThread | _External
    model: ServerThread | _External
    forge_token: str
    model_key: str

    def env(self) -> dict[str, str]:
        """The worker settings that point it at these simulators."""
        return {"FORGE_BASE_URL": self.forge.base_url, "FORGE_TOKEN": self.forge_token,
                "OPENAI_BASE_URL": f"{self.model.base_url}/v1", "OPENAI_API_KEY": self.model_key}

    def stop(self) -> None:
        self.forge.stop()
        self.model.stop()


def start_sims(stack: DevStack, in_process: bool) -> Sims:
    s = stack.settings
    if in_process:
        return Sims(ServerThread(create_forge_app(token=FORGE_TOKEN), name="bench-forge").start(),
                    ServerThread(create_model_app(api_key=MODEL_KEY), name="bench-model").start(),
                    FORGE_TOKEN, MODEL_KEY)
    sims = Sims(_External(f"http://{s.simulators.forge.host}:{s.simulators.forge.port}"),
                _External(f"http://{s.simulators.model.host}:{s.simulators.model.port}"),
                s.forge.token.get_secret_value() if s.forge.token else "", s.model.api_key.get_secret_value())
    httpx.post(f"{sims.model.base_url}/_sim/reset", timeout=10).raise_for_status()
    return sims


def open_pulls(forge_url: str, repo: str, shas: list[str]) -> None:
    """Pull requests ``bench/<repo>#1..n`` on the forge simulator, one per head sha, all with :data:`DIFF`."""
    with httpx.Client(base_url=forge_url, timeout=10) as http:
        for n, sha in enumerate(shas):
            http.post(f"/_sim/pulls/bench/{repo}/{n + 1}",
                      json={"head_sha": sha, "state": "open", "title": f"Loop bench #{n + 1}",
                            "diff": DIFF}).raise_for_status()
