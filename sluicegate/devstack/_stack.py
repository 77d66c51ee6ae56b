"""The embedded stack: Temporal dev server, ledger, forge and model simulators, worker, API, and
the codec server when payload encryption is configured (the UI decodes through it).

Every part is a real process on a real port. Ports are checked before anything starts,
so a stack left running (``make up`` in another terminal) is reported plainly instead of
half-starting a second one. Stopping is in reverse order and always runs, even when
start-up failed halfway.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable

import httpx

import ledger
from sluicegate.config.settings import Settings, load_settings
from sluicegate.devstack._dev_server import dev_server_argv
from sluicegate.devstack._processes import ManagedProcess, StackError, free_port, port_in_use

# How long a process of the stack may take to answer after start. A budget, not a speed target: a
# process that exits fails at once; on a loaded 2-core machine (CI running every bench's quick pass
# at once) Python start-up alone has taken more than 30 s.
STARTUP_SECONDS = 90


def _http_ok(url: str) -> bool:
    try:
        return httpx.get(url, timeout=0.5).status_code == 200
    except httpx.HTTPError:
        return False


async def _temporal_ready(settings: Settings) -> bool:
    from temporalio.client import Client

    try:
        client = await Client.connect(settings.temporal.address, namespace=settings.temporal.namespace)
        keys = list(settings.dev_server.search_attributes)
        query = f'{keys[0]} = "probe"' if keys else ""
        async for _ in client.list_workflows(query, limit=1):
            break
        return True
    except Exception:  # noqa: BLE001 - not ready yet, whatever the reason
        return False


class DevStack:
    def __init__(self, env_overrides: dict[str, str] | None = None, *, headless: bool = False,
                 with_api: bool = True, with_worker: bool = True, log_dir: Path | None = None) -> None:
        # The dev stack runs the published dev secrets on loopback: dev mode (sluicegate/config/dev_guard.py).
        self.env = {"SLUICEGATE_DEV_MODE": "1", **os.environ, **(env_overrides or {})}
        self.settings = load_settings(env=self.env)
        self.headless = headless
        self.with_api = with_api
        self.with_worker = with_worker
        self.log_dir = log_dir or self.settings.path(Path("var/logs"))
        self.processes: dict[str, ManagedProcess] = {}

    @property
    def encrypted(self) -> bool:
        """A payload key is configured: payloads are encrypted and the codec server runs for the UI."""
        return bool(self.settings.temporal.payload_key)

    def _process(self, name: str, argv: list[str]) -> ManagedProcess:
        proc = ManagedProcess(name, argv, self.log_dir / f"{name}.log", self.env, self.settings.base_dir)
        self.processes[name] = proc
        return proc

    def _check_ports(self) -> None:
        s = self.settings
        wanted = {"temporal dev server": (s.dev_server.ip, s.dev_server.port),
                  "forge simulator": (s.simulators.forge.host, s.simulators.forge.port),
                  "model simulator": (s.simulators.model.host, s.simulators.model.port)}
        if not self.headless:
            wanted["temporal web UI"] = (s.dev_server.ip, s.dev_server.ui_port)
        if self.with_api:
            wanted["webhook API"] = (s.webhook_api.host, s.webhook_api.port)
        if self.encrypted:
            wanted["codec server"] = (s.codec_server.host, s.codec_server.port)
        busy = [f"{name} port {host}:{port}" for name, (host, port) in wanted.items() if port_in_use(host, port)]
        if busy:
            raise StackError("already in use: " + ", ".join(busy) +
                             ". Is another stack running (`make up`)? Stop it first, or change the ports "
                             "in temporal-dev.yaml.")

    def start(self) -> "DevStack":
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        s, py = self.settings, sys.executable
        self._check_ports()
        if self.encrypted and s.codec_server.token is None:
            raise StackError("temporal.payload_key is set but codec_server.token (SLUICEGATE_CODEC_TOKEN) is not: "
                             "the codec server that lets the UI read encrypted payloads needs one")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        forge_args = [py, "-m", "simulators.forge", "--host", s.simulators.forge.host,
                      "--port", str(s.simulators.forge.port)]
        if s.simulators.forge.fixtures:
            forge_args += ["--fixtures", str(s.path(s.simulators.forge.fixtures))]
        if s.forge.token:
            forge_args += ["--token", s.forge.token.get_secret_value()]
        if s.forge.bot_login:  # the static token's comments are the bot's, as on GitHub
            forge_args += ["--commenter", s.forge.bot_login]
        model_args = [py, "-m", "simulators.model", "--host", s.simulators.model.host,
                      "--port", str(s.simulators.model.port), "--api-key", s.model.api_key.get_secret_value()]
        # Every process is started before any is waited for: they start side by side (most of a start
        # is Python importing). What needs what is kept: the worker and the API are started only once
        # the dev server answers and the ledger is migrated; each process is checked ready (or reported
        # failed) in the same order as before.
        ready: list[tuple[ManagedProcess, Callable[[], bool]]] = []
        for name, argv, addr in (("forge-simulator", forge_args, s.simulators.forge),
                                 ("model-simulator", model_args, s.simulators.model)):
            proc = self._process(name, argv)
            proc.start()
            ready.append((proc, partial(_http_ok, f"http://{addr.host}:{addr.port}/_sim/stats")))
        if self.encrypted:
            codec = self._process("codec-server", [py, "-m", "sluicegate.temporal.codec_server"])
            codec.start()
            ready.append((codec, partial(_http_ok, f"http://{s.codec_server.host}:{s.codec_server.port}/healthz")))
        self.start_temporal()
        ledger.upgrade(s.ledger_url())
        if self.with_worker:
            ready.append(self._launch_worker())
        if self.with_api:
            api = self._process("webhook-api", [py, "-m", "webhook_api"])
            api.start()
            ready.append((api, partial(_http_ok, f"http://{s.webhook_api.host}:{s.webhook_api.port}/healthz")))
        for proc, check in ready:
            proc.wait_until(check, STARTUP_SECONDS)

    def start_temporal(self) -> ManagedProcess:
        """Start the dev server (again, after :meth:`stop_temporal`: same port, same database file)."""
        s = self.settings
        temporal = self._process("temporal", dev_server_argv(s, headless=self.headless, codec=self.encrypted))
        temporal.start()
        temporal.wait_until(lambda: port_in_use(s.dev_server.ip, s.dev_server.port), STARTUP_SECONDS)
        temporal.wait_until(lambda: asyncio.run(_temporal_ready(s)), STARTUP_SECONDS)
        return temporal

    def stop_temporal(self) -> None:
        """Stop the dev server as an operator would (SIGTERM); workflows and schedules stay in its file."""
        self.processes["temporal"].stop()

    def start_worker(self) -> ManagedProcess:
        worker, polling = self._launch_worker()
        worker.wait_until(polling, STARTUP_SECONDS)
        return worker

    def _launch_worker(self) -> tuple[ManagedProcess, Callable[[], bool]]:
        """The worker process, started; and its readiness check (it logged that it polls)."""
        worker = self._process("worker", [sys.executable, str(self.settings.base_dir / "worker.py")])
        marker_offset = worker.log_path.stat().st_size if worker.log_path.exists() else 0
        worker.start()
        return worker, lambda: b"worker polling" in worker.log_path.read_bytes()[marker_offset:]

    def kill_worker(self) -> None:
        self.processes["worker"].kill()

    def stop(self) -> None:
        for name in reversed(list(self.processes)):
            # The worker gets its whole graceful window (running activities finish or are cancelled, the
            # worker is finalized) before a SIGKILL; the old 10 s equalled the window and cut it short.
            grace = self.settings.temporal.graceful_shutdown_seconds + 20 if name == "worker" else 10.0
            self.processes[name].stop(grace)

    def leftover(self) -> list[str]:
        """Names of processes still alive (should be empty after :meth:`stop`)."""
        return [n for n, p in self.processes.items() if p.alive()]

    def __enter__(self) -> "DevStack":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def isolated_overrides(run_dir: Path) -> dict[str, str]:
    """Environment overrides for a stack on free ports with all state under ``run_dir``
    (tests and benchmarks run beside a developer's ``make up`` without clashing)."""
    temporal, ui, api, forge, model, codec = (free_port() for _ in range(6))
    return {
        "TEMPORAL_ADDRESS": f"127.0.0.1:{temporal}",
        "SLUICEGATE__DEV_SERVER__PORT": str(temporal),
        "SLUICEGATE__DEV_SERVER__UI_PORT": str(ui),
        "SLUICEGATE__DEV_SERVER__DB_FILENAME": str(run_dir / "temporal-dev.sqlite"),
        "SLUICEGATE_LEDGER_URL": f"sqlite:///{run_dir / 'ledger.sqlite'}",
        "SLUICEGATE__WEBHOOK_API__PORT": str(api),
        "SLUICEGATE__SIMULATORS__FORGE__PORT": str(forge),
        "SLUICEGATE__SIMULATORS__MODEL__PORT": str(model),
        "SLUICEGATE__CODEC_SERVER__PORT": str(codec),
        "FORGE_BASE_URL": f"http://127.0.0.1:{forge}",
        "OPENAI_BASE_URL": f"http://127.0.0.1:{model}/v1",
        "SLUICEGATE__TELEMETRY__FILE": str(run_dir / "traces.jsonl"),
    }


PORT_TAKEN = ("address already in use", "already in use: ")
"""What a stack's start-up failure says when a port it was given was taken first."""


def start_isolated(run_dir: Path, overrides: dict[str, str] | None = None, *, attempts: int = 3,
                   **stack_args: Any) -> DevStack:
    """A started stack on free ports (:func:`isolated_overrides`) with ``overrides`` on top.

    A free port is only free when it is picked: another process (a test beside this one, a bench)
    can bind it before our server does. Such a start-up failure is retried on newly picked ports, at
    most ``attempts`` times; any other failure is raised at once."""
    for attempt in range(1, attempts + 1):
        env = {**isolated_overrides(run_dir), **(overrides or {})}
        try:
            return DevStack(env, **stack_args).start()
        except StackError as exc:
            if attempt == attempts or not any(text in str(exc) for text in PORT_TAKEN):
                raise
    raise AssertionError("unreachable")


def wait_for(predicate, timeout: float, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False
