"""Shared pieces of the benches: the dev config they need, their error, signed payloads.

Rounds and their statistics (``Comparison``, ``SideRound``, ``interleave``, ``median``,
``percentile``, ``now``) live in ``bench/_rounds.py`` and are re-exported here for older imports.
"""

from __future__ import annotations

import hashlib

from bench._rounds import Comparison, SideRound, interleave, median, now, percentile
from demo.github_payloads import delivery_headers, encode, pull_request_payload

__all__ = ["BENCH_SCOPE", "NO_CAPACITY_LIMITS", "BenchError", "Comparison", "SideRound", "delivery_headers",
           "head_sha", "interleave", "median", "now", "percentile", "pull_request_payload", "signed_pull_request"]

BENCH_SCOPE = {"SLUICEGATE__SOURCES__GITHUB__REPOSITORIES": '["acme/*", "bench*/*"]'}
"""Benchmarks send webhooks for ``bench*`` owners through the dev config's ``github`` source: it must serve them."""
NO_CAPACITY_LIMITS = {f"SLUICEGATE__CAPACITY__{k}": "1000000" for k in (
    "GLOBAL_ACTIVE_RUNS", "CONCURRENCY_LIMIT", "TENANT_DEFAULTS__MAX_ACTIVE_RUNS",
    "TENANT_DEFAULTS__ADMISSIONS_PER_DAY", "TENANT_DEFAULTS__RATE_PER_SECOND", "TENANT_DEFAULTS__BURST")}
"""Comparisons against a bare baseline measure intake, not the dev config's capacity limits (one repository,
hundreds of deliveries: the per-repository limit would defer all but ten)."""


class BenchError(Exception):
    """A measurement could not be made or did not measure what it claims (verification failed)."""


def head_sha(*parts: object) -> str:
    """A deterministic 40-hex commit id."""
    return hashlib.sha1("/".join(map(str, parts)).encode()).hexdigest()


def signed_pull_request(secret: str, owner: str, repo: str, number: int, sha: str,
                        delivery_id: str | None = None) -> tuple[dict[str, str], bytes]:
    """Headers (lower-case, signed) and body of a ``pull_request`` ``opened`` delivery, as GitHub sends it."""
    body = encode(pull_request_payload(owner, repo, number, sha, action="opened"))
    return delivery_headers(secret, body, delivery_id=delivery_id), body
