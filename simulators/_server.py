"""Run an ASGI app on a real ``uvicorn.Server`` in a background thread.

Used by the simulator tests and by the stack launcher so that clients talk
to the simulators over genuine HTTP (sockets, headers, timeouts), never
through an in-process transport.

The listening socket is bound in the *calling* thread before the server
thread starts, so:

* ``port=0`` yields an OS-assigned free port, readable immediately as
  :attr:`ServerThread.port` / :attr:`ServerThread.base_url`;
* "address already in use" surfaces as ``OSError`` from :meth:`start`
  instead of as a silent dead thread.

Failure modes:

* the app fails during startup (lifespan error) or the thread dies before
  uvicorn reports ``started`` -> :meth:`start` raises ``RuntimeError``;
* startup takes longer than ``startup_timeout`` -> ``TimeoutError`` (the
  half-started server is stopped first);
* requests still in flight at :meth:`stop` (e.g. a simulator fault that
  hangs) get ``graceful_timeout`` seconds, then are cancelled; if the
  thread still does not finish, ``force_exit`` is set and we wait again.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn

__all__ = ["ServerThread", "free_port", "serve_in_thread"]


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that was free a moment ago (inherently racy)."""
    with socket.socket(_family(host), socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


class ServerThread:
    """A uvicorn server for ``app`` running in a daemon thread."""

    def __init__(
        self,
        app: Any,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        name: str = "sim-server",
        log_level: str = "warning",
        startup_timeout: float = 10.0,
        graceful_timeout: int = 2,
        http: str = "auto",
        keep_alive_seconds: int = 5,
    ) -> None:
        self.app = app
        self.host = host
        self.requested_port = port
        self.name = name
        self.startup_timeout = startup_timeout
        self._config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level=log_level,
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=graceful_timeout,
            lifespan="auto",
            http=http,
            timeout_keep_alive=keep_alive_seconds,
        )
        self._server = uvicorn.Server(self._config)
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._port: int | None = None

    # -- lifecycle ---------------------------------------------------------
    def start(self) -> ServerThread:
        if self._thread is not None:
            raise RuntimeError(f"{self.name}: already started")
        sock = socket.socket(_family(self.host), socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted sockets inherit it: without it every keep-alive request waits ~40 ms (Nagle).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.bind((self.host, self.requested_port))
        except OSError:
            sock.close()
            raise
        sock.listen(self._config.backlog)
        sock.setblocking(False)
        self._sock = sock
        self._port = int(sock.getsockname()[1])
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self.startup_timeout
        while not self._server.started:
            if not self._thread.is_alive():
                self._close_socket()
                raise RuntimeError(f"{self.name}: server thread exited during startup") from self._error
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"{self.name}: not started after {self.startup_timeout}s")
            time.sleep(0.005)
        return self

    def _run(self) -> None:
        assert self._sock is not None
        try:
            self._server.run(sockets=[self._sock])
        except BaseException as exc:  # SystemExit from uvicorn on startup failure
            self._error = exc

    def stop(self, timeout: float = 10.0) -> None:
        thread = self._thread
        if thread is None:
            return
        self._server.should_exit = True
        thread.join(timeout)
        if thread.is_alive():
            self._server.force_exit = True
            thread.join(timeout)
        self._close_socket()
        if thread.is_alive():
            raise RuntimeError(f"{self.name}: server thread did not stop within {2 * timeout}s")

    def _close_socket(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    # -- addressing --------------------------------------------------------
    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError(f"{self.name}: not started")
        return self._port

    @property
    def base_url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        if host == "::":
            host = "::1"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self._server.started

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


@contextlib.contextmanager
def serve_in_thread(app: Any, host: str = "127.0.0.1", port: int = 0, **kwargs: Any) -> Iterator[ServerThread]:
    """``with serve_in_thread(app) as srv: httpx.get(srv.base_url + ...)``."""
    server = ServerThread(app, host, port, **kwargs)
    server.start()
    try:
        yield server
    finally:
        server.stop()
