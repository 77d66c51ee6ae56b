"""``CpuMeter.settle``: a timed round waits for the stack to go idle, and gives up at its limit."""

from __future__ import annotations

import os
import subprocess
import sys

from bench._e2e_cpu import CpuMeter


def _meter(pid: int) -> CpuMeter:
    meter = CpuMeter.__new__(CpuMeter)  # no dev stack: one child process stands for it
    meter.pids = {"stack": pid, "bench": os.getpid()}
    return meter


def _child(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code])


def test_a_busy_stack_is_waited_for_up_to_the_limit_and_an_idle_one_not_at_all():
    busy, idle = _child("while True: pass"), _child("import time; time.sleep(60)")
    try:
        assert _meter(busy.pid).settle(window=0.2, limit=1.0) >= 1.0  # never idle: the whole limit
        assert _meter(idle.pid).settle(window=0.2, limit=5.0) < 5.0  # idle once started: before the limit
    finally:
        for child in (busy, idle):
            child.kill()
            child.wait()
