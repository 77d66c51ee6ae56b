"""A pull request seeded on the forge simulator and read through the real forge reader, for the
intake tests that count forge reads (``tests/intake/test_shared_reads.py``,
``tests/intake/test_admissions_in_flight.py``); and a reader held at a gate, so a test can have a
read in flight while it sends the next delivery."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from intake.envelope import PullRequestRef
from intake.forge_reader import ForgeTargetReader
from intake.freshness import TargetSnapshot
from intake.ports import TargetReader
from sluicegate.forge.client import ForgeClient
from tests.support.sims import FORGE_TOKEN, Sims


@asynccontextmanager
async def seeded_target(sims: Sims, repo_prefix: str, head_sha: str) -> AsyncIterator[
        tuple[PullRequestRef, ForgeTargetReader]]:
    """Pull request #1 of a fresh ``acme/<repo_prefix>-<random>`` at ``head_sha``, and a forge reader."""
    ref = PullRequestRef("acme", f"{repo_prefix}-{uuid.uuid4().hex[:8]}", 1)
    sims.forge_ctl("POST", f"/pulls/{ref.owner}/{ref.repo}/1", json={"head_sha": head_sha})
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN)
    try:
        yield ref, ForgeTargetReader(forge)
    finally:
        await forge.aclose()


def forge_reads(sims: Sims, ref: PullRequestRef) -> int:
    """API requests the forge simulator has seen for ``ref``'s repository (answered or refused)."""
    return sims.forge_ctl("GET", "/stats").json()["by_repository"].get(f"{ref.owner}/{ref.repo}".lower(), 0)


class GatedReader:
    """A real forge reader whose reads wait at a gate until the test opens it; counts the reads asked."""

    def __init__(self, reader: TargetReader) -> None:
        self._reader = reader
        self.gate = asyncio.Event()
        self.calls = 0

    async def read(self, ref: PullRequestRef, tenant: str | None = None) -> TargetSnapshot:
        self.calls += 1
        await self.gate.wait()
        return await self._reader.read(ref, tenant)
