"""The capacity gate's deferral jitter is the shared one: only ever adds, bounded, tenth-second steps."""

from __future__ import annotations

import random

from intake.capacity import jittered
from sluicegate.forge.retry_after import JITTER_FRACTION, with_jitter


def test_jittered_adds_up_to_the_fraction_in_tenths():
    rng = random.Random(7)
    values = [jittered(10.0, rng=rng) for _ in range(200)]
    assert all(10.0 <= v <= 10.0 * (1 + JITTER_FRACTION) for v in values)
    assert all(abs(v * 10 - round(v * 10)) < 1e-9 for v in values)
    assert len(set(values)) > 5


def test_jittered_is_not_capped_like_a_retry_after():
    assert jittered(3600.0, rng=random.Random(1)) >= 3600.0
    assert with_jitter(3600.0, random.Random(1)) <= 300.0 * (1 + JITTER_FRACTION)


def test_a_fraction_is_honoured_by_the_one_jitter():
    rng = random.Random(3)
    assert all(5.0 <= with_jitter(5.0, rng, fraction=0.5) <= 7.5 for _ in range(100))
    assert with_jitter(5.0, rng, fraction=0.0) == 5.0
