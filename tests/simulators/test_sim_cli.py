"""``python -m simulators.forge`` / ``python -m simulators.model`` as real processes."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from simulators import free_port

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def _run(module: str, *args: str) -> Iterator[str]:
    port = free_port()
    cmd = [sys.executable, "-m", module, "--port", str(port), "--log-level", "warning", *args]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 15
        while True:
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else "exited"
            try:
                if httpx.get(f"{base}/_sim/health", timeout=0.5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "simulator did not start"
            time.sleep(0.05)
        yield base
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) is not None


def test_forge_cli_with_token() -> None:
    with _run("simulators.forge", "--token", "tok") as base:
        assert httpx.get(f"{base}/repos/acme/api/pulls/42").status_code == 401
        ok = httpx.get(f"{base}/repos/acme/api/pulls/42", headers={"Authorization": "token tok"})
        assert ok.status_code == 200 and ok.json()["number"] == 42


def test_forge_cli_refuses_missing_fixtures(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "simulators.forge", "--fixtures", str(tmp_path / "absent"), "--port", str(free_port())],
        cwd=ROOT, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert result.returncode == 2
    assert "fixtures directory not found" in result.stderr


def test_model_cli_with_key_and_models() -> None:
    with _run("simulators.model", "--api-key", "k1", "--model", "a", "--model", "b") as base:
        assert httpx.get(f"{base}/v1/models").status_code == 401
        models = httpx.get(f"{base}/v1/models", headers={"Authorization": "Bearer k1"}).json()
        assert [m["id"] for m in models["data"]] == ["a", "b"]
