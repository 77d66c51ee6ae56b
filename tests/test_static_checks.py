"""The static checks pass: ``ruff check`` (bug-finding rules, ``[tool.ruff]``) and ``mypy``
(``[tool.mypy]``: the first-party packages, strict on ``intake`` and ``workflows``), both configured
in pyproject.toml and run from this venv, so ``make test`` fails on a finding and prints it.

See docs/architecture.md, "Static checks". mypy keeps its cache in ``.mypy_cache`` (gitignored):
a warm run re-checks only what changed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_ruff_finds_nothing():
    done = _run("ruff", "check", "--no-fix", "--output-format", "concise", ".", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing():
    # the files, the strict modules and the cache directory come from pyproject.toml
    done = _run("mypy", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout, done.stdout + done.stderr
