"""``starter.py schedule ...`` and ``starter.py goal ...``: operate scans and goal watchers.

    python starter.py schedule apply                 # create/update every schedule in temporal-dev.yaml
    python starter.py schedule list
    python starter.py schedule trigger scan-acme     # one scan now
    python starter.py schedule pause scan-acme --reason "forge maintenance"
    python starter.py schedule unpause scan-acme --reason "forge back"
    python starter.py schedule backfill scan-acme --start 2026-11-29T08:00Z --end 2026-11-29T09:00Z
    python starter.py goal start --repo acme/api --pr 42 --until head:<sha> --poll-seconds 60 \\
        --max-polls 30 --deadline-minutes 60
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import WorkflowAlreadyStartedError

from intake.envelope import PullRequestRef
from intake.identity import review_work_key
from sluicegate.temporal import schedules as sched
from sluicegate.config.settings import Settings, load_settings
from sluicegate.temporal.exit_codes import TEMPORAL
from sluicegate.cli.json_output import JSON_OPTION, print_json
from sluicegate.temporal.client import connect
from sluicegate.config.tenancy import configured_tenants, scope_rules
from workflows.scan_contracts import GOAL_CONDITIONS, GOAL_WORKFLOW, GoalCondition, GoalRequest, GoalResult

schedule_app = typer.Typer(pretty_exceptions_show_locals=False, help="Temporal Schedules: scans (`schedules:`) and the outbox relay and delivery "
                                "pruning (`maintenance:`).",
                           no_args_is_help=True)
goal_app = typer.Typer(pretty_exceptions_show_locals=False, help="Goal watchers: poll a pull request until a condition holds, bounded.",
                       no_args_is_help=True)
console = Console()


def _run(coro_factory):
    async def main():
        settings = load_settings()
        try:
            client = await connect(settings)
        except Exception as exc:  # noqa: BLE001 - any connection problem is reported the same way
            typer.echo(f"cannot connect to Temporal at {settings.temporal.address}: {' '.join(str(exc).split())} "
                       "(is the stack up? `make up`)", err=True)
            raise typer.Exit(TEMPORAL) from None
        return await coro_factory(client, settings)

    return asyncio.run(main())


def _when(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise typer.BadParameter(f"not an ISO 8601 time: {text!r}") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _fmt(value: datetime | None) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ") if value else "-"


@schedule_app.command("apply")
def schedule_apply(ids: Optional[list[str]] = typer.Option(None, "--id", help="only these schedule ids")) -> None:
    """Create or update the configured schedules (idempotent; keeps paused state and note)."""

    async def go(client: Client, settings: Settings):
        try:
            done = await sched.apply_schedules(client, settings, ids or None)
        except KeyError as exc:
            console.print(f"[red]{exc.args[0]}[/]")
            raise typer.Exit(1) from None
        for sid, what in done.items():
            console.print(f"{sid}: {what}")
        if not done:
            console.print("no schedules configured (temporal-dev.yaml `schedules:`)")

    _run(go)


@schedule_app.command("list")
def schedule_list(as_json: bool = JSON_OPTION) -> None:
    """Every schedule in the namespace, with its counters (missed catch-up, skipped overlap)."""

    async def go(client: Client, settings: Settings):
        rows = await sched.describe_schedules(client, settings)
        if as_json:
            print_json(rows)
            return
        table = Table(title=f"schedules ({len(rows)}) in {settings.temporal.namespace}")
        for name in ("id", "config", "state", "spec", "overlap", "catch-up", "actions", "missed", "skipped",
                     "running", "last", "next"):
            table.add_column(name, overflow="fold")
        for r in rows:
            state = ("paused" if r.paused else "active") + (f" ({r.note})" if r.note else "")
            table.add_row(r.id, "yes" if r.in_config else "no", state, r.spec, r.overlap, r.catchup_window,
                          str(r.actions), str(r.missed_catchup), str(r.skipped_overlap), str(r.running),
                          _fmt(r.last_action), _fmt(r.next_action))
        console.print(table)

    _run(go)


@schedule_app.command("trigger")
def schedule_trigger(schedule_id: str = typer.Argument(...),
                     overlap: Optional[str] = typer.Option(None, help="override the overlap policy for this run "
                                                                      "(e.g. allow_all)")) -> None:
    """Run the schedule's action (a scan) now."""

    async def go(client: Client, settings: Settings):
        await sched.trigger(client, schedule_id, overlap)
        console.print(f"{schedule_id}: triggered")

    _run(go)


