"""The layers hold: ``lint-imports`` checks ``.importlinter`` (layers, forbidden imports, no module
cycles), and ``tools/restructure.py --check`` finds nothing still named by its old module path.

See docs/architecture.md, "Layers". A failure prints import-linter's report: the import that
breaks a layer, or the cycle and the dependencies that would break it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=240)


def test_import_contract_is_kept():
    done = _run("-c", "import sys; from importlinter.cli import lint_imports_command; "
                      "sys.argv = ['lint-imports', '--no-cache']; lint_imports_command()")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "BROKEN" not in done.stdout


def test_no_reference_to_a_moved_module_is_left():
    done = _run("tools/restructure.py", "--check")
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_sluicegate_module_has_a_layer():
    """A module added directly under ``sluicegate/`` is checked by no layer until it is given one
    (a sub-package, or a line in tools/restructure.py's move table)."""
    import configparser
    import pkgutil
    import re

    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    layered = set(re.split(r"[\s|:]+", config["importlinter:contract:layers"]["layers"]))
    children = {f"sluicegate.{m.name}" for m in pkgutil.iter_modules([str(ROOT / "sluicegate")])}
    assert children - layered == set()
