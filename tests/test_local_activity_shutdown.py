"""A worker shutting down while a local activity is failing and being retried leaves no sdk-core
timer armed: no panic from a background thread (``activities/local_activity_shutdown.py``).

Real parts: Temporal's time-skipping test server and a real worker in a child process (the panic
is printed by a Rust thread after the worker is finalized, so only the process's own stderr shows
it). The unguarded run is the control: it shows the panic this guards against, so the test
would notice an sdk-core that no longer panics (then the interceptor can go).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _probe(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "tests.support.local_activity_shutdown_probe", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=180)


@pytest.mark.parametrize("grace", ["0", "10"])  # 10: create_worker's graceful_shutdown_timeout
def test_a_local_activity_failing_during_shutdown_leaves_no_timer_to_panic(grace):
    unguarded = _probe("--grace", grace)
    assert "done" in unguarded.stdout, unguarded.stderr[-2000:]
    assert "panicked" in unguarded.stderr, "sdk-core no longer panics here: the control does not reproduce"
    guarded = _probe("--guarded", "--grace", grace)
    assert "done" in guarded.stdout and "attempts=" in guarded.stdout, guarded.stderr[-2000:]
    assert "panicked" not in guarded.stderr, guarded.stderr[-3000:]
