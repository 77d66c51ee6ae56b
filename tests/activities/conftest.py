"""Fixtures for every test here."""

from __future__ import annotations

import pytest

from sluicegate.forge.fresh_transport import PROXY_VARIABLES


@pytest.fixture(autouse=True)
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy from the machine's environment: the forge client's freshness reads pick their transport
    by it (``sluicegate/forge/fresh_transport.py``), and these tests talk to loopback servers; a test
    about proxies sets its own."""
    for name in (*PROXY_VARIABLES, "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
