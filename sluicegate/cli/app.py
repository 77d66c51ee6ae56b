"""Sluicegate's one CLI: operator commands, the processes, drills, simulators and benches.

    sluicegate trigger --repo acme/api --pr 44 --reason "webhook lost"   # token: $SLUICEGATE_ACTOR_TOKEN
    sluicegate trigger --repo acme/api --pr 44 --reason "missed a bug" --force   # admins only
    sluicegate trigger --tenant beta --repo beta/app --pr 3 --reason "..."  # actors in several tenants
    sluicegate receipts --work-key 'acme/github:acme/api#42:review' --outcome reject
    sluicegate explain 'acme/github:acme/api#42:review'   # or a delivery id
    sluicegate schedule apply | list | trigger ID | pause ID | backfill ID ...
    sluicegate goal start --repo acme/api --pr 44 ...
    sluicegate kill --work-key K | --tenant T | --all --actor A --reason R ; unkill (same flags)
    sluicegate kills                    # kills newest first, in force and lifted
    sluicegate cancel 'acme/github:acme/api#42:review' --actor A --reason R   # recorded, then cancelled
    sluicegate reconcile                # give runs that closed without an outcome their real one
    sluicegate replay DELIVERY_ID       # re-run a delivery kept after unsupported-schema (admins)
    sluicegate drill cancel | temporal-restart | duplicate-storm | worker-crash | postgres-restart
        | forge-outage [--quick]               # one drill on its own throwaway stack
    sluicegate dlq list | show ID | retry ID --reason R
    sluicegate status [--tenant T] [--top N | --all]   # busy counters, deferred queue, breakers
    (every list command — status, receipts, explain, kills, dlq list, schedule list, reconcile — takes --json)
    sluicegate breaker reset model --actor A --reason R
    sluicegate outbox relay ; sluicegate ledger migrate | prune

    sluicegate worker | api | codec-server     # the processes (also sluicegate-worker, sluicegate-api)
    sluicegate simulator model | forge         # simulators (source checkout only, as are bench and drill)
    sluicegate bench NAME [ARGS]               # one bench, its own flags

``python starter.py ...`` runs the same app. Exit codes (``sluicegate.temporal.exit_codes``, docs/cli.md):
0 done, 1 refused/failed, 2 usage, 3 config, 4 ledger, 5 Temporal, 6 HTTP service unreachable.

A manual trigger goes through the webhook API's intake like any webhook: the same
freshness, policy and dedupe checks, and a receipt. Nothing here starts a workflow directly.
"""

from __future__ import annotations

import typer

from sluicegate.cli import serve as serve_cli
from sluicegate.cli.dlq import dlq_app
from sluicegate.cli.drill import drill_app
from sluicegate.cli.manual_trigger import trigger
from sluicegate.cli.operator import explain_cmd, kill_cmd, kills_cmd, ledger_app, outbox_app, receipts, unkill_cmd
from sluicegate.cli.replay import replay_cmd
from sluicegate.cli.runs import cancel_cmd, reconcile_cmd
from sluicegate.cli.status import breaker_app, status_cmd
from sluicegate.cli.trigger import goal_app, schedule_app

# Every Typer app here prints tracebacks without locals: a local may hold a token or the settings.
app = typer.Typer(pretty_exceptions_show_locals=False, help=__doc__.splitlines()[0], no_args_is_help=True)
app.add_typer(ledger_app, name="ledger")
app.add_typer(outbox_app, name="outbox")
app.add_typer(schedule_app, name="schedule")
app.add_typer(goal_app, name="goal")
app.add_typer(dlq_app, name="dlq")
app.add_typer(breaker_app, name="breaker")
app.add_typer(drill_app, name="drill")
app.command("trigger")(trigger)
app.command()(receipts)
app.command("explain")(explain_cmd)
app.command("kill")(kill_cmd)
app.command("unkill")(unkill_cmd)
app.command("kills")(kills_cmd)
app.command("status")(status_cmd)
app.command("cancel")(cancel_cmd)
app.command("reconcile")(reconcile_cmd)
app.command("replay")(replay_cmd)
serve_cli.add_to(app)

try:  # simulators are not in the wheel; from a source checkout they are subcommands too
    from simulators.cli import simulator_app
except ModuleNotFoundError as exc:
    if exc.name != "simulators":
        raise
else:
    app.add_typer(simulator_app, name="simulator")


def main() -> None:
    """Console script ``sluicegate`` (and ``python starter.py``): exit codes from ``sluicegate.temporal.exit_codes``."""
    from sluicegate.temporal.process_exit import run_then_exit

    run_then_exit(app)
