"""``starter.py status``: active runs per key and tenant, the deferred queue, breakers, dead letters."""

from __future__ import annotations

from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

import ledger
from intake.capacity import CapacityPlanner
from sluicegate.config.settings import load_settings
from sluicegate.cli.json_output import JSON_OPTION, print_json
from sluicegate.operations.status import DEFAULT_TOP, StatusView, gather, shown

console = Console()
breaker_app = typer.Typer(pretty_exceptions_show_locals=False, help="Provider circuit breakers.", no_args_is_help=True)


@breaker_app.command("reset")
def breaker_reset(provider: str = typer.Argument(..., help="model | forge"),
                  actor: str = typer.Option(..., help="who (recorded)"),
                  reason: str = typer.Option(..., help="why (recorded)")) -> None:
    """Close a breaker now, without the ramp: only when the provider is known healthy again."""
    settings = load_settings()
    engine = ledger.make_engine(settings.ledger_url())
    try:
        done = ledger.BreakerBoard(engine, settings.capacity.breaker_policy()).reset(
            provider, f"reset by {actor}: {reason}")
    finally:
        engine.dispose()
    if not done:
        console.print(f"[red]no breaker named {provider!r}[/] (it has never recorded a failure)")
        raise typer.Exit(1)
    console.print(f"{provider} breaker closed by {actor}; deferred work is admitted at the next dispatch pass")


def status_cmd(tenant: Optional[str] = typer.Option(None, help="list this tenant's queued items with positions"),
               items: int = typer.Option(10, help="how many queued items to list"),
               top: int = typer.Option(DEFAULT_TOP, min=1, help="rows per list: the busiest first"),
               everything: bool = typer.Option(False, "--all", help="every row, zero counters included"),
               as_json: bool = JSON_OPTION) -> None:
    """Backlog at a glance: who holds capacity, who waits (and where in line), breakers, dead letters.
    Shows non-zero counters and the top rows of each list, and says how many were hidden."""
    settings = load_settings()
    engine = ledger.make_engine(settings.ledger_url())
    try:
        st = gather(engine, ledger.BreakerBoard(engine, settings.capacity.breaker_policy()),
                    aging_seconds=settings.capacity.aging_seconds)
    finally:
        engine.dispose()
    view = shown(st, CapacityPlanner(settings.capacity.limits(settings.sources)), None if everything else top,
                 tenant, items)
    if as_json:
        print_json(view)
        return
    print_status(view, tenant)


def print_status(view: StatusView, tenant: str | None = None) -> None:
    runs = Table(title="active runs (slots held)", caption=_hidden(view.counters_hidden, "counter(s), idle at 0 or "
                                                                   "past the top rows", "--all"))
    for name in ("counter", "active", "limit"):
        runs.add_column(name)
    for c in view.counters:
        runs.add_row(c.key, str(c.active), _shown(c.limit))
    console.print(runs)

    tenants = Table(title="active runs by tenant", caption=_hidden(view.tenants_hidden, "tenant(s)", "--all"))
    tenants.add_column("tenant")
    tenants.add_column("runs")
    tenants.add_column("work keys", overflow="fold")
    for t in view.active_by_tenant:
        tenants.add_row(t.tenant, str(t.runs), ", ".join(t.work_keys[:5]) + (" …" if len(t.work_keys) > 5 else ""))
    console.print(tenants)

    queue = Table(title=f"deferred queue ({view.waiting} waiting)", caption=_hidden(view.queue_hidden, "tenant(s)",
                                                                                      "--all"))
    for name in ("tenant", "waiting", "oldest", "median age", "first position", "blocked on"):
        queue.add_column(name)
    for q in view.queue:
        queue.add_row(q.tenant, str(q.waiting), _age(q.oldest_seconds), _age(q.median_seconds),
                      str(q.first_position), ", ".join(f"{k} {v}" for k, v in sorted(q.blocked_on.items())))
    console.print(queue)

    if view.next_in_line:
        line = Table(title="next in line" + (f" for {tenant}" if tenant else ""))
        for name in ("position", "item", "tenant", "priority", "work key", "version", "blocked on", "attempts"):
            line.add_column(name, overflow="fold")
        for i in view.next_in_line:
            line.add_row(str(i["position"]), i["item"][:12], i["tenant"], str(i["priority"]), i["work_key"],
                         (i["input_version"] or "-")[:12],
                         i["blocked_on"] + (f" ({i['blocked_key']})" if i["blocked_key"] else ""), str(i["attempts"]))
        console.print(line)

    breakers = Table(title="breakers")
    for name in ("provider", "state", "reopens in", "ramp", "last error"):
        breakers.add_column(name, overflow="fold")
    for v in view.breakers:
        breakers.add_row(v.provider, v.state, _age(v.retry_after_seconds) if v.state == "open" else "-",
                         f"{v.ramp_fraction:.0%}" if v.state == "ramping" else "-", (v.last_error or "-")[:100])
    console.print(breakers)
    owners = ", ".join(f"{o} {n}" for o, n in sorted(view.dead_by_owner.items())) or "-"
    console.print(f"dead letters open: {view.dead_letters_open} ({owners}); see `starter.py dlq list`")


def _hidden(count: int, what: str, flag: str) -> str | None:
    return f"{count} {what} hidden; {flag} shows them" if count else None


def _age(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


def _shown(limit: int | None) -> str:
    return "∞" if limit is None else str(limit)
