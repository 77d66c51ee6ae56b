"""The one-command drills (``starter.py drill NAME``) pass: each starts its own stack, injects its
failure and checks its invariants; a violated invariant fails here with the drill's report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.quick_pass]
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name, args", [
    ("cancel", []), ("temporal-restart", []),
    # the stream drills at their --quick sizes (`make drills` runs them at full size)
    ("duplicate-storm", ["--quick"]), ("worker-crash", ["--quick"]), ("postgres-restart", ["--quick"]),
    ("forge-outage", ["--quick"]),
])
def test_drill_passes_through_its_command(name, args):
    done = subprocess.run([sys.executable, str(ROOT / "starter.py"), "drill", name, *args], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert f"drill {name}: PASSED" in done.stdout and "[VIOLATED]" not in done.stdout
    assert "injected:" in done.stdout and "invariants:" in done.stdout
