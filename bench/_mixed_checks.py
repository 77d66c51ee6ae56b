"""The mixed-stream bench's verification: the invariants each phase must hold (ledger, Temporal,
simulators), as :class:`Check` rows; a failed fatal check fails the bench, others are warnings."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from activities.keys import marker_for, operation_key
from bench._mixed_results import IntakeResult, NaiveResult, expected_workflow_ids
from bench._stream import EXPECTED, Stream
from workflows.review_task import POST_COMMENT


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""
    fatal: bool = True
    """A failed fatal check (an invariant) makes the exit status 1; others are warnings."""


def _few(items, n: int = 4) -> str:
    items = sorted(map(str, items))
    return ", ".join(items[:n]) + (f" (+{len(items) - n} more)" if len(items) > n else "")


def intake_checks(stream: Stream, r: IntakeResult) -> list[Check]:
    checks: list[Check] = []
    errors = [f"#{i} {a.label}" for i, a in enumerate(r.answers) if a.error is not None or a.status is None
              or a.status >= 500]
    checks.append(Check("every delivery answered (no transport error, no 5xx)", not errors,
                        f"{len(errors)} errored: {_few(errors)}" if errors else f"{len(r.answers)} answered"))

    # Per delivery id: the original's expected answer once, duplicate-delivery for every other send
    # (which send gets which may swap when a redelivery races its original).
    by_id: dict[str, list] = defaultdict(list)
    for it, a in zip(stream.items, r.answers, strict=True):
        by_id[it.delivery_id].append((it, a))
    wrong = []
    for sends in by_id.values():
        original = next(it for it, _ in sends if it.origin is None)
        want = Counter([EXPECTED[original.kind]] + [EXPECTED["redeliver"]] * (len(sends) - 1))
        got = Counter((a.outcome, a.reason) for _, a in sends)
        if want != got:
            wrong.append(f"{original.kind} #{original.index} {original.work_key}@{original.sha[:8]}: "
                         f"got {dict(got)}")
    checks.append(Check("every delivery decided as its kind expects", not wrong,
                        f"{len(wrong)} delivery ids off: {_few(wrong, 3)}" if wrong
                        else f"{len(by_id)} delivery ids", fatal=False))

    admitted = {(v.work_key, v.input_version) for v in r.versions}
    new = stream.new_items
    checks.append(Check("work versions admitted (ledger) == unique new (PR, head) items in the stream",
                        admitted == new,
                        f"{len(admitted)} admitted vs {len(new)} unique new items"
                        + (f"; only admitted: {_few(admitted - new)}" if admitted - new else "")
                        + (f"; never admitted: {_few(new - admitted)}" if new - admitted else "")))

    keys = {v.work_key for v in r.versions}
    want_ids = expected_workflow_ids(r.versions)
    checks.append(Check("AgentLoop workflows (Temporal) == distinct work keys admitted (ledger)",
                        r.workflow_ids == want_ids,
                        f"{len(r.workflow_ids)} workflow ids vs {len(keys)} work keys"
                        + (f"; unexpected: {_few(r.workflow_ids - want_ids)}" if r.workflow_ids - want_ids else "")
                        + (f"; missing: {_few(want_ids - r.workflow_ids)}" if want_ids - r.workflow_ids else "")))

    runs = {(v.workflow_id, v.run_id) for v in r.versions}
    per_id = Counter(w for w, _ in r.phase.executions)
    checks.append(Check("AgentLoop executions (Temporal) == runs recorded on work versions (ledger)",
                        r.phase.executions == runs,
                        f"{len(r.phase.executions)} executions vs {len(runs)} recorded; "
                        f"{sum(n > 1 for n in per_id.values())} work keys ran in more than one execution "
                        f"(a version admitted after the previous run had finished)"))

    by_work = {k for k, n in r.phase.model.get("by_work", {}).items() if n}
    allowed = {f"{k}@{v}" for k, v in admitted}
    checks.append(Check("no model call for a rejected delivery (model calls only for admitted versions)",
                        by_work <= allowed,
                        f"{len(by_work)} (work key, version) pairs called the model, all admitted"
                        if by_work <= allowed else f"calls for never-admitted versions: {_few(by_work - allowed)}"))
    steps = sum((v.result or {}).get("steps", 0) for v in r.versions)
    checks.append(Check("model calls == steps recorded by admitted runs, > 0 when work was admitted",
                        r.phase.calls == steps and (steps > 0 or not admitted), f"{r.phase.calls} calls, {steps} steps"))

    per_op: Counter = Counter()
    markers = {marker_for(operation_key(k, POST_COMMENT, v)): (k, v) for k, v in admitted}
    stray = 0
    for c in r.phase.comments:
        body = c.get("body") or ""
        hit = next((kv for m, kv in markers.items() if m in body), None)
        per_op[hit] += hit is not None
        stray += hit is None
    status = {(v.work_key, v.input_version): v.status for v in r.versions}
    bad = [f"{k}@{ver[:8]}={status[(k, ver)]}:{per_op[(k, ver)]}" for k, ver in admitted
           if per_op[(k, ver)] > 1 or (status[(k, ver)] == "done" and per_op[(k, ver)] != 1)]
    checks.append(Check("one comment per done version, at most one per superseded one, none stray",
                        not bad and not stray, f"{len(r.phase.comments)} comments, {stray} stray"
                        + (f"; off: {_few(bad)}" if bad else ""), fatal=False))
    return checks


def naive_checks(stream: Stream, n: NaiveResult) -> list[Check]:
    """Not vacuous: every delivery's run must have reviewed (ended ``done``, so at least one model
    call each); a naive run refused at its claim makes no call, and "0 calls == 0 steps" compares
    intake with nothing."""
    total = len(stream.items)
    done = n.statuses.get("done", 0)
    return [Check("naive: every workflow started and finished", not n.errors and n.starts == total,
                  f"{n.starts}/{total} started, {sum(n.statuses.values())} orders finished"
                  + (f"; errors: {_few(n.errors, 2)}" if n.errors else "")),
            Check("naive: AgentLoop executions (Temporal) == deliveries", len(n.phase.executions) == total,
                  f"{len(n.phase.executions)} executions for {total} deliveries"),
            Check("naive: every delivery reviewed (order done, >= 1 model call each)",
                  done == total and n.phase.calls >= total,
                  f"{done}/{total} orders done, {n.phase.calls} model calls; outcomes {dict(n.statuses)}"),
            Check("naive: model calls == steps recorded by the runs", n.phase.calls == n.steps,
                  f"{n.phase.calls} calls, {n.steps} steps", fatal=False)]
