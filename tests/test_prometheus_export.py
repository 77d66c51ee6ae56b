"""``telemetry.prometheus.temporal_bind``: an IPv6 host is served (the SDK needs it bracketed), and a
port already in use is a one-line error naming the setting, not a traceback. Real sockets, the real
Temporal ``Runtime``."""

from __future__ import annotations

import socket

import pytest

from sluicegate.config.settings import load_settings
from sluicegate.observability.prometheus_export import socket_address, temporal_runtime

VAR = "SLUICEGATE__TELEMETRY__PROMETHEUS__TEMPORAL_BIND"


def _free_port(family: int, host: str) -> int:
    with socket.socket(family) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def test_socket_address_brackets_only_ipv6_hosts():
    assert socket_address("::1", 9466) == "[::1]:9466"
    assert socket_address("127.0.0.1", 9466) == "127.0.0.1:9466"


def test_an_ipv6_temporal_bind_is_served():
    try:
        port = _free_port(socket.AF_INET6, "::1")
    except OSError:
        pytest.skip("no IPv6 loopback on this host")
    runtime = temporal_runtime(load_settings(env={VAR: f'"[::1]:{port}"'}).telemetry)  # YAML-quoted
    assert runtime is not None
    with pytest.raises(OSError):  # the SDK's exporter holds the port now
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", port))


def test_a_temporal_bind_in_use_is_a_one_line_error():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        bind = f"127.0.0.1:{held.getsockname()[1]}"
        with pytest.raises(SystemExit) as exit_:
            temporal_runtime(load_settings(env={VAR: bind}).telemetry)
    message = str(exit_.value)
    assert message.startswith(f"cannot serve Temporal SDK metrics on {bind} (telemetry.prometheus.temporal_bind)")
    assert "\n" not in message and "in use" in message
