"""Forge requests per delivery and per unique version, from the forge simulator's own counters.

Every bench and the stream drills report the same figures, so a change that makes intake read the
forge more often shows up beside the throughput it buys:

* ``requests`` — every API request the simulator saw (answered or refused), diffs and comments included;
* ``freshness`` — single-pull JSON reads (intake's freshness read), 200 and 304 alike;
* ``not_modified`` — those answered ``304 Not Modified`` (free of GitHub's rate limit).

Per unique version is the figure issue 11 bounds: at most 1.1 freshness reads per (work key, version).
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

__all__ = ["ForgeReads", "forge_counters", "forge_reads_between"]


@dataclass(frozen=True)
class ForgeReads:
    deliveries: int
    unique_versions: int
    requests: int = 0
    freshness: int = 0
    not_modified: int = 0

    @property
    def per_delivery(self) -> float:
        return self.requests / self.deliveries if self.deliveries else float("nan")

    @property
    def freshness_per_version(self) -> float:
        return self.freshness / self.unique_versions if self.unique_versions else float("nan")

    def as_json(self) -> dict:
        return {**self.__dict__, "requests_per_delivery": self.per_delivery,
                "freshness_reads_per_delivery": self.freshness / self.deliveries if self.deliveries else None,
                "freshness_reads_per_unique_version": self.freshness_per_version}

    def line(self) -> str:
        return (f"forge: {self.requests} requests for {self.deliveries} deliveries ({self.per_delivery:.2f}/delivery); "
                f"{self.freshness} freshness reads ({self.not_modified} answered 304) for {self.unique_versions} "
                f"unique versions = {self.freshness_per_version:.2f}/unique version")


def forge_counters(forge_url: str) -> dict:
    """The simulator's counters now (``GET /_sim/stats``)."""
    return httpx.get(f"{forge_url.rstrip('/')}/_sim/stats", timeout=10).raise_for_status().json()


def forge_reads_between(before: dict, after: dict, deliveries: int, unique_versions: int) -> ForgeReads:
    """What the forge was asked between two :func:`forge_counters` snapshots."""
    reads_after, reads_before = after.get("pull_reads", {}), before.get("pull_reads", {})

    def grew(kind: str) -> int:
        return reads_after.get(kind, 0) - reads_before.get(kind, 0)

    return ForgeReads(deliveries, unique_versions, after["total"] - before["total"],
                      grew("json") + grew("not_modified"), grew("not_modified"))