@schedule_app.command("pause")
def schedule_pause(schedule_id: str = typer.Argument(...),
                   reason: str = typer.Option(..., help="why (stored as the schedule's note)")) -> None:
    """Pause: no ticks are taken, and ticks passing meanwhile are never caught up."""

    async def go(client: Client, settings: Settings):
        await sched.pause(client, schedule_id, reason)
        console.print(f"{schedule_id}: paused ({reason})")

    _run(go)


@schedule_app.command("unpause")
def schedule_unpause(schedule_id: str = typer.Argument(...), reason: str = typer.Option(...)) -> None:
    """Resume ticking from the next matching time."""

    async def go(client: Client, settings: Settings):
        await sched.unpause(client, schedule_id, reason)
        console.print(f"{schedule_id}: unpaused ({reason})")

    _run(go)


@schedule_app.command("backfill")
def schedule_backfill(schedule_id: str = typer.Argument(...),
                      start: str = typer.Option(..., help="ISO 8601, exclusive (naive = UTC)"),
                      end: str = typer.Option(..., help="ISO 8601, inclusive (naive = UTC)"),
                      overlap: Optional[str] = typer.Option(None, help="overlap policy for the backfilled ticks "
                                                                       "(default: the schedule's)")) -> None:
    """Take the ticks the spec matches in (start, end] now (not limited by the catch-up window)."""
    start_at, end_at = _when(start), _when(end)

    async def go(client: Client, settings: Settings):
        try:
            await sched.backfill(client, schedule_id, start_at, end_at, overlap)
        except ValueError as exc:
            console.print(f"[red]{exc}[/]")
            raise typer.Exit(1) from None
        console.print(f"{schedule_id}: backfill {_fmt(start_at)} → {_fmt(end_at)} requested")

    _run(go)


# --- goals ---------------------------------------------------------------------------------------


def parse_condition(text: str) -> GoalCondition:
    """``head:<sha>`` | ``comment:<text>`` | ``ready``."""
    kind, sep, value = text.partition(":")
    kind = kind.strip().lower()
    if kind not in GOAL_CONDITIONS:
        raise typer.BadParameter(f"--until must be one of head:<sha>, comment:<text>, ready; got {text!r}")
    if kind == "ready":
        return GoalCondition("ready")
    if not sep or not value.strip():
        raise typer.BadParameter(f"--until {kind}: needs a value, e.g. {kind}:{'abc1234' if kind == 'head' else 'ready'}")
    if kind == "head" and not re.fullmatch(r"[0-9a-fA-F]{7,40}", value.strip()):
        raise typer.BadParameter("--until head:<sha> needs 7 to 40 hex characters")
    return GoalCondition(kind, value.strip())


def goal_workflow_id(work_key: str, condition: GoalCondition) -> str:
    """One watcher per work key and condition: starting the same watch twice is refused."""
    text = condition.describe()
    slug = text if re.fullmatch(r"[A-Za-z0-9:._-]{1,64}", text) else hashlib.sha256(text.encode()).hexdigest()[:16]
    return f"goal/{work_key}/{slug}"


