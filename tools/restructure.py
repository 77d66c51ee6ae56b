"""Move modules out of the ``sluicegate/`` grab bag into layered sub-packages, and rewrite every
reference to them across the repository. Idempotent: run it again on a merged tree and it only
moves what is still at its old place and rewrites what still names an old module.

    python tools/restructure.py            # git mv + rewrite, in place
    python tools/restructure.py --check    # exit 1 when a move or a rewrite is still pending
    python tools/restructure.py --dry-run  # print what it would do, change nothing

What it rewrites (old module -> new module, from ``MOVES`` below): imports, strings and comments in
Python files, dotted names and paths in every other tracked text file; how is in
``tools/restructure_refs.py``. Recorded Temporal histories (``tests/workflows/histories``) are never
touched. Modules outside ``sluicegate/`` may be listed too (``intake.temporal_admitter`` is a
Temporal adapter, not intake logic).

A module a branch adds under ``sluicegate/`` that is not in ``MOVES`` stays where it is; only its
references to moved modules are rewritten. A second run is a no-op.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from restructure_refs import References, module_of

# ---------------------------------------------------------------------------------------------
# The move table: old module -> new module. Data only; extend it and re-run.
# ---------------------------------------------------------------------------------------------
MOVES: dict[str, str] = {
    # config: typed settings and their sections; imports nothing above it
    "sluicegate.config": "sluicegate.config.settings",
    "sluicegate.budget_config": "sluicegate.config.budget",
    "sluicegate.capacity_config": "sluicegate.config.capacity",
    "sluicegate.codec_config": "sluicegate.config.codec",
    "sluicegate.console_config": "sluicegate.config.console",
    "sluicegate.forge_config": "sluicegate.config.forge",
    "sluicegate.intake_config": "sluicegate.config.intake",
    "sluicegate.maintenance_config": "sluicegate.config.maintenance",
    "sluicegate.model_config": "sluicegate.config.model",
    "sluicegate.schedule_config": "sluicegate.config.schedule",
    "sluicegate.source_config": "sluicegate.config.source",
    "sluicegate.tenancy_config": "sluicegate.config.tenancy",
    "sluicegate.config_checks": "sluicegate.config.checks",
    "sluicegate.secret_fields": "sluicegate.config.secret_fields",
    "sluicegate.durations": "sluicegate.config.durations",
    "sluicegate.dev_guard": "sluicegate.config.dev_guard",
    "sluicegate.config_section": "sluicegate.config.section",
    "sluicegate.kept_config": "sluicegate.config.kept",
    "sluicegate.telemetry_config": "sluicegate.config.telemetry",
    # observability: logging, tracing, metrics
    "sluicegate.telemetry": "sluicegate.observability.telemetry",
    "sluicegate.metrics": "sluicegate.observability.metrics",
    "sluicegate.genai": "sluicegate.observability.genai",
    "sluicegate.prometheus_export": "sluicegate.observability.prometheus_export",
    "sluicegate.activity_telemetry": "sluicegate.observability.activity_telemetry",
    "sluicegate.ledger_gauges": "sluicegate.observability.ledger_gauges",
    "sluicegate.log_context": "sluicegate.observability.log_context",
    "sluicegate.ops_metrics": "sluicegate.observability.ops_metrics",
    # the terminal spinner: the demo and the drills both use it, and the demo may not import cli
    "sluicegate.progress": "sluicegate.observability.progress",
    # forge: the GitHub client, its auth, the one error mapper and its Retry-After parser
    "sluicegate.forge_client": "sluicegate.forge.client",
    "sluicegate.forge_auth": "sluicegate.forge.auth",
    "sluicegate.forge_errors": "sluicegate.forge.errors",
    "sluicegate.forge_cache": "sluicegate.forge.cache",
    "sluicegate.retry_after": "sluicegate.forge.retry_after",
    # temporal: connection, payload codec, codec server, schedules, the admitter that starts runs
    "sluicegate.temporal_client": "sluicegate.temporal.client",
    "sluicegate.codec": "sluicegate.temporal.codec",
    "sluicegate.codec_server": "sluicegate.temporal.codec_server",
    "sluicegate.schedules": "sluicegate.temporal.schedules",
    "sluicegate.process_exit": "sluicegate.temporal.process_exit",
    # exit codes and one-line messages: process_exit reports with them, so they sit beside it
    "sluicegate.cli_errors": "sluicegate.temporal.exit_codes",
    "intake.temporal_admitter": "sluicegate.temporal.admitter",
    # services: the long-lived parts both processes build from the settings (ledger engine, forge
    # client, intake service, capacity gate); used by the API, the activities and the wiring
    "sluicegate.resources": "sluicegate.services.resources",
    "sluicegate.capacity_setup": "sluicegate.services.intake",
    # web: HTTP plumbing shared by the webhook API, the console and the codec server
    "sluicegate.bounded_body": "sluicegate.web.bounded_body",
    # operations: what an operator reads and does, shared by the CLI and the console
    "sluicegate.operator_actions": "sluicegate.operations.actions",
    "sluicegate.operator_views": "sluicegate.operations.views",
    "sluicegate.status_views": "sluicegate.operations.status",
    # cli: starter.py's sub-commands
    "sluicegate.dlq_cli": "sluicegate.cli.dlq",
    "sluicegate.drill_cli": "sluicegate.cli.drill",
    "sluicegate.status_cli": "sluicegate.cli.status",
    "sluicegate.runs_cli": "sluicegate.cli.runs",
    "sluicegate.operator_cli": "sluicegate.cli.operator",
    "sluicegate.trigger_cli": "sluicegate.cli.trigger",
    "sluicegate.json_output": "sluicegate.cli.json_output",
    "sluicegate.cli_app": "sluicegate.cli.app",
    "sluicegate.serve_cli": "sluicegate.cli.serve",
    "sluicegate.manual_trigger_cli": "sluicegate.cli.manual_trigger",
    "sluicegate.replay_cli": "sluicegate.cli.replay",
    # sluicegate.errors (the one exception base, no imports) stays where it is: the bottom layer
}

# Docstrings of the packages the moves create (written once, when the package is created).
PACKAGES: dict[str, str] = {
    "sluicegate.config": "Typed configuration: ``Settings`` and its sections. The bottom layer: imports nothing above it.",
    "sluicegate.observability": "Logging, tracing and metrics. Imports only ``sluicegate.config``.",
    "sluicegate.forge": "The GitHub client, its App auth, and the one forge error mapper.",
    "sluicegate.temporal": "The Temporal connection, the payload codec and its server, the Schedules, the admitter.",
    "sluicegate.services": "The parts both processes build from the settings: ledger engine, forge client, intake service.",
    "sluicegate.web": "HTTP plumbing shared by the webhook API, the console and the codec server.",
    "sluicegate.operations": "What an operator reads and does, shared by the CLI and the console.",
    "sluicegate.cli": "``starter.py``'s sub-commands. Top layer: nothing below imports it.",
}

# Never rewritten: recorded histories (activity names must stay byte-identical) and this tool.
SKIP_PREFIXES = ("tests/workflows/histories/", "tools/restructure.py", "tools/restructure_refs.py", ".git/")
ROOT = Path(__file__).resolve().parent.parent


def mod_path(module: str) -> Path:
    return ROOT.joinpath(*module.split(".")).with_suffix(".py")


# ------------------------------------------------------------------ files and moves
def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, check=True, capture_output=True).stdout.decode()
    return sorted(f for f in out.split("\0") if f and not f.startswith(SKIP_PREFIXES) and (ROOT / f).is_file())


def pending_moves() -> list[tuple[Path, Path]]:
    moves = []
    for old, new in MOVES.items():
        src, dst = mod_path(old), mod_path(new)
        if src.is_file() and dst.exists():
            sys.exit(f"restructure: both {src.relative_to(ROOT)} and {dst.relative_to(ROOT)} exist; merge them by hand")
        if src.is_file():
            moves.append((src, dst))
    return moves


def pending_packages() -> list[Path]:
    """``__init__.py`` files the moved modules need and that do not exist yet."""
    inits = []
    for new in MOVES.values():
        parts = new.split(".")[:-1]
        for i in range(2, len(parts) + 1):
            init = ROOT.joinpath(*parts[:i], "__init__.py")
            if not init.exists() and init not in inits:
                inits.append(init)
    return inits


def git(*args: str) -> None:
    subprocess.run(["git", *args], cwd=ROOT, check=True)


REFS = References(MOVES)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 when anything is pending")
    mode.add_argument("--dry-run", action="store_true", help="print what would change")
    args = parser.parse_args()
    write = not (args.check or args.dry_run)

    pending: list[str] = []
    for init in pending_packages():
        pending.append(f"create {init.relative_to(ROOT)}")
        if write:
            package = module_of(str(init.relative_to(ROOT)))
            init.parent.mkdir(parents=True, exist_ok=True)
            init.write_text(f'"""{PACKAGES.get(package, package)}"""\n')
            git("add", str(init))
    for src, dst in pending_moves():
        pending.append(f"git mv {src.relative_to(ROOT)} {dst.relative_to(ROOT)}")
        if write:
            git("mv", str(src), str(dst))

    for rel in tracked_files():
        path = ROOT / rel
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        new = REFS.rewrite_python(rel, text) if rel.endswith(".py") else REFS.rewrite_text(text)
        if new != text:
            pending.append(f"rewrite {rel}")
            if write:
                path.write_text(new, encoding="utf-8")

    for line in pending:
        print(line)
    if args.check and pending:
        print(f"restructure: {len(pending)} change(s) pending; run python tools/restructure.py", file=sys.stderr)
        return 1
    if not pending:
        print("restructure: nothing to do", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
