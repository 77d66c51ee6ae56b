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
from contextlib import AsyncExitStack
from datetime import timedelta
from pathlib import Path

import pytest

import ledger
from activities.local_activity_shutdown import LocalActivityShutdown
from tests.support.sims import settings_for
from worker import create_worker

ROOT = Path(__file__).resolve().parents[1]


def _start_probe(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "tests.support.local_activity_shutdown_probe", *args], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(probe: subprocess.Popen) -> subprocess.CompletedProcess:
    try:
        out, err = probe.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        probe.kill()
        out, err = probe.communicate()
        raise AssertionError(f"probe {probe.args} ran past 180 s:\n{err[-2000:]}") from None
    return subprocess.CompletedProcess(probe.args, probe.returncode, out, err)


@pytest.mark.parametrize("grace", ["10"])  # create_worker's graceful_shutdown_timeout (0 behaves alike: 37 s more of make test for no new path)
def test_a_local_activity_failing_during_shutdown_leaves_no_timer_to_panic(grace):
    # The control and the guarded run are separate processes, each with its own time-skipping server
    # and task queue: they run side by side (most of each is the wait past the retry's timers).
    probes = [_start_probe("--grace", grace), _start_probe("--guarded", "--grace", grace)]
    try:
        unguarded, guarded = [_finish(probe) for probe in probes]
    finally:
        for probe in probes:  # the other one, when the first ran out of time
            if probe.poll() is None:
                probe.kill()
                probe.communicate()
    assert "done" in unguarded.stdout, unguarded.stderr[-2000:]
    assert "panicked" in unguarded.stderr, "sdk-core no longer panics here: the control does not reproduce"
    assert "done" in guarded.stdout and "attempts=" in guarded.stdout, guarded.stderr[-2000:]
    assert "panicked" not in guarded.stderr, guarded.stderr[-3000:]


async def test_create_worker_waits_for_the_cancel_longer_than_its_configured_window(temporal_env, sims, tmp_path,
                                                                                    task_queue):
    """``temporal.graceful_shutdown_seconds`` above the old fixed 120 s bound: the guard still outwaits it."""
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    settings = settings_for(sims, url)
    settings = settings.model_copy(update={"temporal": settings.temporal.model_copy(
        update={"graceful_shutdown_seconds": 300.0})})
    async with AsyncExitStack() as stack:
        worker = await create_worker(temporal_env.client, settings, stack, task_queue)
    [guard] = [i for i in worker.config()["interceptors"] if isinstance(i, LocalActivityShutdown)]
    assert worker.config()["graceful_shutdown_timeout"] == timedelta(seconds=300)
    assert guard.cancel_wait_seconds > 300
