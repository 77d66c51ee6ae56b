"""The webhook API on a real HTTP server thread, with real intake, ledger and Temporal client."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import httpx
from sqlmodel import Session, select

import ledger
from ledger import Receipt
from simulators import ServerThread
from sluicegate.config.settings import Settings
from tests.support.sims import Sims, settings_for
from webhook_api import create_app
from webhook_api._serving import HTTP_PROTOCOL


@contextlib.contextmanager
def running_api(sims: Sims, temporal_env, ledger_url: str, **env: str) -> Iterator[tuple[ServerThread, Settings]]:
    settings = settings_for(sims, ledger_url, **env)
    server = ServerThread(create_app(settings, client=temporal_env.client, search_attributes=False),
                          name="webhook-api", http=HTTP_PROTOCOL,
                          keep_alive_seconds=settings.webhook_api.keep_alive_seconds).start()
    try:
        yield server, settings
    finally:
        server.stop()


def receipts(url: str, delivery_id: str) -> list[Receipt]:
    engine = ledger.make_engine(url)
    try:
        with Session(engine) as s:
            rows = s.exec(select(Receipt).where(Receipt.delivery_id == delivery_id)).all()
            return sorted(rows, key=lambda r: r.created_at)
    finally:
        engine.dispose()


def fresh_pull(sims: Sims) -> tuple[str, str, int, str]:
    """A new open pull request on the forge simulator: (owner, repo, number, head sha). A repo
    nobody else uses gives a work key no earlier test (or shared ledger) has seen."""
    owner, repo, number, sha = "acme", f"r{uuid.uuid4().hex[:10]}", 7, uuid.uuid4().hex + "00000000"
    sims.forge_ctl("POST", f"/pulls/{owner}/{repo}/{number}", json={"head_sha": sha, "state": "open"})
    return owner, repo, number, sha


def post(server: ServerThread, source: str, headers: dict[str, str], body: bytes,
         client: httpx.Client | None = None) -> httpx.Response:
    send = client.post if client is not None else httpx.post
    return send(f"{server.base_url}/webhooks/{source}", content=body, headers=headers, timeout=30)
