"""The end-to-end comparison's second baseline, the *bare front* (``bench/_e2e.py``).

The same signed deliveries (their own owner, so their own work keys) POSTed to the peers' minimal
webhook front, ``bench/_peer_front.py --peer naive`` started as its own process beside the stack
(``bench._peers.start_front``, CPU metered with the stack): uvicorn + FastAPI with the webhook API's
bounds and settings, ``parse_github_delivery`` (signature, JSON, pydantic), then one signal-with-start
per delivery, workflow id = work key@version, on a queue nobody polls. That is what every
webhook -> Temporal service pays; Sluicegate's intake adds the forge freshness read, the ledger accept
and mark and the capacity gate. The direct-start baseline (no HTTP, no signature, no parse) is kept.

Verification: every delivery answered 2xx by the front, and one ``NaiveReview`` workflow per
delivery running in Temporal (counted as the direct starts are). The three sides run in the same
rounds, the order rotating every round (:func:`interleave3`).
"""

from __future__ import annotations

from collections import Counter
from typing import Awaitable, Callable

from bench._common import BenchError, Comparison, SideRound
from bench._e2e_verify import running_workflows
from bench._harness import stage
from bench._peer_front import NAIVE_WORKFLOW
from bench._peers import start_front
from sluicegate.devstack import DevStack

OWNER = "bench-front"
NAME = "end-to-end admissions vs bare front"
CAPACITY = ("bare front: bench/_peer_front.py --peer naive (uvicorn + FastAPI, same bounds, signature check "
            "and parse, one signal-with-start per delivery), no worker: its workflows wait in their queue")


def comparison(target: float, p95_target: float) -> Comparison:
    return Comparison(NAME, target, "admits/s", base_unit="front starts/s", capacity=CAPACITY, p95_target=p95_target)


def start(stack: DevStack) -> str:
    """Start the front (before the CPU meter is made, so its process is metered); its webhook URL."""
    return start_front(stack, "naive", stack.log_dir) + "/webhooks/github"


def poster(http, url: str, outcomes: Counter) -> Callable[[tuple[dict[str, str], bytes]], Awaitable[bool]]:
    async def post(item: tuple[dict[str, str], bytes]) -> bool:
        headers, body = item
        try:
            r = await http.post(url, content=body, headers=headers)
        except Exception as exc:  # noqa: BLE001 - counted and reported as an error
            outcomes[f"front error {type(exc).__name__}"] += 1
            return False
        ok = 200 <= r.status_code < 300
        outcomes["front 2xx" if ok else f"front {r.status_code}"] += 1
        return ok
    return post


async def interleave3(rounds: int, sides: dict[str, Callable[[int], Awaitable[SideRound]]], cmp: Comparison,
                      front: Comparison, log: Callable[[str], None]) -> None:
    """Intake, direct starts and the bare front back to back per round; the first side rotates every round.
    ``front`` gets the same intake rounds as ``cmp`` (its per-round ratios pair rounds as ``cmp``'s do)."""
    names = list(sides)
    into = {"intake": cmp.intake, "baseline": cmp.baseline, "front": front.baseline}
    for n in range(rounds):
        for side in names[n % len(names):] + names[:n % len(names)]:
            stage(f"{cmp.name}: round {n + 1}/{rounds}, {side}")
            result = await sides[side](n)
            into[side].append(result)
            unit = {"intake": cmp.unit, "baseline": cmp.base_unit, "front": front.base_unit}[side]
            log(f"  {cmp.name} round {n + 1}/{rounds} {side:<8} {result.ops:>6} ops in {result.seconds:6.2f}s "
                f"= {result.rate:9.1f} {unit}")
    front.intake = cmp.intake


async def verify(front: Comparison, client, sent: int, outcomes: Counter) -> None:
    answered = outcomes.get("front 2xx", 0)
    running = await running_workflows(client, sent, NAIVE_WORKFLOW)
    front.checks.append("bare front answers: " + ", ".join(f"{k} x{v}" for k, v in sorted(outcomes.items())))
    front.checks.append(f"temporal: {running} {NAIVE_WORKFLOW} workflows running (one per delivery to the bare "
                        f"front); expected {sent}")
    problems = [f"{k} x{v}" for k, v in outcomes.items() if k != "front 2xx"]
    if answered != sent:
        problems.append(f"{answered} of {sent} deliveries answered 2xx by the bare front")
    if running != sent:
        problems.append(f"{running} {NAIVE_WORKFLOW} workflows running, expected {sent}")
    if problems:
        raise BenchError("bare front verification failed: " + "; ".join(problems))
