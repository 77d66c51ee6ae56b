"""The drill harness: a throwaway stack, a report of what was injected and checked, shared probes.

Failure modes it is written against: a drill that raises half-way still stops its stack and
reports the exception as a failed check; processes left running after the stop are a failed
check too; nothing is asserted from what the drill expected — every fact is read back from the
ledger, Temporal or the simulators.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from sqlmodel import Session, select

from activities.keys import marker_for, operation_key
from demo.outcome import Verdict
from ledger import CapacityLedger, DeadLetters, WorkVersion, make_engine
from ledger._budgets import BudgetReservation
from sluicegate.devstack import DevStack, StackHttp, isolated_overrides

POST_COMMENT = "post_review_comment"


@dataclass
class DrillReport:
    name: str
    injected: list[str] = field(default_factory=list)
    verdict: Verdict = field(default_factory=Verdict)
    figures: list[str] = field(default_factory=list)
    kept: Path | None = None

    @property
    def ok(self) -> bool:
        return self.verdict.ok

    def inject(self, what: str) -> None:
        self.injected.append(what)
        print(f"  injected: {what}", flush=True)

    def check(self, name: str, ok: bool, detail: str = "") -> None:
        self.verdict.add(name, ok, detail)

    def figure(self, text: str) -> None:
        self.figures.append(text)

    def render(self) -> str:
        lines = [f"drill {self.name}", "injected:"] + [f"  - {i}" for i in self.injected] + ["invariants:"]
        lines += [f"  [{'ok' if c.ok else 'VIOLATED'}] {c.name}" + (f" — {c.detail}" if c.detail else "")
                  for c in self.verdict.checks]
        lines += ["figures:"] + [f"  {f}" for f in self.figures] if self.figures else []
        if self.kept is not None:
            lines.append(f"stack directory kept for inspection: {self.kept} (logs in logs/)")
        lines.append(f"drill {self.name}: {'PASSED' if self.ok else 'FAILED'}")
        return "\n".join(lines)


def run_drill(name: str, body: Callable[[DevStack, DrillReport], None], overrides: dict[str, str] | None = None,
              keep: bool = False) -> DrillReport:
    """Start a stack of its own, run ``body``, stop everything; keep the directory on failure."""
    tmp = Path(tempfile.mkdtemp(prefix=f"sluicegate-drill-{name}-"))
    env = {**isolated_overrides(tmp), "SLUICEGATE_TELEMETRY_EXPORTER": "none", **(overrides or {})}
    stack = DevStack(env, headless=True, log_dir=tmp / "logs")
    report = DrillReport(name)
    print(f"drill {name}: starting a stack in {tmp}", flush=True)
    try:
        stack.start()
        body(stack, report)
    except Exception as exc:  # noqa: BLE001 - a broken drill is a failed check, and the stack still stops
        report.check("the drill ran to its end", False, repr(exc))
    finally:
        stack.stop()
        report.check("nothing left running after the stop", stack.leftover() == [], ", ".join(stack.leftover()))
    if report.ok and not keep:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        report.kept = tmp
    return report


def starter(stack: DevStack, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python starter.py ARGS`` against the drill's stack, as an operator would run it."""
    return subprocess.run([sys.executable, str(stack.settings.base_dir / "starter.py"), *args],
                          env={**stack.env, **(env or {})}, capture_output=True, text=True, timeout=120)


def brief(answer: dict) -> str:
    """An intake answer as ``outcome/reason``."""
    return f"{answer.get('outcome')}/{answer.get('reason')}"


def tail(done: subprocess.CompletedProcess, chars: int = 200) -> str:
    """The end of a command's output on one line."""
    return " ".join((done.stdout + done.stderr).split())[-chars:]


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def model_call_arrived(web: StackHttp, work_key: str) -> Callable[[], bool]:
    return lambda: any(k.startswith(work_key + "@") for k in web.model_stats()["by_work"])


def versions(stack: DevStack, work_key: str | None = None) -> list[WorkVersion]:
    engine = make_engine(stack.settings.ledger_url())
    query = select(WorkVersion) if work_key is None else select(WorkVersion).where(WorkVersion.work_key == work_key)
    with Session(engine) as s:
        rows = list(s.exec(query))
    engine.dispose()
    return rows


def leftovers(stack: DevStack, work_key: str) -> tuple[list[str], list[str], list[str]]:
    """What a finished work key must not hold: capacity slots, open budget holds, dead letters."""
    engine = make_engine(stack.settings.ledger_url())
    slots = [h.slot_key for h in CapacityLedger(engine).holds() if h.work_key == work_key]
    with Session(engine) as s:
        holds = [r.id for r in s.exec(select(BudgetReservation).where(
            BudgetReservation.work_key == work_key, BudgetReservation.status == "reserved"))]
    letters = [d.id for d in DeadLetters(engine).list(status=None, limit=1000) if d.work_key == work_key]
    engine.dispose()
    return slots, holds, letters


def comments_for(web: StackHttp, work_key: str, version: str) -> int:
    marker = marker_for(operation_key(work_key, POST_COMMENT, version))
    return sum(marker in (c.get("body") or "") for c in web.comments())


def workflow_status(stack: DevStack, workflow_id: str) -> str:
    async def describe() -> str:
        from sluicegate.temporal.client import connect

        desc = await (await connect(stack.settings)).get_workflow_handle(workflow_id).describe()
        return desc.status.name if desc.status else "unknown"

    return asyncio.run(describe())
