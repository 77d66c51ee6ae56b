"""``free_port`` (``sluicegate/devstack/_processes.py``): the ports tests and the dev stack give their
servers never come out twice in one process, and never from the kernel's ephemeral range, where an
outgoing connection's source port could take one before its server binds it."""

from __future__ import annotations

import socket
from pathlib import Path

from sluicegate.devstack import free_port


def test_ports_are_distinct_free_and_outside_the_ephemeral_range() -> None:
    low, high = (int(v) for v in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    ports = [free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)
    assert not [p for p in ports if low <= p <= high]
    for port in ports[:20]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", port))  # free when handed out (nothing of ours bound it since)

