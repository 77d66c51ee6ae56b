"""Secrets: published dev secrets refuse to serve outside dev mode on loopback; empty or short
secrets are refused at config load; no secret shows in a repr, a config error or a CLI traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sluicegate.config.settings import DEFAULT_CONFIG_FILE, PROJECT_ROOT, ConfigError, load_settings
from sluicegate.devstack import free_port
from sluicegate.config.secret_fields import secret_fields

pytestmark = pytest.mark.attack
DEV = load_settings(DEFAULT_CONFIG_FILE, env={})
PUBLISHED = [value.get_secret_value() for _, value in secret_fields(DEV)]


def _run(argv: list[str], **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLUICEGATE", "FORGE_", "OPENAI_"))}
    return subprocess.run([sys.executable, *argv], cwd=PROJECT_ROOT, env=clean | {
        "SLUICEGATE_TELEMETRY_EXPORTER": "none", "SLUICEGATE__WEBHOOK_API__PORT": str(free_port()), **env},
        capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("env, why", [({}, "dev_mode is off"),
                                      ({"SLUICEGATE_DEV_MODE": "1", "SLUICEGATE__WEBHOOK_API__HOST": "0.0.0.0"},
                                       "is not a loopback address")])
def test_the_api_refuses_to_serve_published_secrets(env, why):
    done = _run(["-m", "webhook_api"], **env)
    assert done.returncode != 0 and why in done.stderr
    for setting in ("actors.carol.token (SLUICEGATE__ACTORS__CAROL__TOKEN)", "forge.token (FORGE_TOKEN)",
                    "sources.github.secrets[0] (SLUICEGATE_GITHUB_WEBHOOK_SECRET)"):
        assert setting in done.stderr, done.stderr
    assert not [s for s in PUBLISHED if s in done.stdout + done.stderr]


def test_the_worker_refuses_to_serve_published_secrets():
    done = _run(["worker.py"], TEMPORAL_ADDRESS="127.0.0.1:1")
    assert done.returncode != 0 and "refusing to start the worker" in done.stderr, done.stderr
    assert not [s for s in PUBLISHED if s in done.stdout + done.stderr]


@pytest.mark.parametrize("published, given, where", [
    ("dev-admin-token-carol", "''", "actors.carol.token: Value error, must not be empty"),
    ("dev-admin-token-carol", "hunter2-short", "actors.carol.token: Value error, must be at least 16"),
    ("dev-webhook-secret", "'    '", "sources.github.secrets.0: Value error, must not be empty"),
    ("dev-cloudevents-token", "hunter2", "sources.events.secrets.0: Value error, must be at least 16"),
    ("dev-forge-token", "' '", "forge.token: Value error, must not be empty")])
def test_empty_or_short_secrets_are_refused_at_load_without_echoing_them(tmp_path, published, given, where):
    config = tmp_path / "sluicegate.yaml"
    config.write_text(DEFAULT_CONFIG_FILE.read_text().replace(published, given))
    with pytest.raises(ConfigError) as info:
        load_settings(config, env={})
    assert where in str(info.value) and info.value.__cause__ is None
    assert "hunter2" not in str(info.value)


def test_no_secret_in_reprs_or_a_cli_traceback(tmp_path):
    assert not [s for s in PUBLISHED if s in repr(DEV) or s in str(DEV.model_dump())]
    secret = "cli-secret-token-never-printed-0001"
    port = free_port()
    (tmp_path / "index.html").write_text("not json")
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"], cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        from sluicegate.devstack import wait_for, port_in_use
        assert wait_for(lambda: port_in_use("127.0.0.1", port), 20)
        done = _run(["starter.py", "trigger", "--repo", "acme/api", "--pr", "1", "--reason", "r",
                     "--actor-token", secret, "--api-url", f"http://127.0.0.1:{port}"], SLUICEGATE_DEV_MODE="1")
    finally:
        server.terminate()
        server.wait(10)
    output = done.stdout + done.stderr
    assert done.returncode != 0 and "JSONDecodeError" in output, output  # a traceback was printed...
    assert secret not in output  # ...without the locals that hold the token


def _changed(tmp_path, text: str, name: str):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_published_secrets_are_known_to_the_code_itself():
    """Finding 8: the guard's list is in code (digests), so it holds whatever file ships."""
    import hashlib

    from sluicegate.config.dev_guard import PUBLISHED_SECRET_DIGESTS

    assert {hashlib.sha256(s.strip().encode()).hexdigest() for s in PUBLISHED} <= PUBLISHED_SECRET_DIGESTS


def test_the_guard_fails_closed_when_temporal_dev_yaml_is_missing_or_changed(tmp_path):
    from sluicegate.config.dev_guard import refuse_published_secrets

    # A deployment's own config that kept the published values (copied from the dev file).
    deployed = load_settings(_changed(tmp_path, DEFAULT_CONFIG_FILE.read_text(), "deploy.yaml"), env={})
    text = DEFAULT_CONFIG_FILE.read_text()
    for value in PUBLISHED:
        text = text.replace(value, f"rotated-{abs(hash(value))}-0123456789")
    dev_files = {"missing": tmp_path / "nope.yaml", "changed": _changed(tmp_path, text, "changed.yaml"),
                 "unreadable": _changed(tmp_path, "sources: [oops", "broken.yaml")}
    for why, dev_file in dev_files.items():
        with pytest.raises(ConfigError) as refused:
            refuse_published_secrets(deployed, "api", "0.0.0.0", dev_file=dev_file)
        for setting in ("actors.carol.token", "forge.token", "sources.github.secrets[0]", "console.session_key"):
            assert setting in str(refused.value), (why, str(refused.value))
        assert not [s for s in PUBLISHED if s in str(refused.value)]
