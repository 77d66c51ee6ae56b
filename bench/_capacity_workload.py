"""The capacity bench's workload: the burst of deliveries, their pull requests, the waits they saw.

The flooder (``FLOODER``) sends ``--flood-share`` of the deliveries, the other tenants share the rest
uniformly, interleaved at random (seeded); each delivery is for its own pull request.
"""

from __future__ import annotations

import argparse
import asyncio
import random
from collections import Counter
from dataclasses import dataclass
from datetime import datetime

import httpx
from sqlmodel import Session, select

from bench._common import head_sha
from intake.decision import Outcome
from intake.envelope import PullRequestRef
from intake.identity import review_work_key
from ledger import Receipt
from ledger._sql import as_utc

FORGE_TOKEN = "bench-forge-token"
FLOODER = "tenant-00"


@dataclass(frozen=True)
class Delivery:
    tenant: str
    ref: PullRequestRef
    head: str

    @property
    def work_key(self) -> str:
        return review_work_key(self.tenant, self.ref)


def burst(a: argparse.Namespace) -> list[Delivery]:
    """Seeded: the flooder's share, the rest uniform over the other tenants, interleaved at random."""
    rng = random.Random(a.seed)
    tenants = [FLOODER] + [f"tenant-{n:02d}" for n in range(1, a.tenants)]
    flood = round(a.deliveries * a.flood_share)
    owners = [tenants[0]] * flood + [rng.choice(tenants[1:]) for _ in range(a.deliveries - flood)]
    rng.shuffle(owners)
    numbers: Counter = Counter()
    out = []
    for owner in owners:
        repo = f"repo-{rng.randrange(a.repos)}"
        numbers[owner, repo] += 1
        ref = PullRequestRef(owner, repo, numbers[owner, repo])
        out.append(Delivery(owner, ref, head_sha("capacity-bench", a.seed, ref.target_id)))
    return out


async def create_pulls(base_url: str, items: list[Delivery]) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        sem = asyncio.Semaphore(32)

        async def one(d: Delivery) -> None:
            async with sem:
                r = await http.post(f"/_sim/pulls/{d.ref.owner}/{d.ref.repo}/{d.ref.number}", json={"head_sha": d.head})
                r.raise_for_status()
        await asyncio.gather(*(one(d) for d in items))


def admission_waits(engine) -> tuple[dict[str, tuple[str, float]], Counter]:
    """Per admitted work key: (tenant, admission receipt time - first receipt time in seconds);
    and every receipt counted by outcome/reason."""
    first: dict[str, datetime] = {}
    admitted: dict[str, datetime] = {}
    tenant_of: dict[str, str] = {}
    reasons: Counter = Counter()
    with Session(engine) as s:
        rows = s.execute(select(Receipt.work_key, Receipt.tenant, Receipt.outcome, Receipt.reason, Receipt.created_at))
        for key, tenant, outcome, reason, at in rows:
            at = as_utc(at)
            tenant_of[key] = tenant
            first[key] = min(first.get(key, at), at)
            if outcome == str(Outcome.ACCEPT):
                admitted[key] = at
            reasons[f"{outcome}/{reason}"] += 1
    return {key: (tenant_of[key], (at - first[key]).total_seconds()) for key, at in admitted.items()}, reasons
