"""``bench/_e2e_front.py``: the three end-to-end sides share rounds, the first side rotates, and the
bare-front comparison pairs the very intake rounds the direct-start comparison does."""

from __future__ import annotations

import asyncio

from bench import _e2e_front
from bench._common import Comparison, SideRound


def test_three_sides_rotate_and_both_comparisons_pair_the_same_intake_rounds():
    calls: list[tuple[str, int]] = []
    rates = {"intake": 50, "baseline": 100, "front": 80}

    def side(name: str):
        async def run(n: int) -> SideRound:
            calls.append((name, n))
            return SideRound(rates[name] * (n + 1), 1.0, [0.01 * (n + 1)])
        return run

    cmp = Comparison("end-to-end admissions", 0.9, "admits/s", base_unit="starts/s")
    front = _e2e_front.comparison(0.9, 1.2)
    asyncio.run(_e2e_front.interleave3(3, {s: side(s) for s in rates}, cmp, front, lambda _: None))

    assert [c[0] for c in calls] == ["intake", "baseline", "front", "baseline", "front", "intake",
                                     "front", "intake", "baseline"]
    assert [c[1] for c in calls] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert front.intake is cmp.intake and len(cmp.intake) == 3
    assert cmp.ratios == [0.5, 0.5, 0.5] and front.ratios == [0.625, 0.625, 0.625]
    m = front.as_measurement()
    assert m.ratios["throughput_target_min"] == 0.9 and m.ratios["p95_target_max"] == 1.2
    assert m.figures["baseline_rate"] == 160 and m.figures["intake_rate"] == 100

