"""Move modules out of the ``sluicegate/`` grab bag into layered sub-packages, and rewrite every
reference to them across the repository. Idempotent: run it again on a merged tree and it only
moves what is still at its old place and rewrites what still names an old module.

    python tools/restructure.py            # git mv + rewrite, in place
    python tools/restructure.py --check    # exit 1 when a move or a rewrite is still pending
    python tools/restructure.py --dry-run  # print what it would do, change nothing

What it rewrites (old module -> new module, from ``MOVES`` below):

Modules outside ``sluicegate/`` may be listed too (``intake.temporal_admitter`` is a Temporal
adapter, not intake logic).

- Python imports (libcst): ``import old``, ``from old import x``, ``from parent import leaf``
  (split into one statement per moved module, keeping the local name), relative imports that
  resolve to a moved module, and attribute chains of a plain ``import old``.
- Python strings and comments (docstrings, ``python -m`` argument lists, monkeypatch targets):
  ``old`` dotted names and ``old/path.py`` file paths. Arguments of ``getLogger``/``get_tracer``/
  ``get_meter`` are left alone (a logger name is not a module path; renaming it changes output).
- Every other tracked text file (Makefile, docs, pyproject, YAML): the same dotted names and paths.
  Recorded Temporal histories (``tests/workflows/histories``) are never touched.

A module a branch adds under ``sluicegate/`` that is not in ``MOVES`` stays where it is; only its
references to moved modules are rewritten. A name ``old.x`` is left alone when ``old.x`` is itself a
module after the move (``sluicegate.config`` was a module and is now the package holding
``sluicegate.config.settings``), which is what makes a second run a no-op.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import libcst as cst
from libcst.helpers import get_full_name_for_node

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

# Never rewritten: recorded histories (activity names must stay byte-identical) and this script.
SKIP_PREFIXES = ("tests/workflows/histories/", "tools/restructure.py", ".git/")
# Calls whose first argument is a telemetry name, not a module path (a metric renamed by the move
# would silently break the alert rules that query it).
NAME_CALLS = {"getLogger", "get_tracer", "get_meter", "getChild", "create_counter", "create_histogram",
              "create_gauge", "create_up_down_counter", "create_observable_gauge", "create_observable_counter",
              "create_observable_up_down_counter", "start_as_current_span", "start_span"}

ROOT = Path(__file__).resolve().parent.parent


def mod_path(module: str) -> Path:
    return ROOT.joinpath(*module.split(".")).with_suffix(".py")


def new_modules() -> set[str]:
    """Every module name that exists after the moves (targets and the packages they live in)."""
    names = set(MOVES.values())
    for new in MOVES.values():
        parts = new.split(".")
        names.update(".".join(parts[:i]) for i in range(2, len(parts)))
    return names


NEW_MODULES = new_modules()


# ------------------------------------------------------------------ text references
def _text_pattern() -> re.Pattern[str]:
    olds = sorted(MOVES, key=len, reverse=True)
    dotted = "|".join(re.escape(o) for o in olds)
    paths = "|".join(re.escape(o.replace(".", "/")) for o in olds)
    # group 1: dotted name (+ optional ".next"), group 3: file path ending in .py
    return re.compile(rf"(?<![\w./])(?:({dotted})(\.\w+)?|({paths})\.py)(?![\w/])")


TEXT_RE = _text_pattern()


def rewrite_text(text: str) -> str:
    def sub(m: re.Match[str]) -> str:
        if m.group(3):
            return MOVES[m.group(3).replace("/", ".")].replace(".", "/") + ".py"
        old, rest = m.group(1), m.group(2) or ""
        if old in NEW_MODULES and (not rest or f"{old}{rest}" in NEW_MODULES):
            return m.group(0)  # the package the old module became, or one of its modules
        return MOVES[old] + rest

    return FROM_PACKAGE_RE.sub(from_package, TEXT_RE.sub(sub, text))


# ``from sluicegate.config import load_settings`` in a doc or a ``python -c`` string: the old module
# is now a package, so a name that is not one of its modules comes from the module it became.
FROM_PACKAGE_RE = re.compile(r"(?<![\w.])from (%s) import (\w+)" % "|".join(
    re.escape(o) for o in sorted(MOVES, key=len, reverse=True) if o in NEW_MODULES))


def from_package(m: re.Match[str]) -> str:
    old, name = m.group(1), m.group(2)
    if f"{old}.{name}" in NEW_MODULES:
        return m.group(0)
    return f"from {MOVES[old]} import {name}"


# ------------------------------------------------------------------ Python imports
def module_of(rel: str) -> str:
    parts = list(Path(rel).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _dotted(name: str) -> cst.Attribute | cst.Name:
    node: cst.Attribute | cst.Name | None = None
    for part in name.split("."):
        node = cst.Name(part) if node is None else cst.Attribute(node, cst.Name(part))
    assert node is not None
    return node


class Rewriter(cst.CSTTransformer):
    def __init__(self, rel: str) -> None:
        self.package = module_of(rel) if rel.endswith("__init__.py") else module_of(rel).rpartition(".")[0]
        reverse = {v: k for k, v in MOVES.items()}
        me = module_of(rel)
        self.moved_file = me in reverse
        if self.moved_file:  # its relative imports were written for the old place: made absolute
            self.package = reverse[me].rpartition(".")[0]
        self.plain_imports: set[str] = set()
        self._name_call_depth = 0

    # -- helpers
    def _absolute(self, node: cst.ImportFrom) -> str | None:
        base = get_full_name_for_node(node.module) if node.module is not None else ""
        if not node.relative:
            return base
        pkg = self.package.split(".") if self.package else []
        up = len(node.relative) - 1
        if up > len(pkg):
            return None
        anchor = pkg[: len(pkg) - up]
        return ".".join([*anchor, base] if base else anchor)

    def _from(self, module: str, names: list[cst.ImportAlias]) -> cst.ImportFrom:
        names = [n.with_changes(comma=cst.MaybeSentinel.DEFAULT) for n in names]
        return cst.ImportFrom(module=_dotted(module), names=names)

    def _split(self, node: cst.ImportFrom) -> list[cst.ImportFrom] | None:
        module = self._absolute(node)
        if module is None:
            return None
        if isinstance(node.names, cst.ImportStar):
            return [node.with_changes(module=_dotted(MOVES[module]), relative=[])] if module in MOVES else None
        if module in MOVES:
            if module in NEW_MODULES:  # now a package: its submodules stay, the old module's names move
                subs = [a for a in node.names if f"{module}.{a.evaluated_name}" in NEW_MODULES]
                names = [a for a in node.names if a not in subs]
                if not names:
                    return None
                out = [self._from(MOVES[module], names)]
                return [self._from(module, subs), *out] if subs else out
            return [node.with_changes(module=_dotted(MOVES[module]), relative=[])]
        moved = [a for a in node.names if f"{module}.{a.evaluated_name}" in MOVES]
        relative_moved = bool(node.relative) and self.moved_file
        if not moved and not relative_moved:
            return None
        kept = [a for a in node.names if a not in moved]
        out: list[cst.ImportFrom] = []
        if kept:
            out.append(node.with_changes(names=[*kept[:-1], kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)]))
            if relative_moved:
                out[-1] = out[-1].with_changes(module=_dotted(module), relative=[])
        for alias in moved:
            parent, _, leaf = MOVES[f"{module}.{alias.evaluated_name}"].rpartition(".")
            local = alias.evaluated_alias or alias.evaluated_name
            new_alias = cst.ImportAlias(name=cst.Name(leaf),
                                        asname=None if local == leaf else cst.AsName(name=cst.Name(local)))
            out.append(self._from(parent, [new_alias]))
        return out

    # -- imports
    def leave_SimpleStatementLine(self, original, updated):  # noqa: ANN001, ANN201
        if len(updated.body) != 1 or not isinstance(updated.body[0], cst.ImportFrom):
            return updated
        parts = self._split(updated.body[0])
        if parts is None:
            return updated
        if len(parts) == 1:
            return updated.with_changes(body=parts)
        lines = [updated.with_changes(body=[parts[0]])]
        lines += [cst.SimpleStatementLine(body=[p]) for p in parts[1:]]
        return cst.FlattenSentinel(lines)

    def leave_ImportFrom(self, original, updated):  # noqa: ANN001, ANN201
        # an import sharing its line with other statements (a; b): rewrite the module only
        module = self._absolute(updated)
        if module in MOVES and module not in NEW_MODULES:
            return updated.with_changes(module=_dotted(MOVES[module]), relative=[])
        if updated.relative and self.moved_file and module:
            return updated.with_changes(module=_dotted(module), relative=[])
        return updated

    def leave_Import(self, original, updated):  # noqa: ANN001, ANN201
        names = []
        for alias in updated.names:
            name = get_full_name_for_node(alias.name)
            if name in MOVES:
                if alias.asname is None:
                    self.plain_imports.add(name)
                alias = alias.with_changes(name=_dotted(MOVES[name]))
            names.append(alias)
        return updated.with_changes(names=names)

    def leave_Attribute(self, original, updated):  # noqa: ANN001, ANN201
        name = get_full_name_for_node(updated)
        if name in self.plain_imports:
            return _dotted(MOVES[name])
        return updated

    # -- strings and comments
    def visit_Call(self, node: cst.Call) -> None:
        func = get_full_name_for_node(node.func) or ""
        if func.rpartition(".")[2] in NAME_CALLS:
            self._name_call_depth += 1

    def leave_Call(self, original, updated):  # noqa: ANN001, ANN201
        func = get_full_name_for_node(original.func) or ""
        if func.rpartition(".")[2] in NAME_CALLS:
            self._name_call_depth -= 1
        return updated

    def leave_SimpleString(self, original, updated):  # noqa: ANN001, ANN201
        if self._name_call_depth:
            return updated
        return updated.with_changes(value=rewrite_text(updated.value))

    def leave_FormattedStringText(self, original, updated):  # noqa: ANN001, ANN201
        if self._name_call_depth:
            return updated
        return updated.with_changes(value=rewrite_text(updated.value))

    def leave_Comment(self, original, updated):  # noqa: ANN001, ANN201
        return updated.with_changes(value=rewrite_text(updated.value))


_PARENTS = sorted({o.rpartition(".")[0] for o in MOVES})
_LEAVES = sorted({o.rpartition(".")[2] for o in MOVES})
_FROM_PARENT_RE = re.compile(r"\bfrom\s+(?:\.[\w.]*|%s)\s+import\b" % "|".join(re.escape(p) for p in _PARENTS))
_LEAF_RE = re.compile(r"\b(?:%s)\b" % "|".join(re.escape(leaf) for leaf in _LEAVES))


def may_reference(source: str) -> bool:
    """Cheap pre-filter: only files naming an old module (dotted or path) or importing a leaf
    from its parent package (``from sluicegate import x``, relative imports) are parsed."""
    return bool(TEXT_RE.search(source) or (_FROM_PARENT_RE.search(source) and _LEAF_RE.search(source)))


def rewrite_python(rel: str, source: str) -> str:
    if not may_reference(source) and module_of(rel) not in set(MOVES.values()):
        return source
    tree = cst.parse_module(source)
    rewriter = Rewriter(rel)
    new = tree.visit(rewriter)
    if rewriter.plain_imports:  # second pass: attribute chains seen before the import statement
        new = new.visit(rewriter)
    return new.code


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
        new = rewrite_python(rel, text) if rel.endswith(".py") else rewrite_text(text)
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
