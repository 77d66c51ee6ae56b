"""Model calls per PR with and without worker crashes (``bench/loop_bench.py``, measurement 3).

Batches of K reviews admitted through the webhook API and run by the stack's worker process,
each batch on a repository of its own, counted at the model simulator per work key:

* **no crash** — the baseline: 3 calls per review (model → diff → model → post → model).
* **kill after the answer** (PostgreSQL ledger only) — every review's 2nd model call is parked
  between its journal write and its settle (``tests/support/crash.py``), the worker is SIGKILLed
  there and a new one started: the retried attempts read the journal, so still 3 per review.

The third figure, a kill *mid-call* (before the answer), is measurement 2: such a call is
legitimately asked again, since no answer ever reached a worker.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

import httpx

from bench._common import BenchError, head_sha, signed_pull_request
from demo.outcome import TERMINAL, wait_for_runs
from sluicegate.devstack import DevStack
from tests.support.crash import held_after_the_answer

Log = Callable[[str], None]
DIFF = ("diff --git a/src/app.py b/src/app.py\n--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,3 @@\n"
        " import os\n+import sys\n def main():\n")


@dataclass
class Batch:
    scenario: str
    reviews: int
    calls: int = 0
    """Requests that arrived at the model simulator for this batch's work keys."""
    steps: int = 0
    """Model steps the runs recorded (work_versions.result.steps)."""
    retries: int = 0
    """Retries the runs recorded (activity attempts beyond the first)."""
    statuses: dict[str, int] = field(default_factory=dict)
    comments: int = 0
    seconds: float = 0.0

    @property
    def per_pr(self) -> float:
        return self.calls / self.reviews if self.reviews else 0.0


async def admit_reviews(http: httpx.AsyncClient, stack: DevStack, repo: str, reviews: int) -> list[str]:
    """Create ``reviews`` pull requests on the forge simulator and deliver one signed ``opened`` each;
    returns their work keys."""
    s = stack.settings
    forge = f"http://{s.simulators.forge.host}:{s.simulators.forge.port}"
    api = f"http://{s.webhook_api.host}:{s.webhook_api.port}/webhooks/github"
    keys = []
    for n in range(1, reviews + 1):
        sha = head_sha(repo, n)
        (await http.post(f"{forge}/_sim/pulls/bench/{repo}/{n}",
                         json={"head_sha": sha, "state": "open", "title": f"{repo} #{n}", "diff": DIFF})
         ).raise_for_status()
        headers, body = signed_pull_request(s.sources["github"].secret, "bench", repo, n, sha)
        r = await http.post(api, content=body, headers=headers)
        if r.status_code != 202 or not r.json().get("admitted"):
            raise BenchError(f"{repo}#{n} not admitted: {r.status_code} {r.text[:200]}")
        keys.append(r.json()["work_key"])
    return keys


async def _finish(http: httpx.AsyncClient, stack: DevStack, batch: Batch, repo: str, timeout: float) -> Batch:
    s = stack.settings
    model = f"http://{s.simulators.model.host}:{s.simulators.model.port}"
    versions = [v for v in await asyncio.to_thread(wait_for_runs, s, timeout) if f"bench/{repo}#" in v.work_key]
    unfinished = [v.work_key for v in versions if v.status not in TERMINAL]
    if len(versions) != batch.reviews or unfinished:
        raise BenchError(f"{batch.scenario}: {len(versions)} versions, unfinished {unfinished[:3]}")
    stats: dict[str, Any] = (await http.get(f"{model}/_sim/stats")).raise_for_status().json()
    batch.calls = sum(n for work, n in stats["by_work"].items() if f"bench/{repo}#" in work)
    batch.steps = sum((v.result or {}).get("steps", 0) for v in versions)
    batch.retries = sum((v.result or {}).get("retries", 0) for v in versions)
    for v in versions:
        batch.statuses[v.status] = batch.statuses.get(v.status, 0) + 1
    forge = f"http://{s.simulators.forge.host}:{s.simulators.forge.port}"
    batch.comments = sum(1 for c in (await http.get(f"{forge}/_sim/comments")).json()
                         if (c["owner"], c["repo"]) == ("bench", repo))
    return batch


async def measure_batches(stack: DevStack, reviews: int, delay: float, timeout: float, log: Log,
                          after_answer: bool) -> list[Batch]:
    s = stack.settings
    model = f"http://{s.simulators.model.host}:{s.simulators.model.port}"
    batches = []
    async with httpx.AsyncClient(timeout=30) as http:
        (await http.delete(f"{model}/_sim/faults")).raise_for_status()
        repo, t0 = f"calm-{uuid.uuid4().hex[:6]}", time.monotonic()
        batch = Batch("no crash", reviews)
        await admit_reviews(http, stack, repo, reviews)
        batches.append(await _finish(http, stack, batch, repo, timeout))
        batch.seconds = time.monotonic() - t0
        log(f"  calls per PR, no crash: {batch.calls} calls for {reviews} reviews = {batch.per_pr:.2f}")
        if not after_answer:
            return batches
        repo, t0 = f"journal-{uuid.uuid4().hex[:6]}", time.monotonic()
        batch = Batch("kill after the answer (journaled)", reviews)
        (await http.post(f"{model}/_sim/faults", json={"delay_seconds": delay, "times": None})).raise_for_status()
        keys = await admit_reviews(http, stack, repo, reviews)
        await asyncio.to_thread(_kill_when_answered, stack, keys, timeout)
        (await http.delete(f"{model}/_sim/faults")).raise_for_status()
        await asyncio.to_thread(stack.start_worker)
        batches.append(await _finish(http, stack, batch, repo, timeout))
        batch.seconds = time.monotonic() - t0
        log(f"  calls per PR, worker killed after {reviews} answers were journaled: {batch.calls} calls = "
            f"{batch.per_pr:.2f} ({batch.retries} retried attempts)")
    return batches


def _kill_when_answered(stack: DevStack, keys: list[str], timeout: float) -> None:
    with held_after_the_answer(stack.settings.ledger_url(), keys, step=2, timeout=timeout):
        stack.kill_worker()
