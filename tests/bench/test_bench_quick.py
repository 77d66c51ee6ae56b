"""Every bench in ``bench/`` runs in its ``--quick`` form and verifies, so a broken bench fails CI.

Quick runs check what each measurement verifies (ledger and Temporal counts, model calls,
limits held), never its speed: the figures are in the JSON but nothing here reads them.
The six benches run at once (each on its own temp dir, free ports and throwaway database) to
keep this under about a minute and a half on the 2-core box.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.quick_pass, pytest.mark.timeout(420)]

ROOT = Path(__file__).resolve().parents[2]
BENCHES = ("intake_bench", "loop_bench", "mixed_stream", "capacity_bench", "peers_bench", "scale_bench")
QUICK_TIMEOUT = 360


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def test_every_bench_quick_run_verifies_and_prints_one_json_document(tmp_path):
    runs = {}
    for name in BENCHES:
        err = tmp_path / f"{name}.stderr"
        with err.open("wb") as stderr:
            proc = subprocess.Popen([sys.executable, "-m", f"bench.{name}", "--quick", "--json"], cwd=ROOT,
                                    stdout=subprocess.PIPE, stderr=stderr)
        runs[name] = (proc, err)
    deadline = time.monotonic() + QUICK_TIMEOUT
    outputs = {}
    try:
        for name, (proc, _) in runs.items():
            outputs[name] = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))[0]
    finally:
        for proc, _ in runs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    require_pg = os.environ.get("SLUICEGATE_REQUIRE_POSTGRES") == "1"
    for name, (proc, err) in runs.items():
        assert proc.returncode == 0, f"{name} --quick exited {proc.returncode}:\n{_tail(err)}"
        doc = json.loads(outputs[name])  # stdout is exactly one JSON document
        assert doc["bench"] == name and doc["ok"] is True and doc["errors"] == [], (name, doc["errors"])
        assert doc["config"]["quick"] is True
        ran = [m for m in doc["measurements"] if m["skipped"] is None]
        assert ran, f"{name}: no measurement ran"
        assert doc["verification"] == {m["name"]: True for m in ran}, (name, doc["verification"], _tail(err))
        for m in doc["measurements"]:
            assert m["capacity"].strip(), f"{name}/{m['name']} does not say how capacity was configured"
            assert m["error"] is None, (name, m["name"], m["error"])
            if require_pg:
                assert m["skipped"] is None, f"{name}/{m['name']} skipped under SLUICEGATE_REQUIRE_POSTGRES=1"

    # intake_bench's end-to-end admissions: both baselines (direct signal-with-start, and the bare front),
    # each with its targets, the same intake rounds, and CPU metered for the front's process.
    e2e = {m["name"]: m for m in json.loads(outputs["intake_bench"])["measurements"]}
    start, front = e2e["end-to-end admissions"], e2e["end-to-end admissions vs bare front"]
    for m in (start, front):
        assert (m["ratios"]["throughput_target_min"], m["ratios"]["p95_target_max"]) == (0.9, 1.2), m["name"]
    assert front["figures"]["ops"]["intake"] == start["figures"]["ops"]["intake"]
    assert front["figures"]["ops"]["baseline"] == start["figures"]["ops"]["baseline"]  # every one 2xx, as many
    cpu = start["figures"]["cpu_ms_per_op"]
    assert set(cpu) == {"intake", "baseline", "front"} and cpu["front"]["naive-front"] > 0, cpu

    # bench.summary's table (issue 11's proof) is built from these documents: every ratio a bench
    # gives a target for is a row, and its verdict is the bench's value against that target.
    from bench.summary import rows

    docs = {name: json.loads(outputs[name]) for name in BENCHES}
    table = {(r.bench, r.measurement, r.ratio): r for r in rows(docs)}
    targeted = 0
    for name, doc in docs.items():
        for m in doc["measurements"]:
            for key, target in (m["ratios"] or {}).items():
                base, sep, side = key.rpartition("_target_")
                if not sep or not isinstance(m["ratios"].get(base), (int, float)):
                    continue
                row = table[(name, m["name"], base)]
                assert row.met == (m["ratios"][base] >= target if side == "min" else m["ratios"][base] <= target)
                targeted += 1
    assert targeted >= 4, f"only {targeted} ratios with a target in the quick runs"
