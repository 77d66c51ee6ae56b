"""Fixtures for every test here."""

from __future__ import annotations

import pytest

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy from the machine's environment: the forge client's freshness reads pick their transport
    by it (``sluicegate/forge/fresh_transport.py``), and these tests talk to loopback servers; a test
    about proxies sets its own."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
