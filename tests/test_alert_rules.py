"""ops/alerts.yml: promtool accepts the rules and their unit tests pass (Debian's ``prometheus``
package; `.ci/run` installs it). A missing promtool FAILS here: the alerts are part of the proof."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
OPS = ROOT / "ops"


def _promtool(*args: str) -> subprocess.CompletedProcess:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: apt-get install prometheus (what .ci/run does)"
    return subprocess.run([promtool, *args], cwd=OPS, capture_output=True, text=True, timeout=120)


def alerts() -> list[dict]:
    doc = yaml.safe_load((OPS / "alerts.yml").read_text())
    return [rule for group in doc["groups"] for rule in group["rules"] if "alert" in rule]


def test_promtool_checks_the_rules():
    done = _promtool("check", "rules", "alerts.yml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_promtool_rule_unit_tests_pass():
    done = _promtool("test", "rules", "alerts_test.yml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_alert_is_unit_tested_and_has_a_runbook_entry():
    tested = set(re.findall(r"alertname: (\w+)", (OPS / "alerts_test.yml").read_text()))
    runbook = (ROOT / "docs" / "runbook.md").read_text()
    for rule in alerts():
        name = rule["alert"]
        assert name in tested, f"{name} has no promtool unit test"
        anchor = rule["annotations"]["runbook"].split("#", 1)[1]
        assert anchor == f"alert-{name.lower()}"
        assert re.search(rf"^#+ .*<a id=\"{anchor}\"></a>", runbook, re.M), f"docs/runbook.md has no entry {anchor}"
