"""``python -m demo`` (``make demo``): start the embedded stack, play the webhook stream,
print what happened, check the invariants, stop everything. Exit 0 only if all held.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

from demo.outcome import judge, observe, wait_for_runs
from demo.render import render
from demo.scenario import DEMO_OVERRIDES, DemoDriver, play
from sluicegate.devstack import DevStack, StackError
from sluicegate.observability.progress import spinner


def fresh_ledger(settings) -> None:
    """The demo's expectations assume an empty ledger; Temporal's history is kept."""
    url = settings.ledger_url()
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            p.unlink(missing_ok=True)


def main() -> int:
    console = Console(width=None if sys.stdout.isatty() else 140)
    stack = DevStack(DEMO_OVERRIDES)
    s = stack.settings
    if not s.ledger_url().startswith("sqlite:///"):
        console.print("[red]the demo resets its ledger and runs only on the embedded SQLite ledger[/]")
        return 2
    fresh_ledger(s)
    console.print(f"Starting Temporal dev server ({s.dev_server.db_filename}), simulators, worker and webhook API ...")
    try:
        with spinner("starting the stack ...", console, tick=1):
            stack.start()
    except StackError as exc:
        console.print(f"[red]could not start the stack:[/] {exc}")
        return 2
    try:
        driver = DemoDriver(s)
        try:
            sent = play(driver)
        finally:
            driver.close()
        console.print(f"Sent {len(sent)} deliveries; waiting for admitted runs to finish ...")
        with spinner("waiting for runs ...", console) as waiting:
            wait_for_runs(s, progress=lambda line: waiting.update(f"waiting for runs: {line}"))
        seen = observe(s)
        verdict = judge(sent, seen)
        render(console, sent, seen, verdict)
    finally:
        stack.stop()
    left = stack.leftover()
    if left:
        console.print(f"[red]still running after stop: {left}[/]")
    console.print(f"\nStopped everything. To explore these runs in the Temporal UI: [bold]make up[/], then open "
                  f"http://{s.dev_server.ip}:{s.dev_server.ui_port}/namespaces/{s.temporal.namespace}/workflows "
                  f"(the dev server's SQLite file {s.dev_server.db_filename} keeps the history). Traces: "
                  f"{s.telemetry.file}; logs: var/logs/.")
    return 0 if verdict.ok and not left else 1


if __name__ == "__main__":
    from sluicegate.temporal.process_exit import run_then_exit

    run_then_exit(main)
