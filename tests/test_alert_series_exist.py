"""Every Sluicegate series an alert rule queries is one the code creates.

``promtool test rules`` feeds the rules made-up series, so it cannot tell when the code stopped
exporting one (a renamed instrument): the alert would then never fire. This reads the rules, and
the instrument names in the code (the OpenTelemetry name with dots; Prometheus turns dots into
underscores and appends the unit and ``_total``/``_sum`` suffixes), and checks each series
starts with one of them."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CODE_DIRS = ("sluicegate", "activities", "intake", "webhook_api", "worker.py")
NAME = re.compile(r"""["'](sluicegate\.[a-z_][a-z0-9_.]*)["']""")


def _alert_series() -> set[str]:
    rules = yaml.safe_load((ROOT / "ops" / "alerts.yml").read_text())
    exprs = [r["expr"] for g in rules["groups"] for r in g["rules"] if "alert" in r]
    return {m for e in exprs for m in re.findall(r"\bsluicegate_[A-Za-z0-9_]+", e)}


def _instrument_names() -> set[str]:
    files = [p for d in CODE_DIRS for p in ((ROOT / d).rglob("*.py") if (ROOT / d).is_dir() else [ROOT / d])]
    return {m.replace(".", "_") for f in files for m in NAME.findall(f.read_text())}


def test_every_series_an_alert_queries_is_created_by_the_code():
    names = _instrument_names()
    series = _alert_series()
    assert series, "no sluicegate_ series found in ops/alerts.yml"
    missing = sorted(s for s in series if not any(s.startswith(n + "_") or s == n for n in names))
    assert not missing, f"alert rules query series no instrument creates: {missing}"
