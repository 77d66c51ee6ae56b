"""What every bench script shares: its common options and its one JSON document.

Each script (``python -m bench.<name>``) builds its parser with :func:`parser` (``--quick``,
``--json``, ``--keep``), collects a :class:`BenchReport` of :class:`Measurement` rows and ends
with :func:`finish`. With ``--json`` the human report goes to stderr and stdout carries exactly
one JSON document: the configuration, every measurement (how capacity was set up for it, its
figures and ratios, whether its verification passed) and a ``verification`` map.

The spinner (:func:`stage`) and :func:`every` (periodic work for the length of a block) live in
``bench/_progress.py``; stack set-up (throwaway PostgreSQL databases, the forge simulator) in
``bench/_stack.py``; interleaved rounds and their statistics in ``bench/_rounds.py``; report tables
in ``bench/_tables.py``. This module re-exports the first two, so ``from bench._harness import
stage, every`` keeps working.

Exit status 0 when every measurement that ran verified (whatever the ratios: speed is
reported, never asserted); 1 when one errored or failed its verification.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import traceback
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from bench._progress import SPINNER_TICK, every, spinning, stage

__all__ = ["SCHEMA", "SPINNER_TICK", "BenchReport", "Measurement", "config_of", "every", "finish", "parser", "stage"]

SCHEMA = "sluicegate.bench/1"


def parser(doc: str) -> argparse.ArgumentParser:
    """The bench's parser, with the options every bench takes."""
    p = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="verification run: small sizes, checks every measurement's verification, not speed")
    p.add_argument("--json", action="store_true",
                   help="print one JSON document on stdout (the human-readable report goes to stderr)")
    p.add_argument("--keep", action="store_true", help="keep the temp directory (ledgers, dev-server DB, logs)")
    return p


@dataclass
class Measurement:
    """One measurement of one bench run."""

    name: str
    capacity: str
    """How capacity was configured for it: limits lifted, a worker drains, limits under test, not involved."""
    figures: dict[str, Any] = field(default_factory=dict)
    ratios: dict[str, Any] = field(default_factory=dict)
    """Sluicegate / peer (or loop / bare), each with its target where there is one."""
    verified: bool | None = None
    """Verification passed (True), failed or errored (False), not run (None: see ``skipped``)."""
    checks: list[str] = field(default_factory=list)
    """What the verification counted, human-readable."""
    skipped: str | None = None
    error: str | None = None


@dataclass
class BenchReport:
    bench: str
    config: dict[str, Any]
    measurements: list[Measurement] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """Failures outside any one measurement (stack start/stop, report)."""

    def add(self, m: Measurement) -> Measurement:
        self.measurements.append(m)
        return m

    @property
    def verification(self) -> dict[str, bool]:
        return {m.name: bool(m.verified) for m in self.measurements if m.skipped is None}

    @property
    def ok(self) -> bool:
        return not self.errors and all(self.verification.values())

    def document(self) -> dict[str, Any]:
        return _plain({"schema": SCHEMA, "bench": self.bench, "ok": self.ok, "config": self.config,
                       "verification": self.verification,
                       "measurements": [asdict(m) for m in self.measurements], "errors": self.errors})


def _plain(x: Any) -> Any:
    """JSON-safe: NaN and infinities become null (strict JSON has no NaN)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def config_of(a: argparse.Namespace) -> dict[str, Any]:
    """The parsed options, as the configuration used (tuples become lists, URL passwords hidden)."""
    return _plain({k: _no_password(v) for k, v in vars(a).items() if k != "json"})


def _no_password(v: Any) -> Any:
    if isinstance(v, str) and "://" in v and "@" in v:
        scheme, rest = v.split("://", 1)
        userinfo, host = rest.rsplit("@", 1)
        return f"{scheme}://{userinfo.split(':', 1)[0]}{':***' if ':' in userinfo else ''}@{host}"
    return v


def finish(a: argparse.Namespace, run: Callable[[], BenchReport], bench: str) -> int:
    """Run the bench (its human report on stdout, or on stderr with ``--json``), then print the JSON
    document and the verdict line; returns the exit status."""
    out = sys.stdout
    with contextlib.redirect_stdout(sys.stderr) if a.json else contextlib.nullcontext():
        try:
            with spinning(a, bench):
                report = run()
        except Exception as exc:  # noqa: BLE001 - a broken bench is a failed run, never a traceback-only exit
            traceback.print_exc()
            report = BenchReport(bench, config_of(a), errors=[f"{type(exc).__name__}: {exc}"])
        failed = [n for n, ok in report.verification.items() if not ok]
        print(f"{bench}: " + ("verification PASSED for every measurement" if report.ok else
                              "verification FAILED: " + "; ".join(failed + report.errors)), flush=True)
    if a.json:
        out.write(json.dumps(report.document(), indent=2, allow_nan=False) + "\n")
        out.flush()
    return 0 if report.ok else 1
