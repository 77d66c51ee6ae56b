"""Issue 11's proof table: every speed ratio with its target, from one run of the benches.

``python -m bench.summary`` runs ``intake_bench`` (duplicates on SQLite and PostgreSQL, admissions
end to end against bare signal-with-start and against a bare webhook front: a row per ratio each), ``loop_bench`` (issue 11 item 6: a loop step against a bare no-op activity loop and
against a bare agent loop making the same model and forge calls; both ratios, wall and CPU, with
the target 1.2 against each) and ``peers_bench`` (the duplicate storm beside naive Temporal and DBOS,
forge requests per unique version) one after the other, each with ``--json``, and prints one table: measurement, ratio, value, target, met.
``--with-scale`` adds ``scale_bench`` (its curve has no target; its per-step ratios are listed).
``--bench-args`` is passed to every bench (for example ``--quick``).

The table is built only from what the benches computed (:func:`rows`): a ratio ``x`` has its target
in ``x_target_min`` or ``x_target_max`` beside it in the measurement's ``ratios``. Exit status 0
when every bench exited 0 (every verification passed), whatever the ratios, like every bench.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from bench._harness import BenchReport, Measurement, config_of, finish, parser

BENCHES = ("intake_bench", "loop_bench", "peers_bench")


@dataclass(frozen=True)
class Row:
    bench: str
    measurement: str
    ratio: str
    value: float | None
    target: str
    """``>= x``, ``<= x`` or empty (no target)."""
    met: bool | None
    """None when there is no target or no value."""


def rows(docs: dict[str, dict[str, Any]]) -> list[Row]:
    """Every scalar ratio of every measurement of ``docs`` (bench name → its JSON document)."""
    out: list[Row] = []
    for bench, doc in docs.items():
        for m in doc["measurements"]:
            ratios = m.get("ratios") or {}
            for key, value in ratios.items():
                if key.endswith(("_target_min", "_target_max")) or isinstance(value, (list, dict)):
                    continue
                lo, hi = ratios.get(f"{key}_target_min"), ratios.get(f"{key}_target_max")
                number = float(value) if isinstance(value, (int, float)) else None
                met: bool | None = None
                if number is not None and lo is not None:
                    met = number >= lo
                elif number is not None and hi is not None:
                    met = number <= hi
                target = f">= {lo}" if lo is not None else f"<= {hi}" if hi is not None else ""
                out.append(Row(bench, m["name"], key, number, target, met))
    return out


def render(table: list[Row]) -> str:
    lines = [f"{'bench':<13}{'measurement':<44}{'ratio':<36}{'value':>8}  {'target':<9}met"]
    for r in table:
        value = "n/a" if r.value is None else f"{r.value:.2f}"
        met = "" if r.met is None else ("yes" if r.met else "NO")
        lines.append(f"{r.bench:<13}{r.measurement[:43]:<44}{r.ratio[:35]:<36}{value:>8}  {r.target:<9}{met}")
    return "\n".join(lines)


def _run(name: str, args: list[str]) -> tuple[int, dict[str, Any] | None, str]:
    cmd = [sys.executable, "-m", f"bench.{name}", "--json", *args]
    print(f"== {shlex.join(cmd[1:])}", file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)  # the bench's own report streams to stderr
    try:
        return proc.returncode, json.loads(proc.stdout), ""
    except json.JSONDecodeError as exc:
        return proc.returncode, None, f"{name}: stdout is not one JSON document ({exc})"


def _main(args: argparse.Namespace) -> BenchReport:
    extra = shlex.split(args.bench_args) + (["--quick"] if args.quick else []) + (["--keep"] if args.keep else [])
    report = BenchReport("summary", config_of(args))
    docs: dict[str, dict[str, Any]] = {}
    for name in BENCHES + (("scale_bench",) if args.with_scale else ()):
        code, doc, problem = _run(name, extra)
        if doc is None:
            report.errors.append(problem)
            continue
        docs[name] = doc
        scalars = {f"{m['name']}: {k}": v for m in doc["measurements"]
                   for k, v in (m.get("ratios") or {}).items() if not isinstance(v, (list, dict))}
        report.add(Measurement(name, "each of its measurements says how", {"exit_status": code}, scalars,
                               verified=code == 0 and bool(doc["ok"]),
                               checks=[f"{name} exited {code}; verification {doc['verification']}"]))
    print(render(rows(docs)), flush=True)
    return report


def main() -> int:
    p = parser(__doc__ or "")
    p.add_argument("--with-scale", action="store_true", help="also run scale_bench (10,000 deliveries per step)")
    p.add_argument("--bench-args", default="", help="options for every bench, e.g. '--no-postgres'")
    args = p.parse_args()
    return finish(args, lambda: _main(args), "summary")


if __name__ == "__main__":
    raise SystemExit(main())
