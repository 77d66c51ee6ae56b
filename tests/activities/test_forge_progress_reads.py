"""The forge client reports its progress from the work: one beat per diff chunk received, one per
page of a listing, one per try of a request.
The client against the forge simulator over HTTP; the sink records what the activities would send as
heartbeat details."""

from __future__ import annotations

import uuid
from contextlib import asynccontextmanager

import httpx

from sluicegate.forge.client import ForgeClient
from tests.support.sims import FORGE_TOKEN


class Recorder:
    def __init__(self) -> None:
        self.details: dict[str, object] = {}
        self.beats: list[dict[str, object]] = []
        self.waits: list[str] = []

    def beat(self, **details: object) -> None:
        self.details.update(details)
        self.beats.append(dict(self.details))

    @asynccontextmanager
    async def waiting(self, phase: str, limit_seconds: float):
        self.waits.append(phase)
        yield


async def test_the_diff_read_beats_per_chunk_with_the_bytes_so_far(sims) -> None:
    diff = httpx.get(f"{sims.forge.base_url}/repos/acme/api/pulls/42",
                     headers={"Authorization": f"Bearer {FORGE_TOKEN}",
                              "Accept": "application/vnd.github.diff"}).raise_for_status().text
    sims.forge_ctl("POST", "/faults", json={"method": "GET", "path": "/pulls/42$", "stall_after_bytes": 64,
                                            "hang_seconds": 0.1, "accept": "diff"})
    forge, progress = ForgeClient(sims.forge.base_url, FORGE_TOKEN), Recorder()
    try:
        assert await forge.get_pull_diff("acme", "api", 42, progress=progress) == diff
    finally:
        await forge.aclose()
    receiving = [b for b in progress.beats if b.get("phase") == "receiving"]
    assert receiving[0] == {"tries": 1, "phase": "receiving", "bytes": 0, "chunks": 0}
    assert receiving[1]["bytes"] == 64  # the stall split the body: at least two chunks
    assert receiving[-1]["bytes"] == len(diff.encode()) and receiving[-1]["chunks"] >= 2
    assert progress.waits == ["awaiting-response"]


async def test_a_listing_beats_once_per_page_after_its_first_try(sims) -> None:
    owner = f"o{uuid.uuid4().hex[:8]}"
    sims.forge_ctl("POST", f"/pulls/{owner}/api/7", json={"head_sha": "a" * 40, "diff": "", "title": "t"})
    auth = {"Authorization": f"Bearer {FORGE_TOKEN}"}
    for n in range(101):  # per_page=100: two pages
        httpx.post(f"{sims.forge.base_url}/repos/{owner}/api/issues/7/comments", headers=auth,
                   json={"body": f"c{n}"}).raise_for_status()
    forge, progress = ForgeClient(sims.forge.base_url, FORGE_TOKEN), Recorder()
    try:
        comments = [c async for c in forge.iter_comments(owner, "api", 7, progress=progress)]
    finally:
        await forge.aclose()
    assert len(comments) == 101
    assert [(b["pages"], b["items"]) for b in progress.beats if b.get("phase") == "paging"] == [(1, 100), (2, 101)]
    assert progress.beats[0] == {"tries": 1}
