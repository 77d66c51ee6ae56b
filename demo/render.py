"""Terminal rendering of the demo: receipts table, summary, invariants."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from demo.outcome import Observed, Verdict
from demo.scenario import Sent


def render(console: Console, sent: list[Sent], seen: Observed, verdict: Verdict) -> None:
    receipts: dict[str, object] = {}
    for r in seen.receipts:  # the first decision per delivery (a deferred one is admitted later)
        receipts.setdefault(r.delivery_id, r)
    admitted_later = {r.delivery_id for r in seen.receipts if r.outcome == "accept"}
    table = Table(title="Receipts: one per authenticated delivery, written before any model call")
    for col in ("delivery", "what was sent", "work key", "version", "outcome", "reason", "HTTP"):
        table.add_column(col, overflow="fold")
    for s in sent:
        r = receipts.get(s.delivery_id)
        outcome = r.outcome if r else ("(counted, no row)" if s.unauthenticated else "(none)")
        style = {"accept": "green", "reject": "yellow", "defer": "cyan"}.get(outcome, "red")
        if outcome == "defer" and s.delivery_id in admitted_later:
            outcome = "defer → accept"
        table.add_row(s.delivery_id[:13], s.label, (r.work_key if r else s.work_key) or "-",
                      ((r.input_version if r else s.version) or "-")[:10], f"[{style}]{outcome}[/]",
                      r.reason if r else s.got[1], str(s.status))
    console.print(table)
    usage = {"input": 0, "cached_input": 0, "output": 0, "reasoning": 0}
    cost = 0.0
    for w in seen.versions:
        result = w.result or {}
        for k in usage:
            usage[k] += (result.get("usage") or {}).get(k, 0)
        cost += result.get("cost_usd", 0.0)
    stopped = [r for r in seen.receipts if r.outcome == "reject"]
    summary = Table(title="Summary", show_header=False)
    summary.add_column("what")
    summary.add_column("count", justify="right")
    for what, value in (
        ("deliveries received", len(sent)),
        ("runs admitted", len(seen.versions)),
        ("deferred for capacity (repository busy), admitted when its slot freed",
         sum(r.outcome == "defer" for r in seen.receipts)),
        ("runs superseded by a newer head (stopped at a step boundary)",
         sum(w.status == "superseded" for w in seen.versions)),
        ("model calls made", seen.model_stats.get("calls", 0)),
        ("comments posted", len(seen.comments)),
        ("duplicates stopped before any model call",
         sum(r.reason in ("duplicate-delivery", "duplicate-work") for r in stopped)),
        ("stale / closed stopped before any model call",
         sum(r.reason in ("stale-version", "target-closed") for r in stopped)),
        ("other rejections (signature, input, policy)",
         sum(r.reason not in ("duplicate-delivery", "duplicate-work", "stale-version", "target-closed")
             for r in stopped)),
        ("tokens: input / cached / output / reasoning",
         f"{usage['input']} / {usage['cached_input']} / {usage['output']} / {usage['reasoning']}"),
        ("cost (USD, from the configured price table)", f"{cost:.5f}"),
    ):
        summary.add_row(what, str(value))
    console.print(summary)
    for c in verdict.checks:
        mark = "[green]PASS[/]" if c.ok else "[red]FAIL[/]"
        console.print(f"{mark} {c.name}" + (f"  ({c.detail})" if c.detail and not c.ok else ""))
