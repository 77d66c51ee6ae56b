"""The adversarial suite's harness: one real stack per ledger backend, and the closing line.

``target`` starts the whole dev stack as subprocesses (as ``tests/e2e`` does) on SQLite and
on PostgreSQL (a database of its own, dropped afterwards), in dev mode on loopback, with the
API's metrics exported every second so the refusal counter can be read back. Session-scoped
and parametrized, so pytest runs every attack on one backend, then every attack on the other.

Every test marked ``attack`` is one attack; the terminal summary counts the attacks tried
and blocked (a passing attack test is a blocked attack).
"""

from __future__ import annotations

import pytest

from sluicegate.devstack import DevStack, isolated_overrides
from tests.security.target import Target
from tests.support.postgres import create_database, drop_database

_results: dict[str, list[str]] = {}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "attack: one attack on the trust boundary (counted in the closing line)")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "attack" not in report.keywords or report.when not in ("setup", "call"):
        return
    if report.when == "setup" and report.passed:
        return  # counted at "call"
    outcome = "blocked" if report.passed else ("skipped" if report.skipped else "GOT THROUGH")
    _results.setdefault(report.nodeid.split("::", 1)[-1].split("[", 1)[0], []).append(outcome)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not _results:
        return
    tried = sum(len(v) for v in _results.values())
    blocked = sum(v.count("blocked") for v in _results.values())
    bad = sorted(name for name, v in _results.items() if "GOT THROUGH" in v)
    terminalreporter.write_sep("=", "trust boundary")
    for name in sorted(_results):
        counts = {o: _results[name].count(o) for o in dict.fromkeys(_results[name])}
        terminalreporter.write_line(f"  {name}: " + ", ".join(f"{n} {o}" for o, n in counts.items()))
    terminalreporter.write_line(f"security: {tried} attacks tried ({len(_results)} kinds; HTTP ones on SQLite and "
                                f"PostgreSQL), {blocked} blocked" + (f"; NOT blocked: {', '.join(bad)}" if bad else ""))


@pytest.fixture(scope="session", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def target(request, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp(f"security-{request.param}")
    env = {**isolated_overrides(run_dir), "SLUICEGATE_TELEMETRY_EXPORTER": "file", "SLUICEGATE_DEV_MODE": "1",
           "OTEL_METRIC_EXPORT_INTERVAL": "1000"}
    database = None
    if request.param == "postgres":
        database, env["SLUICEGATE_LEDGER_URL"] = create_database("sluicegate_sec")
    stack = DevStack(env, headless=True, log_dir=run_dir / "logs")
    try:
        stack.start()
        target = Target(stack, request.param)
        yield target
        target.close()
    finally:
        stack.stop()
        if database is not None:
            drop_database(database)


@pytest.fixture(scope="session")
def done_pull(target):
    """A pull request head already reviewed (done) on this backend: what a re-run would repeat."""
    return target.done_version()
