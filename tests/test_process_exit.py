"""Processes that used a Temporal client leave via ``run_then_exit``: exit code kept, atexit work done."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def _run(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    script = tmp_path / "prog.py"
    root = str(Path(__file__).resolve().parents[1])
    lines = ["import atexit, sys", f"sys.path.insert(0, {root!r})",
             "from sluicegate.temporal.process_exit import run_then_exit",
             f"atexit.register(lambda: open({str(tmp_path / 'flushed')!r}, 'w').write('yes'))",
             "def main():", textwrap.indent(textwrap.dedent(body).strip(), "    "),
             "run_then_exit(main)", "print('never reached')"]
    script.write_text("\n".join(lines) + "\n")
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)


def test_exit_code_from_system_exit_is_kept_and_atexit_handlers_run(tmp_path):
    done = _run(tmp_path, "print('working', end='')\nraise SystemExit(3)")
    assert done.returncode == 3
    assert done.stdout == "working"  # buffered output flushed, nothing after run_then_exit
    assert (tmp_path / "flushed").read_text() == "yes"


def test_returned_int_and_message_exits(tmp_path):
    assert _run(tmp_path, "return 4").returncode == 4
    failed = _run(tmp_path, "raise SystemExit('bad config')")
    assert failed.returncode == 1 and "bad config" in failed.stderr


def test_after_a_temporal_runtime_was_started(tmp_path):
    done = _run(tmp_path, """
        import asyncio
        from temporalio.runtime import Runtime
        Runtime.default()
        return 0
    """)
    assert done.returncode == 0, done.stderr
