"""ServerThread / serve_in_thread / free_port run real sockets."""

from __future__ import annotations

import socket

import httpx
import pytest
from fastapi import FastAPI

from simulators import ServerThread, free_port, serve_in_thread


def _app() -> FastAPI:
    app = FastAPI()

    @app.get("/ping")
    async def ping() -> dict[str, str]:
        return {"pong": "yes"}

    return app


def _connectable(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def test_port_zero_binds_a_real_port_and_serves() -> None:
    with serve_in_thread(_app()) as server:
        assert server.port > 0
        assert server.base_url == f"http://127.0.0.1:{server.port}"
        assert httpx.get(f"{server.base_url}/ping").json() == {"pong": "yes"}
        assert server.running


def test_stop_releases_the_port() -> None:
    server = ServerThread(_app()).start()
    port = server.port
    assert _connectable(port)
    server.stop()
    assert not server.running
    assert not _connectable(port)


def test_port_in_use_raises_from_start() -> None:
    with serve_in_thread(_app()) as first:
        with pytest.raises(OSError):
            ServerThread(_app(), port=first.port).start()


def test_explicit_port_from_free_port() -> None:
    port = free_port()
    with serve_in_thread(_app(), port=port) as server:
        assert server.port == port
        assert httpx.get(f"{server.base_url}/ping").status_code == 200


def test_start_twice_is_refused() -> None:
    with serve_in_thread(_app()) as server:
        with pytest.raises(RuntimeError):
            server.start()


def test_port_before_start_is_an_error() -> None:
    with pytest.raises(RuntimeError):
        _ = ServerThread(_app()).port
