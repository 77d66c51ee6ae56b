"""The benches' spinner (``bench._harness.stage``): shown while a bench measures on a terminal,
never with ``--json``, where stdout carries exactly one JSON document even when it is a terminal.

Runs the cheapest bench (``capacity_bench --quick``, a few seconds: no dev stack) on pseudo
terminals, so the spinner's own terminal check is passed and only the harness decides.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytestmark = [pytest.mark.quick_pass, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
HIDE_CURSOR = "\x1b[?25l"
"""What Rich's live display writes first; a spinner that ran leaves it in the output."""


def _drain(fd: int, into: bytearray) -> None:
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the slave closed (the child exited)
            return
        if not chunk:
            return
        into.extend(chunk)


def _run_on_terminals(*args: str) -> tuple[int, str, str]:
    """Run ``bench.capacity_bench --quick`` with stdout and stderr each on its own pseudo terminal."""
    outputs = []
    masters, slaves, readers = [], [], []
    for _ in range(2):
        master, slave = pty.openpty()
        buf = bytearray()
        masters.append(master), slaves.append(slave), outputs.append(buf)
        readers.append(threading.Thread(target=_drain, args=(master, buf), daemon=True))
    env = {**os.environ, "COLUMNS": "200", "TERM": "xterm"}
    proc = subprocess.Popen([sys.executable, "-m", "bench.capacity_bench", "--quick", *args], cwd=ROOT,
                            stdin=subprocess.DEVNULL, stdout=slaves[0], stderr=slaves[1], env=env)
    for fd in slaves:
        os.close(fd)
    for t in readers:
        t.start()
    try:
        rc = proc.wait(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for t in readers:
        t.join(10)
    for fd in masters:
        os.close(fd)
    return rc, outputs[0].decode(errors="replace"), outputs[1].decode(errors="replace")


def test_on_a_terminal_the_bench_shows_what_it_is_measuring():
    rc, out, err = _run_on_terminals()
    assert rc == 0, out[-2000:] + err[-2000:]
    assert HIDE_CURSOR in out
    assert "capacity: draining" in out and "capacity_bench: verification PASSED" in out


def test_with_json_stdout_is_one_json_document_and_no_spinner_runs_even_on_a_terminal():
    rc, out, err = _run_on_terminals("--json")
    assert rc == 0, err[-2000:]
    doc = json.loads(out)  # the terminal turns \n into \r\n: whitespace to JSON
    assert doc["bench"] == "capacity_bench" and doc["ok"] is True
    assert HIDE_CURSOR not in out and HIDE_CURSOR not in err
    assert "capacity: draining" not in err  # the spinner's text, never the report's
    assert "capacity_bench: verification PASSED" in err
