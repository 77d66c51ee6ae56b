"""What every bench script shares: its common options and its one JSON document.

Each script (``python -m bench.<name>``) builds its parser with :func:`parser` (``--quick``,
``--json``, ``--keep``), collects a :class:`BenchReport` of :class:`Measurement` rows and ends
with :func:`finish`. With ``--json`` the human report goes to stderr and stdout carries exactly
one JSON document: the configuration, every measurement (how capacity was set up for it, its
figures and ratios, whether its verification passed) and a ``verification`` map.

While a bench runs on a terminal, one spinner (``sluicegate.observability.progress``) shows the
measurement in progress and the time elapsed; each bench names its stages with :func:`stage`. With
``--json``, or when stdout is not a terminal, there is no spinner and :func:`stage` does nothing.

:func:`every` runs a periodic coroutine (a scheduled dispatch pass) for the length of a block.

Exit status 0 when every measurement that ran verified (whatever the ratios: speed is
reported, never asserted); 1 when one errored or failed its verification.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import sys
import traceback
from dataclasses import asdict, dataclass, field
from typing import Any, AsyncIterator, Awaitable, Callable

from sluicegate.observability.progress import SILENT, Status, spinner

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


@contextlib.asynccontextmanager
async def every(seconds: float, work: Callable[[], Awaitable[object]]) -> AsyncIterator[None]:
    """Await ``work()`` at once and then every ``seconds`` while the block runs; on leaving it, the
    call in progress finishes and no other starts (a scheduled dispatch pass, as the dispatcher's
    ``dispatch_interval_seconds`` timer runs it)."""
    stop = asyncio.Event()

    async def loop() -> None:
        while not stop.is_set():
            await work()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), seconds)

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        stop.set()
        await task


_status: Status = SILENT
"""The running bench's spinner (set by :func:`finish`), or one that shows nothing."""

SPINNER_TICK = 1.0
"""Seconds between redraws of the elapsed time, so a measurement that prints nothing shows it is alive."""


def stage(text: str) -> None:
    """Name what the bench is measuring now (``capacity burst: draining``) on its spinner; a no-op
    with ``--json``, when stdout is not a terminal, or outside :func:`finish`."""
    _status.update(text)


@contextlib.contextmanager
def _spinning(a: argparse.Namespace, bench: str):
    """The bench's spinner while ``run`` runs: never with ``--json`` (stdout then carries only the
    document, and stderr the human report), and only on a terminal (``progress.spinner`` checks)."""
    global _status
    if a.json:
        yield
        return
    with spinner(f"{bench}: starting", tick=SPINNER_TICK) as status:
        _status = status
        try:
            yield
        finally:
            _status = SILENT


def finish(a: argparse.Namespace, run: Callable[[], BenchReport], bench: str) -> int:
    """Run the bench (its human report on stdout, or on stderr with ``--json``), then print the JSON
    document and the verdict line; returns the exit status."""
    out = sys.stdout
    with contextlib.redirect_stdout(sys.stderr) if a.json else contextlib.nullcontext():
        try:
            with _spinning(a, bench):
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
