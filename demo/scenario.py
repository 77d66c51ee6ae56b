"""The demo's delivery stream: realistic pull-request webhooks, a manual trigger, and what
each should come to. Shared by ``make demo`` and the end-to-end test.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

from demo.github_payloads import delivery_headers, encode, pull_request_payload
from intake.envelope import PullRequestRef
from intake.identity import review_work_key
from sluicegate.config.settings import Settings


@dataclass
class Sent:
    """One delivery as sent and as answered."""

    label: str
    delivery_id: str
    work_key: str | None
    version: str | None
    expect: tuple[str, str]
    status: int
    answer: dict[str, Any] = field(default_factory=dict)

    @property
    def got(self) -> tuple[str, str]:
        return (self.answer.get("outcome", "?"), self.answer.get("reason", "?"))

    @property
    def unauthenticated(self) -> bool:
        """Refused before its sender was authenticated: counted, never recorded (no receipt)."""
        return self.expect[1] in UNAUTHENTICATED_REASONS


class DemoDriver:
    """Talks to the webhook API and to the forge simulator's control API."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        api = settings.webhook_api
        self.api = httpx.Client(base_url=f"http://{api.host}:{api.port}", timeout=30)
        forge = settings.simulators.forge
        self.forge = httpx.Client(base_url=f"http://{forge.host}:{forge.port}", timeout=30,
                                  headers={"Authorization": f"Bearer {settings.forge.token.get_secret_value()}"})
        model = settings.simulators.model
        self.model = httpx.Client(base_url=f"http://{model.host}:{model.port}", timeout=30)
        self.secret = settings.sources["github"].secret
        self.sent: list[Sent] = []

    def close(self) -> None:
        self.api.close()
        self.forge.close()
        self.model.close()

    def model_latency(self, seconds: float) -> None:
        """Make every model answer take ``seconds``, like a real provider (the simulator is instant)."""
        self.model.post("/_sim/faults", json={"delay_seconds": seconds, "times": None}).raise_for_status()

    def head(self, repo: str, number: int) -> str:
        return self.forge.get(f"/repos/{repo}/pulls/{number}").raise_for_status().json()["head"]["sha"]

    def push(self, repo: str, number: int, sha: str) -> None:
        self.forge.post(f"/_sim/pulls/{repo}/{number}", json={"head_sha": sha}).raise_for_status()

    def webhook(self, label: str, repo: str, number: int, sha: str, action: str, expect: tuple[str, str], *,
                delivery_id: str | None = None, secret: str | None = None) -> Sent:
        owner, name = repo.split("/")
        body = encode(pull_request_payload(owner, name, number, sha, action=action))
        delivery_id = delivery_id or str(uuid.uuid4())
        headers = delivery_headers(secret or self.secret, body, delivery_id=delivery_id)
        r = self.api.post("/webhooks/github", content=body, headers=headers)
        return self._record(label, delivery_id, self._key(self.settings.sources["github"].tenant, repo, number), sha,
                            expect, r)

    def manual(self, label: str, repo: str, number: int, actor: str, expect: tuple[str, str]) -> Sent:
        request_id = f"manual-{uuid.uuid4()}"
        token = self.settings.actors[actor].token.get_secret_value()
        r = self.api.post("/v1/triggers/manual", headers={"Authorization": f"Bearer {token}"},
                          json={"repository": repo, "number": number, "request_id": request_id,
                                "reason": "operator asked for a review of a PR whose webhook never arrived"})
        [tenant] = self.settings.actors[actor].tenants  # a one-tenant actor: its tenant is implied
        delivery_id = f"{tenant}:{request_id}"  # manual request ids are recorded per tenant
        return self._record(label, delivery_id, self._key(tenant, repo, number), r.json().get("input_version"),
                            expect, r)

    @staticmethod
    def _key(tenant: str, repo: str, number: int) -> str:
        owner, name = repo.split("/")
        return review_work_key(tenant, PullRequestRef(owner, name, number))

    def _record(self, label, delivery_id, work_key, version, expect, r: httpx.Response) -> Sent:
        sent = Sent(label, delivery_id, work_key, version, expect, r.status_code, r.json())
        self.sent.append(sent)
        return sent


UNAUTHENTICATED_REASONS = frozenset({"bad-signature", "unauthorized-actor"})
NEW_HEAD_42 = "5c1e6b2d9a8f4e3c7b0a1d2e3f405162738495a6"
PASSED_HEAD_42 = "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"
"""A head acme/api#42 had between its first head and the push, never admitted: its late delivery is
read from the forge and refused ``stale-version`` (a late delivery for an *admitted* head is
``duplicate-work`` from the ledger, with no forge read, or ``stale-version`` once superseded)."""
OUT_OF_SCOPE_REPO = "globex/site"
"""A repository the ``github`` source does not serve (it serves ``acme/*``): refused before any forge read."""

# One run at a time per repository, so the stream shows capacity at work: the manual trigger
# for acme/api#44 arrives while acme/api#42 is running, is deferred into the queue, and is
# admitted by the dispatcher when #42's run ends (acme/web is another repository: not held).
DEMO_OVERRIDES = {"SLUICEGATE__CAPACITY__CONCURRENCY_LIMIT": "1"}


def play(driver: DemoDriver) -> list[Sent]:
    """Send the demo stream; returns every delivery with its answer."""
    d = driver
    d.model_latency(0.4)  # acme/api#42's run is still going when the manual trigger for #44 arrives
    api42, web7, api43, api44 = (d.head("acme/api", 42), d.head("acme/web", 7), d.head("acme/api", 43),
                                 d.head("acme/api", 44))
    first = d.webhook("PR acme/api#42 opened", "acme/api", 42, api42, "opened", ("accept", "admitted"))
    d.webhook("PR acme/web#7 opened", "acme/web", 7, web7, "opened", ("accept", "admitted"))
    d.webhook("redelivery of the first delivery", "acme/api", 42, api42, "opened",
              ("reject", "duplicate-delivery"), delivery_id=first.delivery_id)
    d.webhook("second delivery, same head sha", "acme/api", 42, api42, "ready_for_review",
              ("reject", "duplicate-work"))
    d.push("acme/api", 42, NEW_HEAD_42)
    d.webhook("push to acme/api#42 (synchronize)", "acme/api", 42, NEW_HEAD_42, "synchronize",
              ("accept", "admitted"))
    d.webhook("late delivery for a sha the PR has moved past", "acme/api", 42, PASSED_HEAD_42, "synchronize",
              ("reject", "stale-version"))
    d.webhook("event for closed PR acme/api#43", "acme/api", 43, api43, "reopened", ("reject", "target-closed"))
    d.webhook("bad signature", "acme/api", 44, api44, "opened", ("reject", "bad-signature"),
              secret="not-the-secret")
    d.webhook(f"signed, but {OUT_OF_SCOPE_REPO} is not served by this source", OUT_OF_SCOPE_REPO, 1, api44, "opened",
              ("reject", "out-of-scope"))
    d.manual("manual trigger by alice (acme/api is busy)", "acme/api", 44, "alice", ("defer", "capacity"))
    return d.sent