def goal_request(settings: Settings, repo: str, pr: int, until: str, poll_seconds: float | None,
                 max_polls: int | None, deadline_minutes: float | None, tenant: str | None) -> GoalRequest:
    g = settings.goals
    owner, _, name = repo.partition("/")
    if not owner or not name:
        raise typer.BadParameter("--repo must be owner/repo")
    poll = g.poll_seconds if poll_seconds is None else poll_seconds
    polls = g.max_polls if max_polls is None else max_polls
    deadline = g.deadline_minutes if deadline_minutes is None else deadline_minutes
    if poll < g.min_poll_seconds:
        raise typer.BadParameter(f"--poll-seconds must be at least {g.min_poll_seconds:g} (goals.min_poll_seconds)")
    if not 1 <= polls <= g.max_polls_limit:
        raise typer.BadParameter(f"--max-polls must be 1..{g.max_polls_limit} (goals.max_polls_limit)")
    if not 0 < deadline <= g.max_deadline_minutes:
        raise typer.BadParameter(f"--deadline-minutes must be in (0, {g.max_deadline_minutes:g}] "
                                 "(goals.max_deadline_minutes)")
    tenant = tenant or g.tenant
    if tenant not in configured_tenants(settings):
        raise typer.BadParameter(f"--tenant {tenant!r} is not a tenant of any source (goals.tenant is the default)")
    if not scope_rules(settings).tenant_covers(tenant, owner, name):
        raise typer.BadParameter(f"{owner}/{name} is not in tenant {tenant!r}'s scope "
                                 f"({', '.join(scope_rules(settings).tenant_globs(tenant))})")
    return GoalRequest(tenant=tenant, owner=owner, repo=name, number=pr,
                       condition=parse_condition(until), poll_seconds=poll, max_polls=polls,
                       deadline_seconds=deadline * 60)


async def start_goal(client: Client, settings: Settings, req: GoalRequest, task_queue: str | None = None):
    work_key = review_work_key(req.tenant, PullRequestRef(req.owner, req.repo, req.number))
    # The workflow enforces the bounds itself; the execution timeout is only a backstop.
    return await client.start_workflow(
        GOAL_WORKFLOW, req, id=goal_workflow_id(work_key, req.condition),
        task_queue=task_queue or settings.temporal.task_queue, result_type=GoalResult,
        execution_timeout=timedelta(seconds=req.deadline_seconds) + timedelta(minutes=30))


@goal_app.command("start")
def goal_start(
    repo: str = typer.Option(..., help="owner/repo"),
    pr: int = typer.Option(..., help="pull request number"),
    until: str = typer.Option(..., help="head:<sha> | comment:<text> | ready"),
    poll_seconds: Optional[float] = typer.Option(None, help="default goals.poll_seconds"),
    max_polls: Optional[int] = typer.Option(None, help="default goals.max_polls"),
    deadline_minutes: Optional[float] = typer.Option(None, help="default goals.deadline_minutes"),
    tenant: Optional[str] = typer.Option(None, help="default goals.tenant"),
    wait: bool = typer.Option(False, help="wait for the watch to end and print its result"),
) -> None:
    """Watch a pull request until a condition holds (then run intake) or a bound is hit (then a receipt)."""

    req = goal_request(load_settings(), repo, pr, until, poll_seconds, max_polls, deadline_minutes, tenant)

    async def go(client: Client, settings: Settings):
        try:
            handle = await start_goal(client, settings, req)
        except WorkflowAlreadyStartedError as exc:
            console.print(f"[yellow]already watching: workflow {exc.workflow_id} is running[/]")
            raise typer.Exit(1) from None
        console.print(f"goal started: workflow {handle.id} — {req.condition.describe()} on {req.target_id}, "
                      f"every {req.poll_seconds:g}s, at most {req.max_polls} polls, "
                      f"deadline {req.deadline_seconds / 60:g} min")
        if wait:
            try:
                result = await handle.result()
            except WorkflowFailureError as exc:
                console.print(f"[red]goal failed: {exc.cause or exc}[/]")
                raise typer.Exit(1) from None
            console.print_json(data=asdict(result))

    _run(go)
