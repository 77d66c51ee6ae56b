"""What the public API serves an anonymous caller beyond its routes: nothing (no generated docs)."""

from __future__ import annotations

import httpx
import pytest

import ledger
from tests.webhook_api.server import running_api


@pytest.mark.parametrize("path", ["/docs", "/redoc", "/openapi.json"])
def test_no_generated_api_docs_are_served(sims, temporal_env, tmp_path, path):
    """Found by an adversarial review (session 17): FastAPI's /docs and /openapi.json were served to
    anyone. No secret, but surface an anonymous caller does not need (docs/webhooks.md documents the routes)."""
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    with running_api(sims, temporal_env, url) as (server, _):
        assert httpx.get(f"{server.base_url}{path}", timeout=10).status_code == 404
        assert httpx.get(f"{server.base_url}/healthz", timeout=10).status_code == 200
