"""A private PostgreSQL cluster for a drill: ``initdb`` into a temporary directory, its own port,
trust authentication on 127.0.0.1 only. The machine's own cluster (5432) is never touched.

The Debian server binaries (``/usr/lib/postgresql/<version>/bin``, newest version) are used
directly. PostgreSQL refuses to run as root, so under root every server command runs as the
``postgres`` user (``runuser``), which then owns the directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg

from sluicegate.devstack import free_port

DATABASE = "sluicegate"


def server_binaries() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parent.parent.name))
    if not found:
        raise RuntimeError("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (apt install postgresql)")
    return found[-1].parent


class PrivateCluster:
    def __init__(self) -> None:
        self.bin = server_binaries()
        self.root = Path(tempfile.mkdtemp(prefix="sluicegate-drill-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self.port = free_port()
        self._as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self._as_postgres:
            shutil.chown(self.root, "postgres")

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{DATABASE}"

    def _run(self, tool: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run([*self._as_postgres, str(self.bin / tool), *args], capture_output=True, text=True,
                              timeout=timeout, check=True, cwd=self.root)

    def create(self) -> "PrivateCluster":
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        self.start()
        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.port}/postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{DATABASE}"')
        return self

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "-o",
                  f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c max_connections=200 -c fsync=off",
                  "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def running(self) -> bool:
        return subprocess.run([*self._as_postgres, str(self.bin / "pg_ctl"), "-D", str(self.data), "status"],
                              capture_output=True, timeout=30).returncode == 0

    def destroy(self, keep: bool = False) -> None:
        """Stop the server (immediately) and remove the directory unless ``keep``."""
        if self.data.exists() and self.running():
            self.stop("immediate")
        if not keep:
            shutil.rmtree(self.root, ignore_errors=True)
