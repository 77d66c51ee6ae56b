"""CPU the bench's own process table does not show: the PostgreSQL backends serving one database,
and the whole machine's busy time (what every process on it used, other sessions' included).

PostgreSQL runs one backend process per connection. When the server is on this machine (a
loopback URL) their CPU is in ``/proc`` like ours, sampled by the pids ``pg_stat_activity``
lists for the database: a backend that exits between two snapshots is not counted (the APIs'
and workers' pooled connections live for the whole run, so little is missed), one that starts in
between counts from its start. The server's shared processes (WAL writer, checkpointer,
autovacuum) are not counted. The machine's busy share comes from ``/proc/stat``.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import psycopg

from bench._e2e import process_cpu

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def backend_cpu(url: str) -> dict[int, float]:
    """CPU seconds so far of each backend connected to ``url``'s database; {} when the server is
    not on this machine or cannot be asked."""
    if urlsplit(url).hostname not in LOOPBACK:
        return {}
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=3) as conn:
            pids = [r[0] for r in conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                                               "AND pid <> pg_backend_pid()")]
    except psycopg.Error:
        return {}
    return {pid: process_cpu(pid) for pid in pids}


def backend_seconds(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(v - before.get(pid, 0.0) for pid, v in after.items())


def machine_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of every core since boot (busy: all but idle and iowait)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def busy_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The machine's busy share between two :func:`machine_ticks` samples (0-1, of all cores)."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else float("nan")
