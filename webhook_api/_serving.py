"""How the webhook API is served: the uvicorn settings ``python -m webhook_api`` runs with, shared
with the tests' in-thread server so they test what production runs."""

from typing import Any

from sluicegate.config.settings import WebhookApiConfig

HTTP_PROTOCOL = "h11"
"""uvicorn's HTTP protocol, fixed whatever is installed. h11 refuses a request head past 16 KB
(uvicorn's ``h11_max_incomplete_event_size``) with a 400 before any of it reaches the app: the bound
comes before authentication. uvicorn's httptools protocol reads a head without a bound (16 MB of
header lines were accepted and kept when measured, 2026-12-01), so ``http="auto"`` would lose the
bound the day httptools is installed. The event loop is uvicorn's ``auto``: uvloop (a pinned
dependency) when importable."""

UVICORN: dict[str, Any] = {"http": HTTP_PROTOCOL, "log_config": None, "access_log": False}
"""Keyword arguments of ``uvicorn.run`` / ``uvicorn.Config`` for the webhook API."""


def uvicorn_options(api: WebhookApiConfig) -> dict[str, Any]:
    """:data:`UVICORN` and the configured idle keep-alive (``webhook_api.keep_alive_seconds``)."""
    return {**UVICORN, "timeout_keep_alive": api.keep_alive_seconds}
