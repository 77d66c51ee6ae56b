"""The bench harness: one JSON document on stdout, the human report on stderr, and an exit
status that says whether every measurement verified (never whether it was fast)."""

from __future__ import annotations

import asyncio
import json
import math

from bench._harness import BenchReport, Measurement, config_of, every, finish, parser


def _args(*argv: str):
    p = parser("A test bench.\n\nMore text.")
    p.add_argument("--postgres", default="postgresql://bench:s3cret@127.0.0.1:5432/postgres")
    return p.parse_args(list(argv))


def _report(a, *ms: Measurement) -> BenchReport:
    rep = BenchReport("test_bench", config_of(a))
    for m in ms:
        print(f"human line for {m.name}")
        rep.add(m)
    return rep


def test_json_mode_prints_one_document_and_sends_the_human_report_to_stderr(capsys):
    a = _args("--quick", "--json")
    m = Measurement("fast thing", "limits lifted", figures={"rate": 12.5, "p95": math.nan},
                    ratios={"throughput": 0.5}, verified=True)
    assert finish(a, lambda: _report(a, m), "test_bench") == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["ok"] is True and doc["verification"] == {"fast thing": True}
    assert doc["measurements"][0]["capacity"] == "limits lifted"
    assert doc["measurements"][0]["figures"] == {"rate": 12.5, "p95": None}
    assert doc["config"]["quick"] is True and "json" not in doc["config"]
    assert "s3cret" not in out and doc["config"]["postgres"] == "postgresql://bench:***@127.0.0.1:5432/postgres"
    assert "human line for fast thing" in err and "verification PASSED" in err


def test_a_failed_verification_exits_non_zero_whatever_the_ratio(capsys):
    a = _args("--json")
    good = Measurement("fast", "n/a", ratios={"throughput": 2.0}, verified=True)
    bad = Measurement("wrong counts", "n/a", ratios={"throughput": 2.0}, verified=False, checks=["3 rows, want 4"])
    skipped = Measurement("postgres", "n/a", skipped="unreachable")
    assert finish(a, lambda: _report(a, good, bad, skipped), "test_bench") == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False
    assert doc["verification"] == {"fast": True, "wrong counts": False}


def test_a_bench_that_raises_is_a_failed_run_with_its_error_in_the_document(capsys):
    a = _args("--json")

    def broken() -> BenchReport:
        raise RuntimeError("stack did not start")

    assert finish(a, broken, "test_bench") == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and doc["errors"] == ["RuntimeError: stack did not start"]


def test_without_json_only_the_human_report_and_the_verdict_are_printed(capsys):
    a = _args()
    assert finish(a, lambda: _report(a, Measurement("m", "n/a", verified=True)), "test_bench") == 0
    out = capsys.readouterr().out
    assert out.splitlines() == ["human line for m", "test_bench: verification PASSED for every measurement"]


def test_every_runs_at_once_then_on_its_interval_and_stops_with_the_block():
    calls: list[float] = []

    async def work() -> None:
        calls.append(asyncio.get_running_loop().time())

    async def scenario() -> tuple[int, int]:
        async with every(0.05, work):
            await asyncio.sleep(0)  # the first call runs as soon as the block yields
            first = len(calls)
            await asyncio.sleep(0.28)
        inside = len(calls)
        await asyncio.sleep(0.15)
        return first, inside

    first, inside = asyncio.run(scenario())
    assert first == 1
    assert inside >= 3  # at once, then every 0.05 s for 0.28 s (a slow machine may fit fewer than 6)
    assert len(calls) == inside  # none after the block ended


def test_every_waits_for_the_call_in_progress_when_the_block_ends():
    finished: list[bool] = []

    async def slow() -> None:
        await asyncio.sleep(0.1)
        finished.append(True)

    async def scenario() -> None:
        async with every(10, slow):
            await asyncio.sleep(0.01)

    asyncio.run(scenario())
    assert finished == [True]
