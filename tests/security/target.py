"""The system under attack: the whole dev stack as real processes, and what it did.

:class:`Target` wraps a running :class:`~sluicegate.devstack.DevStack` (Temporal dev server,
worker, webhook API, forge and model simulators) on a SQLite or PostgreSQL ledger, and reads
back everything an attack could have changed: rows in every ledger table, accepted receipts,
model calls (model simulator), comments and reads (forge simulator), the API's
``sluicegate.intake.unauthenticated`` counter (from its metrics export) and its peak memory.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass

import httpx
from sqlmodel import Session, select

import ledger
from demo.github_payloads import delivery_headers, encode, pull_request_payload
from ledger import Receipt, WorkVersion
from sluicegate.devstack import DevStack
from tests.support.ledger_rows import grown, table_counts

UNAUTHENTICATED_METRIC = "sluicegate.intake.unauthenticated"


@dataclass
class Observed:
    """What the outside world looked like at one moment."""

    rows: dict[str, int]
    model_calls: int
    comments: int
    forge_reads: int
    accepted: int


class Target:
    def __init__(self, stack: DevStack, backend: str) -> None:
        s = stack.settings
        self.stack, self.settings, self.backend = stack, s, backend
        self.ledger_url = s.ledger_url()
        self.api = f"http://{s.webhook_api.host}:{s.webhook_api.port}"
        self.forge = f"http://{s.simulators.forge.host}:{s.simulators.forge.port}"
        self.model = f"http://{s.simulators.model.host}:{s.simulators.model.port}"
        self.http = httpx.Client(timeout=60)

    # --- what the stack did --------------------------------------------------------------------

    def observe(self) -> Observed:
        engine = ledger.make_engine(self.ledger_url)
        try:
            with Session(engine) as s:
                accepted = len(s.exec(select(Receipt.id).where(Receipt.outcome == "accept")).all())
        finally:
            engine.dispose()
        forge = self.http.get(f"{self.forge}/_sim/stats").json()
        return Observed(table_counts(self.ledger_url), self.http.get(f"{self.model}/_sim/stats").json()["calls"],
                        len(self.http.get(f"{self.forge}/_sim/comments").json()), forge["total"], accepted)

    def changes(self, before: Observed, reads: bool = False) -> dict[str, object]:
        """Everything that changed since ``before``: ``{}`` when an attack left no trace.
        Forge reads are included only with ``reads`` (an authenticated delivery may be re-read)."""
        after = self.observe()
        changed: dict[str, object] = {f"rows.{k}": v for k, v in grown(before.rows, after.rows).items()}
        for name in ("model_calls", "comments", "accepted") + (("forge_reads",) if reads else ()):
            if getattr(after, name) != getattr(before, name):
                changed[name] = getattr(after, name) - getattr(before, name)
        return changed

    def unauthenticated(self) -> dict[tuple[str, str], int]:
        """The API process's refusal counter by (source, reason), from its latest metrics export."""
        traces = self.settings.path(self.settings.telemetry.file)
        path = traces.with_name(traces.stem + ".metrics.jsonl")
        totals: dict[tuple[str, str], int] = {}
        for line in path.read_text().splitlines() if path.exists() else []:
            for rm in json.loads(line)["resource_metrics"]:
                if rm["resource"]["attributes"]["service.name"] != "sluicegate-api":
                    continue
                latest: dict[tuple[str, str], int] = {}
                for sm in rm["scope_metrics"]:
                    for metric in sm["metrics"]:
                        if metric["name"] == UNAUTHENTICATED_METRIC:
                            for p in metric["data"]["data_points"]:
                                key = (p["attributes"]["source"], p["attributes"]["reason"])
                                latest[key] = latest.get(key, 0) + p["value"]
                totals = latest or totals  # cumulative: the last export holds the totals
        return totals

    def wait_counted(self, before: dict[tuple[str, str], int], expected: dict[tuple[str, str], int],
                     timeout: float = 30) -> dict[tuple[str, str], int]:
        """Wait for the next exports until the counter grew by ``expected``; the growth seen."""
        deadline = time.monotonic() + timeout
        while True:
            now = self.unauthenticated()
            delta = {k: now.get(k, 0) - before.get(k, 0) for k in set(now) | set(before)
                     if now.get(k, 0) != before.get(k, 0)}
            if delta == expected or time.monotonic() > deadline:
                return delta
            time.sleep(0.3)

    def wait_total(self, before: dict[tuple[str, str], int], expected: int, timeout: float = 30) -> int:
        """Wait for the next exports until the counter's total grew by ``expected``; the growth seen."""
        deadline = time.monotonic() + timeout
        while True:
            grew = sum(self.unauthenticated().values()) - sum(before.values())
            if grew >= expected or time.monotonic() > deadline:
                return grew
            time.sleep(0.3)

    def api_memory_kib(self) -> dict[str, int]:
        """``VmHWM`` (peak resident) and ``VmRSS`` of the API process, in KiB."""
        pid = self.stack.processes["webhook-api"].proc.pid
        fields = {}
        for line in open(f"/proc/{pid}/status", encoding="ascii"):
            name, _, value = line.partition(":")
            if name in ("VmHWM", "VmRSS"):
                fields[name] = int(value.split()[0])
        return fields

    # --- setting the scene ---------------------------------------------------------------------

    def new_pull(self) -> tuple[str, str, int, str]:
        owner, repo, number, sha = "acme", f"sec{uuid.uuid4().hex[:10]}", 7, uuid.uuid4().hex + "0" * 8
        self.http.post(f"{self.forge}/_sim/pulls/{owner}/{repo}/{number}",
                       json={"head_sha": sha, "state": "open"}).raise_for_status()
        return owner, repo, number, sha

    def done_version(self, timeout: float = 180) -> tuple[str, str, int, str]:
        """A pull request whose head was genuinely reviewed: admitted, run, commented, released."""
        pull = self.new_pull()
        body = encode(pull_request_payload(*pull))
        r = self.http.post(f"{self.api}/webhooks/github", content=body,
                           headers=delivery_headers(self.settings.sources["github"].secret, body))
        assert r.status_code == 202 and r.json()["admitted"], r.text
        return self.wait_done(pull, timeout)

    def wait_done(self, pull: tuple[str, str, int, str], timeout: float = 180) -> tuple[str, str, int, str]:
        """Wait until the run for ``pull``'s head is done and its last writes have landed."""
        key = f"github:{pull[0]}/{pull[1]}#{pull[2]}:review"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._version_status(key, pull[3]) == "done" and self._settled():
                return pull
            time.sleep(0.5)
        raise AssertionError(f"{key}@{pull[3]} did not finish within {timeout}s")

    def _version_status(self, key: str, sha: str) -> str | None:
        engine = ledger.make_engine(self.ledger_url)
        try:
            with Session(engine) as s:
                version = s.get(WorkVersion, (key, sha))
                return version.status if version else None
        finally:
            engine.dispose()

    def _settled(self) -> bool:
        """The run's last activities (slot release) have written what they write."""
        first = table_counts(self.ledger_url)
        time.sleep(1.0)
        return first["capacity_holds"] == 0 and table_counts(self.ledger_url) == first

    def close(self) -> None:
        self.http.close()
