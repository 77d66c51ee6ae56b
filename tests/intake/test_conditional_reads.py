"""The forge client's freshness read is conditional: an unchanged pull costs a 304, a changed one a 200."""

from __future__ import annotations

import hashlib

from sluicegate.forge.client import ForgeClient
from tests.support.sims import FORGE_TOKEN


async def test_an_unchanged_pull_is_read_back_with_a_304_and_a_change_is_seen(sims):
    sims.reset()
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN)
    try:
        first = await forge.get_pull("acme", "api", 44)
        second = await forge.get_pull("acme", "api", 44)
        assert second == first
        assert sims.forge_ctl("GET", "/stats").json()["pull_reads"] == {"json": 1, "diff": 0, "not_modified": 1}
        new_head = hashlib.sha1(b"conditional push").hexdigest()
        sims.forge_ctl("POST", "/pulls/acme/api/44", json={"head_sha": new_head})
        third = await forge.get_pull("acme", "api", 44)
        assert third["head"]["sha"] == new_head
        diff = await forge.get_pull_diff("acme", "api", 44)  # same URL, other media type: never from the cache
        assert isinstance(diff, str) and diff != str(third)
        assert sims.forge_ctl("GET", "/stats").json()["pull_reads"] == {"json": 2, "diff": 1, "not_modified": 1}
    finally:
        await forge.aclose()
