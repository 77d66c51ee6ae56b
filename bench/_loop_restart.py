"""Measurement 2 of ``bench/loop_bench.py``: the stack's worker process SIGKILLed mid-run.

Reviews admitted through the webhook API are mid-flight on a slow model simulator when the worker
is killed; a new worker is started, and the model simulator's counters are compared with the steps
the runs recorded and with Temporal's model-activity attempts (``bench/_loop_history.py``).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench._common import BenchError, head_sha, signed_pull_request
from bench._loop import Log
from bench._loop_history import model_activities
from bench._loop_sims import DIFF
from demo.outcome import TERMINAL, wait_for_runs
from sluicegate.devstack import DevStack
from sluicegate.temporal.client import connect


@dataclass
class Restart:
    reviews: int
    delay: float
    admitted: int = 0
    at_kill: dict[str, int] = field(default_factory=dict)
    """Model simulator counters read right after the SIGKILL (the dead worker's calls are final)."""
    drained: dict[str, int] = field(default_factory=dict)
    """... and once every call the dead worker left in flight had been answered (before the new worker)."""
    final: dict[str, Any] = field(default_factory=dict)
    steps: int = 0
    """Sum of ``steps`` recorded by the runs (work_versions.result)."""
    statuses: dict[str, int] = field(default_factory=dict)
    history_completed: int = 0
    """Model activities completed in Temporal history."""
    history_retries: int = 0
    """Sum over model activities of (attempt - 1), from history."""
    kill_after: float = 0.0
    restart_seconds: float = 0.0
    finish_seconds: float = 0.0
    comments: int = 0

    @property
    def calls(self) -> int:
        return int(self.final.get("calls", 0))

    @property
    def completed(self) -> int:
        return int(self.final.get("completed", 0))

    @property
    def cut_off(self) -> int:
        """Calls in flight at the model simulator when the worker died."""
        return self.at_kill.get("calls", 0) - self.at_kill.get("completed", 0)

    @property
    def late(self) -> int:
        """Calls the simulator completed after the kill, before the new worker: answered to no worker."""
        return self.drained.get("completed", 0) - self.at_kill.get("completed", 0)


async def measure_restart(stack: DevStack, reviews: int, delay: float, timeout: float, log: Log) -> Restart:
    s = stack.settings
    res = Restart(reviews, delay)
    forge = f"http://{s.simulators.forge.host}:{s.simulators.forge.port}"
    model = f"http://{s.simulators.model.host}:{s.simulators.model.port}"
    api = f"http://{s.webhook_api.host}:{s.webhook_api.port}/webhooks/github"
    secret = s.sources["github"].secret
    run = uuid.uuid4().hex[:6]
    repo = f"restart-{run}"
    async with httpx.AsyncClient(timeout=30) as http:
        async def stats() -> dict[str, Any]:
            return (await http.get(f"{model}/_sim/stats")).raise_for_status().json()

        (await http.post(f"{model}/_sim/reset")).raise_for_status()
        (await http.post(f"{model}/_sim/faults", json={"delay_seconds": delay, "times": None})).raise_for_status()
        shas = [head_sha("restart", run, n) for n in range(1, reviews + 1)]
        for n, sha in enumerate(shas, 1):
            (await http.post(f"{forge}/_sim/pulls/bench/{repo}/{n}",
                             json={"head_sha": sha, "state": "open", "title": f"Restart #{n}", "diff": DIFF})
             ).raise_for_status()
        t0 = time.monotonic()
        for n, sha in enumerate(shas, 1):
            headers, body = signed_pull_request(secret, "bench", repo, n, sha)
            r = await http.post(api, content=body, headers=headers)
            answer = r.json()
            if r.status_code != 202 or not answer.get("admitted"):
                raise BenchError(f"review {n} not admitted: {r.status_code} {answer}")
            res.admitted += 1
        log(f"  restart: {reviews} reviews admitted through the webhook API; model simulator delays every "
            f"call {delay}s")

        # Kill once every run's first model call has been answered AND its second one is in flight
        # (calls >= 2K): the first steps are in history, the second ones are mid-call.
        target = 2 * reviews
        deadline = time.monotonic() + timeout
        while (await stats())["calls"] < target:
            if time.monotonic() > deadline:
                raise BenchError(f"model calls never reached {target} before the kill")
            await asyncio.sleep(0.05)
        before = await stats()
        stack.kill_worker()
        res.kill_after = time.monotonic() - t0
        res.at_kill = {k: v for k, v in (await stats()).items() if k in ("calls", "completed")}
        log(f"  restart: worker SIGKILLed {res.kill_after:.1f}s after the first admission; model simulator just "
            f"before: {before['calls']} calls / {before['completed']} completed, just after: "
            f"{res.at_kill['calls']} / {res.at_kill['completed']}")
        # Give every call the dead worker had in flight time to finish at the simulator (it would be
        # answered to nobody) before the new worker starts, so late completions can be told apart.
        await asyncio.sleep(delay + 1.0)
        st = await stats()
        res.drained = {"calls": st["calls"], "completed": st["completed"]}
        t = time.monotonic()
        await asyncio.to_thread(stack.start_worker)
        res.restart_seconds = time.monotonic() - t
        log(f"  restart: {delay + 1.0:.1f}s after the kill: {st['calls']} calls / {st['completed']} completed; "
            f"new worker polling after {res.restart_seconds:.1f}s more")
        versions = await asyncio.to_thread(wait_for_runs, s, timeout)
        res.finish_seconds = time.monotonic() - t0
        res.final = await stats()
        res.comments = sum(1 for c in (await http.get(f"{forge}/_sim/comments")).json()  # this measurement's repo
                           if (c["owner"], c["repo"]) == ("bench", repo))  # (the overhead posts on the same forge)

    ours = [v for v in versions if f"bench/{repo}#" in v.work_key]
    if len(ours) != reviews:
        raise BenchError(f"{len(ours)} work versions for {reviews} admitted reviews")
    unfinished = [v for v in ours if v.status not in TERMINAL]
    if unfinished:
        raise BenchError(f"{len(unfinished)} runs unfinished after {timeout:.0f}s: "
                         + ", ".join(f"{v.work_key}={v.status}" for v in unfinished[:3]))
    res.steps = sum((v.result or {}).get("steps", 0) for v in ours)
    res.statuses = {}
    for v in ours:
        res.statuses[v.status] = res.statuses.get(v.status, 0) + 1
    res.history_completed, res.history_retries = await model_activities(await connect(stack.settings), ours)
    return res
