"""The demo's delivery stream: realistic pull-request webhooks, a manual trigger, issue-triage
deliveries, and what each should come to. Shared by ``make demo`` and the end-to-end test.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlmodel import Session, select

from demo.github_payloads import delivery_headers, encode, issues_payload, pull_request_payload
from intake.envelope import PullRequestRef
from intake.identity import review_work_key
from ledger import WorkVersion, make_engine
from sluicegate.config.settings import Settings
from tasks.triage.target import triage_work_key
from workflows.contracts import RunStatus


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

    def issue(self, repo: str, number: int, **changes: Any) -> dict[str, Any]:
        """Create or edit an issue on the forge (its control API, as a person would on GitHub)."""
        return self.forge.post(f"/_sim/issues/{repo}/{number}", json=changes).raise_for_status().json()

    def edit_issue(self, repo: str, number: int, **changes: Any) -> dict[str, Any]:
        """A real edit: ``updated_at`` moves strictly past whatever the issue carries now (our own labels
        and comment included), so the edit is a version of its own."""
        now = self.forge.get(f"/_sim/issues/{repo}/{number}").raise_for_status().json()["updated_at"]
        later = max(datetime.now(UTC), datetime.fromisoformat(now.replace("Z", "+00:00")) + timedelta(seconds=1))
        return self.issue(repo, number, **changes, updated_at=later.strftime("%Y-%m-%dT%H:%M:%SZ"))

    def issue_webhook(self, label: str, repo: str, issue: dict[str, Any], action: str, expect: tuple[str, str], *,
                      delivery_id: str | None = None) -> Sent:
        """A signed ``issues`` delivery carrying ``issue`` as the forge stored it (``issue()``)."""
        owner, name = repo.split("/")
        body = encode(issues_payload(owner, name, issue["number"], issue["updated_at"], action, title=issue["title"],
                                     body=issue["body"], state=issue["state"], labels=tuple(issue["labels"])))
        delivery_id = delivery_id or str(uuid.uuid4())
        headers = delivery_headers(self.secret, body, event="issues", delivery_id=delivery_id)
        r = self.api.post("/webhooks/github", content=body, headers=headers)
        key = triage_work_key(self.settings.sources["github"].tenant, PullRequestRef(owner, name, issue["number"]))
        return self._record(label, delivery_id, key, issue["updated_at"], expect, r)

    def wait_finished(self, sent: Sent, timeout: float = 90.0) -> None:
        """Until the run ``sent`` admitted has ended (so nothing of it touches its target any more)."""
        engine = make_engine(self.settings.ledger_url())
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                with Session(engine) as s:
                    status = s.exec(select(WorkVersion.status).where(WorkVersion.work_key == sent.work_key,
                                                                     WorkVersion.input_version == sent.version)).first()
                if status in frozenset(RunStatus):
                    return
                time.sleep(0.25)
        finally:
            engine.dispose()
        raise TimeoutError(f"{sent.label}: its run did not end within {timeout:.0f}s")

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
TRIAGE_REPO = "acme/docs"
"""Issues live in a repository of their own (created on the forge by the demo), so their runs never wait
for acme/api's one slot and the stream above keeps its timing."""


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
    play_issues(d)
    return d.sent


def play_issues(d: DemoDriver) -> None:
    """Issue triage: an issue opened (and redelivered), then really edited, and a closed one."""
    issue = d.issue(TRIAGE_REPO, 1, title="Docs build crashes with a traceback",
                    body="`make docs` fails with a KeyError traceback since the last release.", state="open")
    opened = d.issue_webhook(f"issue {TRIAGE_REPO}#1 opened", TRIAGE_REPO, issue, "opened", ("accept", "admitted"))
    d.issue_webhook("redelivery of the issue delivery", TRIAGE_REPO, issue, "opened",
                    ("reject", "duplicate-delivery"), delivery_id=opened.delivery_id)
    d.wait_finished(opened)  # its labels and comment moved updated_at; the edit comes after them
    edited = d.edit_issue(TRIAGE_REPO, 1, title="Docs build crashes: how do I pin the theme?")
    d.issue_webhook(f"issue {TRIAGE_REPO}#1 edited (newer updated_at)", TRIAGE_REPO, edited, "edited",
                    ("accept", "admitted"))
    closed = d.issue(TRIAGE_REPO, 2, title="Typo in the README", body="teh -> the", state="closed")
    d.issue_webhook(f"event for closed issue {TRIAGE_REPO}#2", TRIAGE_REPO, {**closed, "state": "open"},
                    "reopened", ("reject", "target-closed"))
