"""A real stack for the browser tests, filled through its front door.

Two tenants (``tests.support.tenants``): acme and beta, beta with a day quota of two
admissions so later beta work waits in the deferred queue (a quota deferral waits until the
next UTC day: the queue page has rows whatever the timing). Everything below is sent as signed
webhook deliveries to the API process, with model faults injected through the model simulator;
the worker runs the reviews for real.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

import httpx
from sqlmodel import Session, select

import ledger
from sluicegate.devstack import DevStack, StackHttp, isolated_overrides
from tests.support.tenants import BETA_SOURCE, two_tenants
from workflows.contracts import RunStatus

BETA_QUOTA = 2
SETTLED = {str(s) for s in RunStatus}


@dataclass
class Filled:
    stack: DevStack
    web: StackHttp
    done_keys: list[str] = field(default_factory=list)
    failed_keys: list[str] = field(default_factory=list)
    queued_keys: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.stack.settings.ledger_url()

    def engine(self):
        return ledger.make_engine(self.url)


def start(run_dir) -> DevStack:
    env = {**isolated_overrides(run_dir), **two_tenants(), "SLUICEGATE_TELEMETRY_EXPORTER": "none",
           f"SLUICEGATE__CAPACITY__TENANTS__{BETA_SOURCE.upper()}": f'{{"admissions_per_day": {BETA_QUOTA}}}'}
    return DevStack(env, headless=True, log_dir=run_dir / "logs").start()


def wait_settled(url: str, timeout: float = 120) -> None:
    """Until every version admitted so far has an outcome (queued work may keep waiting)."""
    engine = ledger.make_engine(url)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            with Session(engine) as s:
                open_ = s.exec(select(ledger.WorkVersion).where(
                    ledger.WorkVersion.status.in_(("accepted", "admitted")))).first()
            if open_ is None:
                return
            time.sleep(0.4)
        raise AssertionError("runs did not finish in time")
    finally:
        engine.dispose()


def _pull(web: StackHttp, repo: str, number: int) -> str:
    sha = uuid.uuid4().hex + "00000000"
    web.put_pull(repo, number, sha)
    return sha


def fill(stack: DevStack) -> Filled:
    web = StackHttp(stack)
    filled = Filled(stack, web)
    for repo, number in (("acme/api", 42), ("acme/web", 7)):
        sha = _pull(web, repo, number)
        assert web.send_opened(repo, number, sha).status_code == 202
        filled.done_keys.append(f"acme/github:{repo}#{number}:review")
    # The same version again in another event (an identical body would be a replay, answered with the
    # first receipt and no row of its own): duplicate-work, with a receipt.
    dup = web.send_opened("acme/api", 42, web.head("acme/api", 42), action="synchronize")
    assert dup.status_code == 200
    bad = httpx.post(f"{web.api}/webhooks/github", content=b"{}", timeout=10,
                     headers={"x-github-event": "pull_request", "x-github-delivery": str(uuid.uuid4()),
                              "x-hub-signature-256": "sha256=" + "0" * 64})
    assert bad.status_code == 401  # counted, never recorded
    wait_settled(filled.url)

    web.model_fault(status=400, times=None)  # the provider refuses the request: the runs fail to dead letters
    for number in (50, 51):
        sha = _pull(web, "acme/api", number)
        assert web.send_opened("acme/api", number, sha).status_code == 202
        filled.failed_keys.append(f"acme/github:acme/api#{number}:review")
    wait_settled(filled.url)
    web.clear_model_faults()

    for number in range(1, BETA_QUOTA + 3):  # two admitted, the rest wait for tomorrow's quota
        sha = _pull(web, "beta/app", number)
        answer = web.send_opened("beta/app", number, sha, source=BETA_SOURCE)
        assert answer.status_code == 202, answer.text
        key = f"beta/github:beta/app#{number}:review"
        (filled.done_keys if number <= BETA_QUOTA else filled.queued_keys).append(key)
    wait_settled(filled.url)
    return filled
