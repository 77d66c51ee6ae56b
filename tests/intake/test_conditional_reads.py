"""The forge client's freshness read is conditional: an unchanged pull costs a 304, a changed one a 200."""

from __future__ import annotations

import hashlib
import json

import httpx

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


async def test_each_tenant_keeps_its_own_etag_and_only_the_freshness_fields(sims):
    """Two tenants reading one URL: each pays its own 200 and then gets its own 304 (keyed by tenant,
    not by URL alone), and what is kept is a few fields, not the pull's body."""
    sims.reset()
    forge = ForgeClient(sims.forge.base_url, FORGE_TOKEN)

    def reads() -> dict:
        return sims.forge_ctl("GET", "/stats").json()["pull_reads"]

    try:
        first = {tenant: await forge.get_pull("acme", "api", 44, tenant=tenant) for tenant in ("acme", "globex")}
        assert reads() == {"json": 2, "diff": 0, "not_modified": 0}  # globex did not ride on acme's ETag
        for tenant in ("acme", "globex"):
            assert await forge.get_pull("acme", "api", 44, tenant=tenant) == first[tenant]
        assert reads() == {"json": 2, "diff": 0, "not_modified": 2}
        url = f"{sims.forge.base_url}/repos/acme/api/pulls/44"
        full = httpx.get(url, headers={"Authorization": f"Bearer {FORGE_TOKEN}"}).raise_for_status().json()
        etag, _, kept, _ = forge.freshness_cache.entry("acme", url)
        assert etag and kept["head"] == {"sha": full["head"]["sha"]} and kept["state"] == full["state"]
        assert set(kept) <= {"number", "state", "draft", "merged", "updated_at", "title", "head"} < set(full)
        assert len(json.dumps(kept)) < len(json.dumps(full)) / 2, (kept, full)
        assert forge.freshness_cache.entry("globex", url) is not None
    finally:
        await forge.aclose()
