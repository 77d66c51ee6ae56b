"""The HTTP faces of a running dev stack: the webhook API, the forge and model simulators.

Used by the end-to-end tests and the drills to send signed deliveries and to inject faults;
every call has a timeout, and a simulator that refuses a control request raises.
"""

from __future__ import annotations

import uuid

import httpx

from demo.github_payloads import delivery_headers, encode, pull_request_payload
from sluicegate.devstack._stack import DevStack


class StackHttp:
    def __init__(self, stack: DevStack) -> None:
        s = stack.settings
        self.settings = s
        self.api = f"http://{s.webhook_api.host}:{s.webhook_api.port}"
        self.forge = f"http://{s.simulators.forge.host}:{s.simulators.forge.port}"
        self.model = f"http://{s.simulators.model.host}:{s.simulators.model.port}"

    def _forge_token(self) -> str:
        token = self.settings.forge.token
        if token is None:  # an App-mode stack mints installation tokens; these helpers read as a static user
            raise RuntimeError("the dev stack's forge has no static token (forge.token); StackHttp needs one")
        return token.get_secret_value()

    def head(self, repo: str, number: int) -> str:
        r = httpx.get(f"{self.forge}/repos/{repo}/pulls/{number}",
                      headers={"Authorization": f"Bearer {self._forge_token()}"}, timeout=10)
        return r.raise_for_status().json()["head"]["sha"]

    def send_opened(self, repo: str, number: int, sha: str | None = None, action: str = "opened",
                    source: str = "github") -> httpx.Response:
        """A signed GitHub ``pull_request`` delivery (``opened`` by default) for the PR's current (or given)
        head, through webhook source ``source`` (its secret; so its tenant and declared repositories)."""
        owner, name = repo.split("/")
        body = encode(pull_request_payload(owner, name, number, sha or self.head(repo, number), action=action))
        return httpx.post(f"{self.api}/webhooks/{source}", content=body, timeout=30,
                          headers=delivery_headers(self.settings.sources[source].secret, body,
                                                   delivery_id=str(uuid.uuid4())))

    def put_pull(self, repo: str, number: int, head_sha: str) -> None:
        """Create the pull request in the forge simulator, or move its head."""
        httpx.post(f"{self.forge}/_sim/pulls/{repo}/{number}", timeout=10, json={
            "state": "open", "head_sha": head_sha,
            "diff": f"diff --git a/f{number} b/f{number}\n+{head_sha[:8]}\n"}).raise_for_status()

    def model_fault(self, **fault) -> None:
        httpx.post(f"{self.model}/_sim/faults", json=fault, timeout=10).raise_for_status()

    def clear_model_faults(self) -> None:
        httpx.delete(f"{self.model}/_sim/faults", timeout=10).raise_for_status()

    def release_model_delays(self) -> int:
        """End the fault delays model calls are waiting out now (``POST /_sim/faults/release``)."""
        return httpx.post(f"{self.model}/_sim/faults/release", timeout=10).raise_for_status().json()["released"]

    def model_stats(self) -> dict:
        return httpx.get(f"{self.model}/_sim/stats", timeout=10).json()

    def forge_reads(self, repo: str) -> int:
        """API requests the forge simulator has seen for ``repo`` (answered or refused)."""
        return httpx.get(f"{self.forge}/_sim/stats", timeout=10).json()["by_repository"].get(repo.lower(), 0)

    def comments(self) -> list[dict]:
        return httpx.get(f"{self.forge}/_sim/comments", timeout=10).json()
