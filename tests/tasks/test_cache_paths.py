"""The ETag cache keeps a pull's fields for a pull read whatever the repository is called (a repository named
``issues`` once had its pull reads cut to the issue fields, so every 304 lost the head sha)."""

from __future__ import annotations

import hashlib

from sluicegate.forge.client import ForgeClient
from tests.support.sims import FORGE_TOKEN



async def test_a_pull_in_a_repo_named_issues_keeps_its_head_through_a_304(sims):
    """sluicegate/forge/cache.py _fields_for: ``"/issues/" in url`` also matches
    ``/repos/acme/issues/pulls/7`` (a repository named ``issues``, common for trackers), so the
    pull's cached entry is cut to the issue fields and the 304 answer has no head sha: every later
    review delivery for that repository is rejected stale-version."""
    sims.reset()
    head = hashlib.sha1(b"repo named issues").hexdigest()
    sims.forge_ctl("POST", "/pulls/acme/issues/7", json={"head_sha": head}).raise_for_status()
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN)
    try:
        first = await forge.get_pull("acme", "issues", 7)
        assert first["head"]["sha"] == head  # the 200: full answer
        second = await forge.get_pull("acme", "issues", 7)  # the 304: the cached entry
        assert second.get("head") == {"sha": head}, second
    finally:
        await forge.aclose()

