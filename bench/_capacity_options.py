"""The capacity bench's command line: the burst, the limits, the priority flood, the ledger."""

from __future__ import annotations

import argparse

from bench._harness import parser


def parse_args(doc: str, argv: list[str] | None = None) -> argparse.Namespace:
    """The capacity bench's options (``doc``: the bench's docstring, for ``--help``), defaults resolved."""
    p = parser(doc)
    p.add_argument("--deliveries", type=int, default=None, help="deliveries in the burst (default 5000; quick 100)")
    p.add_argument("--tenants", type=int, default=None, help="tenants, the flooder included (default 20; quick 5)")
    p.add_argument("--flood-share", type=float, default=0.5, help="the flooder's share (default %(default)s)")
    p.add_argument("--repos", type=int, default=3, help="repositories per tenant (default %(default)s)")
    p.add_argument("--global-limit", type=int, default=None,
                   help="global_active_runs (default 40; quick and priority flood 6)")
    p.add_argument("--tenant-limit", type=int, default=None, help="tenant max_active_runs (default 5; quick 3)")
    p.add_argument("--key-limit", type=int, default=2, help="concurrency_limit per repo (default %(default)s)")
    p.add_argument("--run-ms", type=float, nargs=2, default=None, metavar=("MIN", "MAX"),
                   help="simulated run duration, uniform (default 50 200; priority flood 400 800, so the "
                        "slots, not the gate, are the bottleneck)")
    p.add_argument("--defer-retry", type=float, default=30.0,
                   help="defer_retry_seconds (default %(default)s, as configured); items waiting for a slot "
                        "are due at every pass whatever it says, so it only delays quota/rate/breaker defers")
    p.add_argument("--tick", type=float, default=0.5,
                   help="seconds between scheduled dispatch passes (production: dispatch_interval_seconds, 15)")
    p.add_argument("--batch", type=int, default=200, help="dispatch batch (default %(default)s, as configured)")
    p.add_argument("--concurrency", type=int, default=16, help="deliveries submitted in flight (default %(default)s)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--priority-flood", action="store_true",
                   help="the two-tenant mixed-priority flood, aged vs strict (instead of the burst)")
    p.add_argument("--flood-seconds", type=float, default=None, help="how long the flood sends (default 30; quick 8)")
    p.add_argument("--flood-rate", type=float, default=None,
                   help="deliveries per second, both tenants (default 1.2 x the slots' drain rate)")
    p.add_argument("--aging", type=float, default=2.0,
                   help="aging_seconds for the aged run (default %(default)s: production's 120 s scaled to "
                        "simulated runs of a fraction of a second)")
    p.add_argument("--timeout", type=float, default=None,
                   help="give up draining after this many seconds (default 600; quick 120)")
    p.add_argument("--postgres", metavar="ADMIN_URL", default=None,
                   help="use a throwaway PostgreSQL database created through ADMIN_URL instead of SQLite")
    p.add_argument("--forge-thread", action="store_true",
                   help="run the forge simulator in a thread of this process (default: its own process)")
    a = p.parse_args(argv)
    a.deliveries = a.deliveries or (100 if a.quick else 5000)
    a.tenants = a.tenants or (5 if a.quick else 20)
    a.global_limit = a.global_limit or (6 if a.quick or a.priority_flood else 40)
    a.tenant_limit = a.tenant_limit or (3 if a.quick else 5)
    a.timeout = a.timeout or (120.0 if a.quick else 600.0)
    a.run_ms = a.run_ms or ((400.0, 800.0) if a.priority_flood else (50.0, 200.0))
    a.flood_seconds = a.flood_seconds or (8.0 if a.quick else 30.0)
    a.flood_rate = a.flood_rate or 1.2 * a.global_limit / (sum(a.run_ms) / 2000)
    if a.tenants < 2 or a.deliveries < a.tenants:
        p.error("need at least 2 tenants and one delivery per tenant")
    return a
