"""The mixed stream on the wire: the pull requests it needs on the forge simulator, its signed
deliveries, sending them to the webhook API in order, and what the simulators saw."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

import httpx

from bench._common import delivery_headers, now, pull_request_payload
from bench._mixed_results import Answer
from bench._stream import Item, Pull, Stream
from sluicegate.config.settings import Settings

DIFF = ("diff --git a/src/app.py b/src/app.py\n--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,3 @@\n"
        " import os\n+import sys\n def main():\n")


class Endpoints:
    def __init__(self, s: Settings) -> None:
        self.api = f"http://{s.webhook_api.host}:{s.webhook_api.port}/webhooks/github"
        self.forge = f"http://{s.simulators.forge.host}:{s.simulators.forge.port}"
        self.model = f"http://{s.simulators.model.host}:{s.simulators.model.port}"


async def setup_pulls(http: httpx.AsyncClient, ep: Endpoints, pulls: list[Pull], final: bool,
                      concurrency: int) -> None:
    """Create (or re-create after a forge reset) every pull request, open, at its first or last head."""
    sem = asyncio.Semaphore(concurrency)

    async def one(p: Pull) -> None:
        async with sem:
            r = await http.post(f"{ep.forge}/_sim/pulls/{p.owner}/{p.repo}/{p.number}",
                                json={"head_sha": p.heads[-1] if final else p.heads[0], "state": "open",
                                      "title": f"Bench change #{p.number}", "diff": DIFF})
            r.raise_for_status()

    await asyncio.gather(*(one(p) for p in pulls))


def signed_bodies(stream: Stream, secret: str) -> list[tuple[dict[str, str], bytes]]:
    """Headers and body per item; a redelivery is byte-for-byte its original (same signature and id)."""
    out: list[tuple[dict[str, str], bytes]] = []
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # event time: intake refuses events > max age
    for it in stream.items:
        if it.origin is not None:
            out.append(out[it.origin])
            continue
        payload = pull_request_payload(it.owner, it.repo, it.number, it.sha, action=it.action)
        payload["pull_request"]["updated_at"] = stamp
        # Each item is a distinct event, as GitHub's bodies are: the same bytes under a new
        # delivery id would be a replay (replayed-body), not the stale or new event meant here.
        payload["bench_event"] = it.index
        body = json.dumps(payload).encode()
        out.append((delivery_headers(secret, body, delivery_id=it.delivery_id), body))
    return out


async def send_stream(http: httpx.AsyncClient, ep: Endpoints, items: list[Item],
                      bodies: list[tuple[dict[str, str], bytes]], concurrency: int) -> tuple[list[Answer], float]:
    """Send every item with ``concurrency`` senders, honouring per-pull-request ``deps``."""
    done = [asyncio.Event() for _ in items]
    answers: list[Answer] = [Answer(error="not sent") for _ in items]
    queue = iter(items)

    async def sender() -> None:
        for it in queue:
            try:
                for j in it.deps:
                    await done[j].wait()
                if it.move_to is not None:
                    r = await http.post(f"{ep.forge}/_sim/pulls/{it.owner}/{it.repo}/{it.number}",
                                        json={"head_sha": it.move_to})
                    r.raise_for_status()
                headers, body = bodies[it.index]
                t = now()
                r = await http.post(ep.api, content=body, headers=headers)
                elapsed = now() - t
                data = r.json()
                answers[it.index] = Answer(r.status_code, data.get("outcome"), data.get("reason"),
                                           data.get("admitted") is True, elapsed)
            except Exception as exc:  # noqa: BLE001 - reported per item and in the exit status
                answers[it.index] = Answer(error=f"{type(exc).__name__}: {exc}"[:200])
            finally:
                done[it.index].set()

    start = now()
    await asyncio.gather(*(sender() for _ in range(concurrency)))
    return answers, now() - start


async def sim_state(http: httpx.AsyncClient, ep: Endpoints) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    stats = (await http.get(f"{ep.model}/_sim/stats")).raise_for_status().json()
    comments = (await http.get(f"{ep.forge}/_sim/comments")).raise_for_status().json()
    return stats, comments
