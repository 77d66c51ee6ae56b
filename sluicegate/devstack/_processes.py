"""Child processes of the dev stack: started in their own process group, logged to files,
stopped with SIGTERM then SIGKILL, so nothing is left running after the demo or a test.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from sluicegate.errors import SluicegateError


class StackError(SluicegateError):
    """The dev stack could not be started; the message says which part and why."""


def port_in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


_HANDED_OUT: set[int] = set()
_PORTS_LOCK = threading.Lock()
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def _outside_ephemeral() -> range:
    """Ports the kernel never picks as an outgoing connection's source port (Linux's
    ``ip_local_port_range``, 32768-60999 by default): below it, else above it."""
    try:
        low, high = (int(v) for v in _RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999
    return range(10000, low) if low > 12000 else range(high + 1, 65536)


def free_port(host: str = "127.0.0.1") -> int:
    """A port free now, that this process has not handed out before, outside the kernel's ephemeral
    range. A port the kernel picked (``bind(0)``) comes from that range, so between being handed out
    and its server binding it, an outgoing connection could take it as its source port, or a later
    ``bind(0)`` in this process hand it out again (a worker then failed to start its metrics listener:
    "Address already in use")."""
    ports = _outside_ephemeral()
    with _PORTS_LOCK:
        for _ in range(500):
            port = random.randrange(ports.start, ports.stop)
            if port in _HANDED_OUT:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind((host, port))
                except OSError:
                    continue
            _HANDED_OUT.add(port)
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:  # nothing free out there: the kernel's pick
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class ManagedProcess:
    name: str
    argv: list[str]
    log_path: Path
    env: dict[str, str]
    cwd: Path
    proc: subprocess.Popen | None = field(default=None, init=False)
    killed: bool = field(default=False, init=False)
    """SIGKILLed on purpose (:meth:`kill`, a crash drill) since its last start: its exit code says nothing."""

    def start(self) -> None:
        self.killed = False
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                     cwd=self.cwd, start_new_session=True)
        log.close()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_until(self, ready: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or not self.alive():
                raise StackError(f"{self.name} exited with {self.proc and self.proc.returncode} during start-up; "
                                 f"see {self.log_path}:\n{self.tail()}")
            if ready():
                return
            time.sleep(0.1)
        raise StackError(f"{self.name} not ready after {timeout:.0f}s; see {self.log_path}:\n{self.tail()}")

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def kill(self) -> None:
        """SIGKILL the whole process group at once (crash drills)."""
        if self.proc is not None and self.alive():
            self.killed = True
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, grace: float = 10.0) -> None:
        if self.proc is None or not self.alive():
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        except ProcessLookupError:
            pass
