"""The CLI as an operator meets a broken setup: one line on stderr, a documented exit code, no traceback.

Each case runs the real command in a subprocess against something really absent: a config file that
does not exist, a ledger on a closed port (PostgreSQL) or in a missing directory (SQLite), a Temporal
address nobody listens on, a webhook API that refuses the connection. The codes are
``sluicegate.temporal.exit_codes``'s, which docs/cli.md lists.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from simulators import free_port
from sluicegate.temporal import exit_codes as cli_errors

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "starter.py"), *args], env={**os.environ, **env}, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def _assert_one_line(done: subprocess.CompletedProcess, code: int, words: str) -> None:
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    assert done.returncode == code, output
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], done.stderr


def test_a_missing_config_file_is_exit_3(tmp_path: Path) -> None:
    done = _cli("status", SLUICEGATE_CONFIG=str(tmp_path / "absent.yaml"))
    _assert_one_line(done, cli_errors.CONFIG, "cannot read config file")


def test_an_invalid_config_value_is_exit_3(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("temporal:\n  no_such_key: 1\n", encoding="utf-8")
    done = _cli("kills", "--json", SLUICEGATE_CONFIG=str(tmp_path / "bad.yaml"))
    _assert_one_line(done, cli_errors.CONFIG, "configuration error")


def test_a_yaml_error_names_line_and_column_never_the_secret_on_it(tmp_path: Path) -> None:
    """PyYAML's own text quotes the offending line; an unclosed quote around a key must not print the key."""
    (tmp_path / "bad.yaml").write_text('codec:\n  payload_key: "SUPERSECRETKEY123\n', encoding="utf-8")
    done = _cli("kills", "--json", SLUICEGATE_CONFIG=str(tmp_path / "bad.yaml"))
    _assert_one_line(done, cli_errors.CONFIG, "is not valid YAML")
    assert "SUPERSECRETKEY123" not in done.stdout + done.stderr
    assert "line 3, column 1" in done.stderr  # the scanner reports where the quoted scalar ran out


@pytest.mark.parametrize("where", ["postgres", "sqlite"])
def test_an_unreachable_ledger_is_exit_4(where: str, tmp_path: Path) -> None:
    url = (f"postgresql+psycopg://nobody@127.0.0.1:{free_port()}/none" if where == "postgres"
           else f"sqlite:///{tmp_path / 'missing-dir' / 'ledger.sqlite'}")
    # SQLite creates the missing file (and its directory), which then has no tables: exit 4 all the same,
    # saying the schema is not current (the message names the table; the path is the operator's to check).
    words = "ledger unreachable" if where == "postgres" else "ledger schema is not current"
    for args in (("status",), ("receipts", "--json"), ("dlq", "list", "--json")):
        done = _cli(*args, SLUICEGATE__LEDGER__URL=url)
        _assert_one_line(done, cli_errors.LEDGER, words)


