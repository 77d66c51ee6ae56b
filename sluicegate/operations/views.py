"""Terminal views for operators (``starter.py receipts`` / ``explain`` / ``kills``)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.tree import Tree

from ledger import Kill, Receipt
from ledger._queries import Chain


def receipts_table(rows: list[Receipt]) -> Table:
    table = Table(title=f"receipts ({len(rows)}, newest first)")
    for name in ("time (UTC)", "source", "delivery", "work key", "version", "gen", "outcome", "reason", "workflow"):
        table.add_column(name, overflow="fold")
    for r in rows:
        table.add_row(r.created_at.strftime("%m-%d %H:%M:%S"), r.source, (r.delivery_id or "-")[:16],
                      r.work_key or "-", (r.input_version or "-")[:10], str(r.generation or "-"), r.outcome,
                      r.reason, r.workflow_id or "-")
    return table


def kills_table(rows: list[Kill]) -> Table:
    table = Table(title=f"kills ({len(rows)}, newest first)")
    for name in ("id", "time (UTC)", "scope", "target", "by", "reason", "lifted"):
        table.add_column(name, overflow="fold")
    for k in rows:
        lifted = f"{k.lifted_at:%m-%d %H:%M:%S} by {k.lifted_by}: {k.lift_reason}" if k.lifted_at else "in force"
        table.add_row(k.id, k.created_at.strftime("%m-%d %H:%M:%S"), k.scope, k.target, k.actor, k.reason, lifted)
    return table


def print_chain(console: Console, chain: Chain) -> None:
    if not chain.receipts and not chain.items:
        console.print(f"nothing in the ledger for {chain.query!r} (a delivery id or a work key)")
        return
    root = Tree(f"[bold]{chain.query}[/]  work keys: {', '.join(chain.work_keys) or '-'}")
    decisions = root.add("deliveries → decisions")
    for r in chain.receipts:
        who = f" by {r.actor}" if r.actor else ""
        override = f" [magenta]override: {r.override}[/]" if r.override else ""
        decisions.add(f"{r.created_at:%H:%M:%S} {r.trigger_kind}/{r.source} {r.delivery_id or '-'}{who} "
                      f"@{(r.input_version or '-')[:10]} → [bold]{r.outcome}[/] {r.reason}"
                      f"{' gen ' + str(r.generation) if r.generation else ''}{override}  {r.message}"
                      f"{_receipt_identity(r)}")
    runs = root.add("runs")
    for v in chain.versions:
        result = v.result or {}
        runs.add(f"gen {v.generation} @{v.input_version[:10]} [bold]{v.status}[/] {result.get('reason', '')} "
                 f"steps={result.get('steps', '-')} cost=${result.get('cost_usd', 0):.5f} "
                 f"workflow={v.workflow_id or '-'} run={v.run_id or '-'}")
    effects = root.add("side effects")
    for e in chain.side_effects:
        effects.add(f"{e.operation} @{e.target_version[:10]} gen {e.generation} [bold]{e.status}[/] "
                    f"attempts={e.attempts} external_id={e.external_id or '-'} {e.error or ''}  ({e.operation_key})"
                    f"  workflow={e.workflow_id or '-'} run={e.run_id or '-'}"
                    f" activity_attempt={e.activity_attempt or '-'}"
                    f" concurrency_key={e.concurrency_key or '-'} policy={e.policy_version or '-'}")
    _add_model_calls(root, chain)
    for item in chain.items:
        if item.reset_at:
            root.add(f"{item.work_key}: reset (tombstone) at {item.reset_at:%Y-%m-%d %H:%M:%S}")
    console.print(root)


def _receipt_identity(r: Receipt) -> str:
    """The receipt's identity bundle beyond delivery, key and generation (shown when known)."""
    parts = [f"policy={r.policy_version}" if r.policy_version else "",
             f"concurrency_key={r.concurrency_key}" if r.concurrency_key else "",
             f"activity_attempt={r.activity_attempt}" if r.activity_attempt else "",
             f"workflow={r.workflow_id} run={r.run_id or '-'}" if r.workflow_id else ""]
    shown = " ".join(p for p in parts if p)
    return f"  [dim]{shown}[/]" if shown else ""


def _add_model_calls(root: Tree, chain: Chain) -> None:
    """Each model-call attempt's reservation and how it ended; what calls of unknown fate cost."""
    calls = root.add("model calls (day-budget reservations)")
    for r in chain.reservations:
        where = f"gen {r.generation} @{(r.input_version or '-')[:10]} step {r.step} attempt {r.attempt}" \
            if r.step else "(before steps were recorded)"
        spent = f"${r.spent_usd:.5f}" if r.spent_usd is not None else "-"
        calls.add(f"{r.created_at:%H:%M:%S} {where} [bold]{r.status}[/] {spent} of ${r.amount_usd:.5f} reserved"
                  f"  {r.note or ''}")
    unknown = [r for r in chain.reservations if r.status == "estimated"]
    held = sum(r.amount_usd for r in chain.reservations if r.status == "reserved")
    total = sum(r.spent_usd or 0.0 for r in chain.reservations)
    calls.add(f"spent ${total:.5f}; {len(unknown)} call(s) of unknown fate (crashed, timed out, 5xx) charged "
              f"${sum(r.spent_usd or 0.0 for r in unknown):.5f} at their estimate; still held ${held:.5f}")
