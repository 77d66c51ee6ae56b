"""Throw-away PostgreSQL databases for tests: created fresh, dropped afterwards.

The server comes from ``SLUICEGATE_TEST_POSTGRES_URL`` (default the machine's 127.0.0.1:5432).
When it is unreachable the caller's test is skipped with a loud reason — unless
``SLUICEGATE_REQUIRE_POSTGRES=1`` (CI sets it), in which case it fails.
"""

from __future__ import annotations

import os
import uuid

import psycopg
import pytest

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/postgres"


def admin_url() -> str:
    return os.environ.get("SLUICEGATE_TEST_POSTGRES_URL", DEFAULT_PG)


def create_database(prefix: str) -> tuple[str, str]:
    """A new empty database: (its name, its URL)."""
    admin = admin_url()
    try:
        conn = psycopg.connect(admin, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        message = f"PostgreSQL at {admin} is unreachable: {exc}"
        if os.environ.get("SLUICEGATE_REQUIRE_POSTGRES") == "1":
            pytest.fail(message + " (SLUICEGATE_REQUIRE_POSTGRES=1)")
        pytest.skip(message)
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name, admin.rsplit("/", 1)[0] + "/" + name


def drop_database(name: str) -> None:
    with psycopg.connect(admin_url(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