@pytest.mark.parametrize("args", [("schedule", "list", "--json"), ("reconcile", "--json")])
def test_an_unreachable_temporal_is_exit_5(args: tuple[str, ...], tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    import ledger

    ledger.upgrade(url)
    done = _cli(*args, TEMPORAL_ADDRESS=f"127.0.0.1:{free_port()}", SLUICEGATE__LEDGER__URL=url)
    _assert_one_line(done, cli_errors.TEMPORAL, "Temporal")


def test_an_unreachable_api_is_exit_6() -> None:
    done = _cli("trigger", "--repo", "acme/api", "--pr", "1", "--reason", "webhook lost", "--actor-token", "t",
                "--api-url", f"http://127.0.0.1:{free_port()}")
    _assert_one_line(done, cli_errors.HTTP_SERVICE, "cannot reach the webhook API")


def test_the_codec_server_without_a_key_is_a_config_error() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("SLUICEGATE_PAYLOAD_KEY", "SLUICEGATE_CODEC_TOKEN")}
    done = subprocess.run([sys.executable, str(ROOT / "starter.py"), "codec-server", "--port", str(free_port())],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    _assert_one_line(done, cli_errors.CONFIG, "no payload key configured")


def test_the_simulators_are_subcommands_with_their_own_refusals(tmp_path: Path) -> None:
    done = _cli("simulator", "forge", "--fixtures", str(tmp_path / "absent"), "--port", str(free_port()))
    _assert_one_line(done, cli_errors.USAGE, "fixtures directory not found")


def _run_then_exit(body: str) -> subprocess.CompletedProcess:
    script = "from sluicegate.temporal.process_exit import run_then_exit\ndef boom():\n" + body + "\nrun_then_exit(boom)"
    return subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_a_bug_keeps_its_traceback_and_its_own_exit_code() -> None:
    """The one-line treatment is for the listed failures only: anything else is shown in full, exit 70
    (1 is "the answer is no", which a script must not confuse with a crash)."""
    done = _run_then_exit("    raise KeyError('a bug')")
    assert done.returncode == cli_errors.BUG == 70 and "Traceback" in done.stderr and "KeyError" in done.stderr


def test_a_bug_raised_while_handling_an_expected_failure_is_still_a_bug() -> None:
    """Only ``raise ... from`` explains an error: a KeyError raised inside an ``except`` for a
    configuration error is not a configuration error."""
    done = _run_then_exit("    from sluicegate.config.settings import ConfigError\n    try:\n        raise ConfigError('bad')\n"
                          "    except ConfigError:\n        {}['missing']")
    assert done.returncode == cli_errors.BUG and "KeyError" in done.stderr
    caused = _run_then_exit("    from sluicegate.config.settings import ConfigError\n    try:\n        {}['missing']\n"
                            "    except KeyError as exc:\n        raise ConfigError('bad value') from exc")
    assert caused.returncode == cli_errors.CONFIG and "Traceback" not in caused.stderr


def _database_error(url: str, *statements: str) -> BaseException:
    """The exception the last of ``statements`` really raises on the database at ``url``."""
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            for sql in statements[:-1]:
                conn.execute(sa.text(sql))
        with engine.begin() as conn:
            conn.execute(sa.text(statements[-1]))
    except sa.exc.DBAPIError as exc:
        return exc
    finally:
        engine.dispose()
    raise AssertionError(f"{statements[-1]!r} did not fail")


def test_only_a_connection_or_schema_failure_is_a_ledger_exit_code(empty_ledger_url: str) -> None:
    """A missing table or column: the schema is behind (exit 4, run the migration). A duplicate key or
    a syntax error: a bug (no exit code of its own, so it keeps its traceback), on both backends."""
    table = "create table t_exit (a integer primary key)"
    for statements in ((table, "select nope from t_exit"), ("select a from t_absent",)):
        known = cli_errors.classify(_database_error(empty_ledger_url, *statements))
        assert known is not None and known.code == cli_errors.LEDGER, statements
        assert "ledger schema is not current: run `sluicegate ledger migrate`" in known.message
    assert cli_errors.classify(_database_error(
        empty_ledger_url, "insert into t_exit values (1)", "insert into t_exit values (1)")) is None
    assert cli_errors.classify(_database_error(empty_ledger_url, "selec 1")) is None


@pytest.mark.parametrize("script, args", [("sluicegate", ("status",)), ("sluicegate-worker", ())])
def test_the_console_scripts_run_the_same_entries(script: str, args: tuple[str, ...], tmp_path: Path) -> None:
    """``make venv`` installs the console scripts next to the interpreter; they classify failures the same way."""
    done = subprocess.run([str(Path(sys.executable).with_name(script)), *args],
                          env={**os.environ, "SLUICEGATE_CONFIG": str(tmp_path / "absent.yaml")}, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    _assert_one_line(done, cli_errors.CONFIG, "cannot read config file")
