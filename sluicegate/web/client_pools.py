"""Connection pools of the outbound HTTP clients: the forge's (REST reads and writes, installation
tokens) and the model provider's (``openai``).

A kept-alive connection is reused only while it has been idle less than
:data:`KEEPALIVE_EXPIRY_SECONDS`. httpx's default, 5 s, is exactly the idle timeout of uvicorn's
default (``timeout_keep_alive``), which many OpenAI-compatible servers run with (vLLM's API server
among them): a request sent as the server closes that connection is lost with no answer. The CI run
of 2026-12-02 failed on it (a forge read, the quick bench pass). For a model call the loss is
costly: "no answer after sending" cannot prove the call unbilled (``activities.call_fate``), so the
step's reservation is charged at its estimate, the breaker is fed and an attempt is spent. Expiring
a connection one second before the common server default narrows the race with such servers to an
event loop that stalls for that second between picking a connection and writing the request; a forge
read dropped anyway is sent again (``sluicegate.forge.client.call_forge``)."""

from __future__ import annotations

import httpx2

KEEPALIVE_EXPIRY_SECONDS = 4.0
"""Below the 5 s idle timeout of uvicorn's default (and of every common server default above it)."""


def pool_limits(max_connections: int, max_keepalive_connections: int) -> httpx2.Limits:
    """A pool of that size whose idle connections expire after :data:`KEEPALIVE_EXPIRY_SECONDS`."""
    return httpx2.Limits(max_connections=max_connections, max_keepalive_connections=max_keepalive_connections,
                         keepalive_expiry=KEEPALIVE_EXPIRY_SECONDS)


FORGE_POOL = pool_limits(100, 20)
"""httpx's own default sizes."""

MODEL_POOL = pool_limits(1000, 100)
"""The ``openai`` client's own default sizes (``openai._constants.DEFAULT_CONNECTION_LIMITS``)."""
