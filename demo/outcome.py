"""What the demo (or the end-to-end test) observed, and the invariants it must satisfy.

Facts come from the systems themselves — the ledger, the forge simulator's comments,
the model simulator's counters — never from what the scenario expected.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlmodel import Session, select

from activities.keys import marker_for, operation_key
from demo.scenario import Sent
from ledger import DeferredItem, Receipt, WorkVersion, make_engine
from sluicegate.config.settings import Settings
from workflows.contracts import RunStatus

TRIAGE_SUFFIX = ":triage"
COMMENT_OPERATION = {"review": "post_review_comment", "triage": "post_triage_comment"}
"""The comment each task posts once per version (its operation key names the comment's marker)."""
TERMINAL = frozenset(RunStatus)
"""Every status an order can end with (a version in any other status is still in flight)."""


@dataclass
class Observed:
    receipts: list[Receipt]
    versions: list[WorkVersion]
    comments: list[dict[str, Any]]
    model_stats: dict[str, Any]
    forge_stats: dict[str, Any] = field(default_factory=dict)
    issues: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The forge's stored state of every issue a triage delivery named, by target id (``acme/docs#1``)."""
    allowed_labels: list[str] = field(default_factory=list)
    """``tasks.triage.labels``: the only labels triage may apply."""


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""


@dataclass
class Verdict:
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def add(self, name: str, ok: bool, detail: str = "") -> None:
        self.checks.append(Check(name, ok, detail))


def wait_for_runs(settings: Settings, timeout: float = 180.0,
                  progress: Callable[[str], None] | None = None) -> list[WorkVersion]:
    """Wait until nothing waits in the deferred queue and every admitted work version has
    finished; returns the versions. ``progress`` hears a one-line state after each look."""
    engine = make_engine(settings.ledger_url())
    started = time.monotonic()
    deadline = started + timeout
    try:
        while True:
            with Session(engine) as s:
                versions = list(s.exec(select(WorkVersion)).all())
                queued = len(s.exec(select(DeferredItem.id).where(DeferredItem.status == "waiting")).all())
            finished = sum(v.status in TERMINAL for v in versions)
            if progress is not None:
                progress(f"{finished}/{len(versions)} work versions finished, {queued} queued "
                         f"({time.monotonic() - started:.0f}s of at most {timeout:.0f}s)")
            if (queued == 0 and finished == len(versions)) or time.monotonic() > deadline:
                return versions
            time.sleep(0.5)
    finally:
        engine.dispose()


def observe(settings: Settings) -> Observed:
    engine = make_engine(settings.ledger_url())
    with Session(engine) as s:
        receipts = list(s.exec(select(Receipt).order_by(Receipt.created_at)).all())
        versions = list(s.exec(select(WorkVersion)).all())
    engine.dispose()
    forge, model = settings.simulators.forge, settings.simulators.model
    comments = httpx.get(f"http://{forge.host}:{forge.port}/_sim/comments", timeout=10).json()
    stats = httpx.get(f"http://{model.host}:{model.port}/_sim/stats", timeout=10).json()
    forge_stats = httpx.get(f"http://{forge.host}:{forge.port}/_sim/stats", timeout=10).json()
    issues = {}
    for target in sorted({r.target_id for r in receipts if r.work_key and r.work_key.endswith(TRIAGE_SUFFIX)
                          and r.target_id}):
        repo, _, number = target.partition("#")
        answer = httpx.get(f"http://{forge.host}:{forge.port}/_sim/issues/{repo}/{number}", timeout=10)
        if answer.status_code == 200:
            issues[target] = answer.json()
    return Observed(receipts, versions, comments, stats, forge_stats, issues, list(settings.tasks.triage.labels))


def judge(sent: list[Sent], seen: Observed) -> Verdict:
    v = Verdict()
    by_delivery = Counter(r.delivery_id for r in seen.receipts)
    missing = [s.label for s in sent if by_delivery[s.delivery_id] == 0 and not s.unauthenticated]
    v.add("every authenticated delivery has a receipt", not missing, ", ".join(missing))
    forged = [s.label for s in sent if by_delivery[s.delivery_id] and s.unauthenticated]
    v.add("no receipt for an unauthenticated delivery (counted instead)", not forged, ", ".join(forged))
    wrong = [f"{s.label}: expected {s.expect}, got {s.got}" for s in sent if s.got != s.expect]
    v.add("every delivery decided as expected", not wrong, "; ".join(wrong))
    deferred = {r.delivery_id for r in seen.receipts if r.outcome == "defer"}
    later = {r.delivery_id for r in seen.receipts if r.outcome == "accept" and r.delivery_id in deferred}
    v.add("every delivery deferred for capacity was admitted once its slot freed", deferred == later,
          f"deferred {len(deferred)}, admitted later {len(later)}")
    accepted = {(r.work_key, r.input_version) for r in seen.receipts if r.outcome == "accept"}
    runs = Counter((w.work_key, w.input_version) for w in seen.versions)
    v.add("one run per (work key, version)", set(runs) == accepted and all(n == 1 for n in runs.values()),
          f"{len(runs)} runs for {len(accepted)} accepted versions")
    unfinished = [f"{w.work_key}@{w.input_version[:8]}={w.status}" for w in seen.versions
                  if w.status not in ("done", "superseded")]
    v.add("every admitted run finished (done, or superseded by a newer version)", not unfinished,
          ", ".join(unfinished))
    per_op = Counter()
    for c in seen.comments:
        for key, version in accepted:
            operation = COMMENT_OPERATION[key.rpartition(":")[2]]
            if marker_for(operation_key(key, operation, version)) in (c.get("body") or ""):
                per_op[(key, version)] += 1
    status = {(w.work_key, w.input_version): w.status for w in seen.versions}
    # A superseded version stops at a step boundary: it may or may not have posted before that.
    bad = [f"{k}@{ver[:8]}: {per_op[(k, ver)]}" for k, ver in accepted
           if per_op[(k, ver)] > 1 or (status.get((k, ver)) == "done" and per_op[(k, ver)] != 1)]
    v.add("exactly one comment per finished version, at most one per superseded one",
          not bad and len(seen.comments) == sum(per_op.values()), ", ".join(bad) or f"{len(seen.comments)} comments")
    _judge_triage(v, sent, seen, accepted, per_op, status)
    called = {k for k, n in seen.model_stats.get("by_work", {}).items() if n}
    allowed = {f"{k}@{ver}" for k, ver in accepted}
    v.add("no model call for a rejected delivery", called <= allowed, ", ".join(sorted(called - allowed)))
    outside = {s.work_key for s in sent if s.got == ("reject", "out-of-scope")}
    read = {r.target_id.partition("#")[0].lower() for r in seen.receipts if r.work_key in outside and r.target_id}
    reads = {repo: seen.forge_stats.get("by_repository", {}).get(repo, 0) for repo in read}
    v.add("no forge read for a repository out of its source's scope", bool(outside) and not any(reads.values()),
          ", ".join(f"{repo}: {n} requests" for repo, n in reads.items()))
    steps = sum((w.result or {}).get("steps", 0) for w in seen.versions)
    v.add("model calls = steps recorded by the runs", seen.model_stats.get("calls") == steps,
          f"{seen.model_stats.get('calls')} calls, {steps} steps")
    return v


def _judge_triage(v: Verdict, sent: list[Sent], seen: Observed, accepted: set[tuple[str, str]],
                  per_op: Counter, status: dict[tuple[str, str], str]) -> None:
    """The issue-triage invariants (the deliveries the demo sends for issues)."""
    triage = {(k, ver) for k, ver in accepted if k.endswith(TRIAGE_SUFFIX)}
    wrong = [f"{k}@{ver}: {per_op[(k, ver)]} comments, run {status.get((k, ver))}" for k, ver in sorted(triage)
             if per_op[(k, ver)] != 1 or status.get((k, ver)) != "done"]
    v.add("exactly one triage comment per admitted issue version", bool(triage) and not wrong, ", ".join(wrong))
    allowed = {label.casefold() for label in seen.allowed_labels}
    admitted = {r.target_id for r in seen.receipts
                if r.outcome == "accept" and (r.work_key or "").endswith(TRIAGE_SUFFIX)}
    labels = {t: seen.issues.get(t, {}).get("labels", []) for t in admitted}
    outside = [f"{t}: {sorted(set(ls) - {x for x in ls if x.casefold() in allowed})}" for t, ls in labels.items()
               if not ls or any(x.casefold() not in allowed for x in ls)]
    v.add("labels applied to triaged issues are a non-empty subset of tasks.triage.labels",
          bool(admitted) and not outside, ", ".join(outside))
    sends = Counter(s.delivery_id for s in sent if (s.work_key or "").endswith(TRIAGE_SUFFIX))
    redelivered = [d for d, n in sends.items() if n > 1]
    undeduped = []
    for d in redelivered:  # a redelivery is answered from the first receipt: one row, one run
        rows = [(r.outcome, r.reason, r.work_key, r.input_version) for r in seen.receipts if r.delivery_id == d]
        later = [s.got for s in sent if s.delivery_id == d][1:]
        runs = sum(1 for w in seen.versions if rows and (w.work_key, w.input_version) == rows[0][2:])
        if len(rows) != 1 or rows[0][:2] != ("accept", "admitted") or runs != 1 or \
                any(got != ("reject", "duplicate-delivery") for got in later):
            undeduped.append(f"{d[:13]}: {len(rows)} receipts, {runs} runs, redeliveries answered {later}")
    v.add("an issue delivery sent twice ran once (the redelivery deduped)", bool(redelivered) and not undeduped,
          ", ".join(undeduped))
    closed = {t for t, issue in seen.issues.items() if issue.get("state") == "closed"}
    on_closed = [r for r in seen.receipts if r.target_id in closed and (r.work_key or "").endswith(TRIAGE_SUFFIX)]
    ran = [w.work_key for w in seen.versions if w.work_key in {r.work_key for r in on_closed}]
    v.add("an issues event for a closed issue is refused target-closed, with no run",
          bool(on_closed) and all((r.outcome, r.reason) == ("reject", "target-closed") for r in on_closed) and not ran,
          ", ".join(f"{r.target_id}: {r.outcome}/{r.reason}" for r in on_closed) + (f"; ran {ran}" if ran else ""))
