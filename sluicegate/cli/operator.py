"""Operator commands over the ledger and the outbox: ``receipts``, ``explain``, ``outbox relay``,
``ledger migrate|prune|settle-stale`` (wired into ``starter.py``)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Optional

import typer
from rich.console import Console

import ledger
from ledger import ReceiptFilter, explain, list_receipts
from sluicegate.config.settings import load_settings
from sluicegate.operations.actions import (UNKILL_DISPATCH_FAILED, KillScope, dispatch_now, kill_target, running_agents_query,
                                         signal_kill)
from sluicegate.cli.json_output import JSON_OPTION, print_json
from sluicegate.operations.views import kills_table, print_chain, receipts_table

__all__ = ["explain_cmd", "kill_cmd", "kills_cmd", "ledger_app", "outbox_app", "receipts", "running_agents_query", "unkill_cmd"]
console = Console()
ledger_app = typer.Typer(pretty_exceptions_show_locals=False, help="Ledger schema and retention.", no_args_is_help=True)
outbox_app = typer.Typer(pretty_exceptions_show_locals=False, help="The admission outbox.", no_args_is_help=True)


def _engine():
    return ledger.make_engine(load_settings().ledger_url())


def _as_utc(t: Optional[datetime]) -> Optional[datetime]:
    """A naive time is UTC; an aware one is converted (SQLite compares the stored UTC text)."""
    if t is None:
        return None
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def receipts(
    work_key: Optional[str] = typer.Option(None), outcome: Optional[str] = typer.Option(None),
    reason: Optional[str] = typer.Option(None), source: Optional[str] = typer.Option(None),
    delivery: Optional[str] = typer.Option(None),
    since: Optional[datetime] = typer.Option(None, help="ISO time, UTC unless it says otherwise"),
    until: Optional[datetime] = typer.Option(None), limit: int = typer.Option(50), as_json: bool = JSON_OPTION,
) -> None:
    """List receipts, newest first, filtered."""
    since, until = (_as_utc(t) for t in (since, until))
    engine = _engine()
    rows = list_receipts(engine, ReceiptFilter(work_key, outcome, reason, source, delivery, since, until, limit))
    engine.dispose()
    print_json(rows) if as_json else console.print(receipts_table(rows))


def explain_cmd(key: str = typer.Argument(..., help="a delivery id or a work key"), as_json: bool = JSON_OPTION) -> None:
    """The chain behind a delivery or work key: deliveries → decisions → runs → side effects."""
    engine = _engine()
    chain = explain(engine, key)
    engine.dispose()
    print_json(chain) if as_json else print_chain(console, chain)
    if not chain.receipts and not chain.items:
        raise typer.Exit(1)


@ledger_app.command("migrate")
def migrate() -> None:
    """Upgrade the ledger schema to the latest revision."""
    url = load_settings().ledger_url()
    console.print(f"ledger at revision {ledger.upgrade(url)} ({ledger.normalize_url(url).split('@')[-1]})")


@ledger_app.command("prune")
def prune(window_hours: Optional[float] = typer.Option(None, help="default: maintenance.delivery_dedupe_window_hours"),
          retention: bool = typer.Option(True, help="also apply maintenance.retention to every table and artifact"),
          ) -> None:
    """Forget delivery ids older than the dedupe window and prune by retention now (the schedule does
    both every maintenance.prune_interval); load-bearing rows are never pruned."""
    from activities.artifacts import ArtifactStore
    from activities.maintenance import prune_table
    from sluicegate.temporal.schedules import retention_policy
    from sluicegate.temporal.client import payload_keys

    settings = load_settings()
    engine = ledger.make_engine(settings.ledger_url())
    try:
        window = settings.maintenance.delivery_dedupe_window_hours if window_hours is None else window_hours
        console.print(f"forgot {ledger.SqlIntakeStore(engine).prune_deliveries(window)} delivery ids")
        if retention:
            policy = retention_policy(settings)
            artifacts = ArtifactStore(settings.path(settings.artifacts.dir), payload_keys(settings))
            for table, age in policy.ages_seconds.items():
                if age is not None:
                    removed = prune_table(engine, artifacts, policy, table, age)
                    console.print(f"{table}: pruned {removed} (older than {age / 86400:g} days)")
    finally:
        engine.dispose()


@ledger_app.command("settle-stale")
def settle_stale(grace_seconds: Optional[float] = typer.Option(
        None, help="default: budgets.stale_reservations.grace_seconds")) -> None:
    """End day-budget reservations held longer than the grace now (the schedule does it every 5 min):
    with the journaled usage when the answer had arrived, else at their estimate."""
    from datetime import timedelta

    settings = load_settings()
    grace = settings.budgets.stale_reservations.grace_seconds if grace_seconds is None else grace_seconds
    day = settings.budgets.day
    engine = ledger.make_engine(settings.ledger_url())
    sweep = ledger.DayBudgets(engine, day.global_usd, day.tenants, day.default_tenant_usd).settle_stale(
        timedelta(seconds=grace))
    engine.dispose()
    console.print(f"settled {len(sweep.from_journal)} from the journal, charged {len(sweep.estimated)} at their "
                  f"estimate: {', '.join(sweep.from_journal + sweep.estimated) or '-'}")


@outbox_app.command("relay")
def relay_now(grace_seconds: Optional[float] = typer.Option(None, help="default: maintenance.outbox_grace_seconds")
              ) -> None:
    """Admit accepted-but-not-admitted work now (the schedule does it every minute)."""
    from intake.outbox import relay
    from sluicegate.temporal.admitter import TemporalAdmitter
    from sluicegate.temporal.client import connect

    settings = load_settings()
    grace = settings.maintenance.outbox_grace_seconds if grace_seconds is None else grace_seconds

    async def run():
        engine = ledger.make_engine(settings.ledger_url())
        store = ledger.SqlIntakeStore(engine)
        try:
            pending = await asyncio.to_thread(store.pending_admissions, grace)
            return await relay(store, pending, TemporalAdmitter(await connect(settings), settings),
                               ledger.KillSwitch(engine))
        finally:
            engine.dispose()

    report = asyncio.run(run())
    console.print(f"admitted {len(report.admitted)}: {', '.join(report.admitted) or '-'}")
    if report.failed:
        console.print(f"[red]failed {len(report.failed)}: {', '.join(report.failed)}[/] (retried on the next relay)")
        raise typer.Exit(1)


def _scope(work_key: Optional[str], tenant: Optional[str], everything: bool) -> tuple[KillScope, str]:
    options: tuple[tuple[KillScope, str | None], ...] = (("work_key", work_key), ("tenant", tenant),
                                                     ("all", "*" if everything else None))
    chosen = [(s, t) for s, t in options if t]
    if len(chosen) != 1:
        raise typer.BadParameter("give exactly one of --work-key, --tenant, --all")
    scope, target = chosen[0]
    try:
        return scope, kill_target(scope, target)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def kill_cmd(
    work_key: Optional[str] = typer.Option(None), tenant: Optional[str] = typer.Option(None),
    everything: bool = typer.Option(False, "--all", help="every tenant, every work key"),
    actor: str = typer.Option(..., help="who is stopping it (recorded)"),
    reason: str = typer.Option(..., help="why (recorded)"),
) -> None:
    """Stop agent runs: record the kill (calls are refused at once), then signal running workflows."""
    from sluicegate.temporal.client import connect

    scope, target = _scope(work_key, tenant, everything)
    settings = load_settings()
    engine = ledger.make_engine(settings.ledger_url())
    kill = ledger.KillSwitch(engine).kill(scope, target, actor, reason)
    engine.dispose()
    console.print(f"kill {kill.id} recorded: {scope} {kill.target} by {actor}; model and tool calls are refused now")

    async def signal_all() -> int:
        return await signal_kill(await connect(settings), scope, kill.target, actor, reason)

    console.print(f"signalled {asyncio.run(signal_all())} running agent workflow(s) to stop before their next step")


def kills_cmd(limit: int = typer.Option(50, min=1, help="newest first"), as_json: bool = JSON_OPTION) -> None:
    """Kills, newest first: in force and lifted, with who and why."""
    engine = _engine()
    rows = ledger.recent_kills(engine, limit)
    engine.dispose()
    if as_json:
        print_json(rows)
        return
    console.print(kills_table(rows))


def unkill_cmd(
    work_key: Optional[str] = typer.Option(None), tenant: Optional[str] = typer.Option(None),
    everything: bool = typer.Option(False, "--all"),
    actor: str = typer.Option(...), reason: str = typer.Option(...),
) -> None:
    """Lift the kills in force for exactly this scope (recorded the same way), then start a dispatch
    pass so queued work is re-decided now."""
    from sluicegate.temporal.client import connect

    scope, target = _scope(work_key, tenant, everything)
    settings = load_settings()
    engine = ledger.make_engine(settings.ledger_url())
    lifted = ledger.KillSwitch(engine).unkill(scope, target, actor, reason)
    engine.dispose()
    console.print(f"lifted {lifted} kill(s) for {scope} {target}; stopped runs stay stopped — re-trigger to resume; "
                  "new deliveries are admitted again")
    if lifted == 0:
        raise typer.Exit(1)

    async def dispatch() -> str:
        return await dispatch_now(await connect(settings))

    try:
        console.print(asyncio.run(dispatch()))
    except Exception as exc:  # noqa: BLE001 - the unkill stands; say what did not happen
        console.print(UNKILL_DISPATCH_FAILED.format(error=type(exc).__name__))
