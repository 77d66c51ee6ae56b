"""Stack set-up the benches share: throwaway PostgreSQL databases, fresh ledgers, the forge simulator.

Dev stacks themselves (``sluicegate.devstack.DevStack``) are started by each bench with the
environment it needs (``bench/_common.py``: ``BENCH_SCOPE``, ``NO_CAPACITY_LIMITS``); what is
here is what a bench without a dev stack needs, or what several benches set up alike.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import httpx
import psycopg

from simulators import free_port, serve_in_thread
from simulators.forge import create_forge_app
from sluicegate.devstack import STARTUP_SECONDS

ROOT = Path(__file__).resolve().parents[1]


def postgres_database(admin_url: str) -> tuple[str, Callable[[], None]] | str:
    """A throwaway database: ``(url, drop)``, or the reason PostgreSQL is unusable."""
    try:
        conn = psycopg.connect(admin_url, autocommit=True, connect_timeout=3)
    except psycopg.Error as exc:
        return f"PostgreSQL at {admin_url} is unreachable: {' '.join(str(exc).split())[:200]}"
    name = f"sluicegate_bench_{uuid.uuid4().hex[:12]}"
    with conn:
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return admin_url.rsplit("/", 1)[0] + "/" + name, drop


def fresh_ledger(postgres_admin_url: str | None, tmp: Path, name: str
                 ) -> tuple[str, str, Callable[[], None] | None]:
    """A fresh (not yet migrated) ledger: ``(url, backend, drop or None)``: a SQLite file ``name`` in
    ``tmp``, or a throwaway PostgreSQL database created through ``postgres_admin_url`` when given."""
    if not postgres_admin_url:
        return f"sqlite:///{tmp / (name + '.sqlite')}", "SQLite", None
    db = postgres_database(postgres_admin_url)
    if isinstance(db, str):
        raise RuntimeError(db)
    return db[0], "PostgreSQL", db[1]


@contextmanager
def forge_simulator(token: str, in_thread: bool = False) -> Iterator[str]:
    """The forge simulator over HTTP, its base URL: its own process by default (on 2 cores a thread of
    this process would take the bench's interpreter lock for every read), or ``serve_in_thread``."""
    if in_thread:
        with serve_in_thread(create_forge_app(token=token)) as srv:
            yield srv.base_url
        return
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "simulators.forge", "--port", str(port), "--token", token,
                             "--log-level", "warning"], cwd=ROOT, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS  # a start-up budget on a loaded machine, not a speed target
        while True:
            try:
                httpx.get(f"{url}/_sim/health", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"forge simulator did not start (exit {proc.poll()})") from None
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def forge_gets(url: str) -> int:
    """GET requests the forge simulator at ``url`` has answered so far."""
    stats = httpx.get(f"{url}/_sim/stats", timeout=10).raise_for_status().json()
    return sum(n for route, n in stats["requests"].items() if route.startswith("GET "))
