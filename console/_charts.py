"""Chart geometry for server-rendered SVG: bars by outcome and reason, columns by hour, gauges.

Pure arithmetic on counts the ledger returned; the templates draw the shapes (colours come
from the stylesheet by outcome class, so the page needs no script and no inline style). Every
shape also carries its numbers as text (a ``<title>`` and a label), so the chart reads the
same to a screen reader and to the browser tests as it does to the eye.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from intake.decision import Outcome

OUTCOME_ORDER: tuple[str, ...] = (Outcome.ACCEPT, Outcome.DEFER, Outcome.NO_WORK, Outcome.REJECT)


@dataclass(frozen=True)
class Bar:
    outcome: str
    reason: str
    count: int
    y: float
    width: float


@dataclass(frozen=True)
class BarChart:
    width: int
    height: int
    label_width: int
    row_height: int
    bars: list[Bar]
    total: int


def bar_chart(rows: list[tuple[str, str, int]], width: int = 560, label_width: int = 230,
              row_height: int = 22) -> BarChart:
    """One horizontal bar per (outcome, reason), longest for the most frequent."""
    ordered = sorted(rows, key=lambda r: (_rank(r[0]), -r[2], r[1]))
    top = max((c for _, _, c in ordered), default=0) or 1
    room = width - label_width - 56  # space for the count after the bar
    bars = [Bar(o, r, c, i * row_height, max(1.0, room * c / top)) for i, (o, r, c) in enumerate(ordered)]
    return BarChart(width, max(1, len(bars)) * row_height + 4, label_width, row_height, bars,
                    sum(c for _, _, c in rows))


@dataclass(frozen=True)
class Segment:
    hour: str
    outcome: str
    count: int
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class Tick:
    value: int
    y: float


@dataclass(frozen=True)
class HourLabel:
    text: str
    x: float


@dataclass(frozen=True)
class ColumnChart:
    width: int
    height: int
    left: int
    plot_bottom: float
    segments: list[Segment]
    ticks: list[Tick]
    labels: list[HourLabel]
    total: int


def nice_ceiling(value: int) -> int:
    """The smallest of 1, 2, 5 × 10^k at or above ``value`` (axis tops people can read)."""
    if value <= 1:
        return 1
    power = 10 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 5, 10) if step * power >= value)


def hourly_columns(rows: list[tuple[str, str, int]], hours: list[str], width: int = 560, height: int = 190,
                   left: int = 40, bottom: int = 22, top: int = 8) -> ColumnChart:
    """Stacked columns, one per hour in ``hours`` (``"YYYY-MM-DD HH"``, oldest first), by outcome."""
    counts: dict[tuple[str, str], int] = {}
    for hour, outcome, n in rows:
        counts[(hour, outcome)] = counts.get((hour, outcome), 0) + n
    outcomes = _outcomes(counts)
    totals = [sum(counts.get((h, o), 0) for o in outcomes) for h in hours]
    axis_top = nice_ceiling(max(totals, default=0))
    plot_h, plot_bottom = height - bottom - top, float(height - bottom)
    slot = (width - left) / max(1, len(hours))
    segments: list[Segment] = []
    for i, hour in enumerate(hours):
        y = plot_bottom
        for outcome in outcomes:
            n = counts.get((hour, outcome), 0)
            if n:
                h = plot_h * n / axis_top
                y -= h
                segments.append(Segment(hour, outcome, n, left + i * slot + slot * 0.1, y, slot * 0.8, h))
    ticks = [Tick(v, plot_bottom - plot_h * v / axis_top) for v in sorted({0, axis_top // 2, axis_top})]
    labels = [HourLabel(h[-2:] + "h", left + i * slot + slot / 2) for i, h in enumerate(hours) if i % 3 == 0]
    return ColumnChart(width, height, left, plot_bottom, segments, ticks, labels, sum(totals))


@dataclass(frozen=True)
class Gauge:
    used: float
    """Width of the used part (spent, or active runs)."""
    held: float
    """Width of the part held but not yet used (reserved money)."""
    width: int
    percent: float | None
    """Used + held against the limit, in percent; ``None`` when unlimited."""
    over: bool


def gauge(used: float, limit: float | None, held: float = 0.0, width: int = 160) -> Gauge:
    """A bar ``width`` wide for ``used`` (+ ``held``) of ``limit``; an unlimited one shows nothing filled."""
    if limit is None or limit <= 0:
        return Gauge(0.0, 0.0, width, None, False)
    used_w = min(width, width * used / limit)
    held_w = min(width - used_w, width * held / limit)
    return Gauge(used_w, held_w, width, 100.0 * (used + held) / limit, used + held >= limit)


def _rank(outcome: str) -> int:
    return OUTCOME_ORDER.index(outcome) if outcome in OUTCOME_ORDER else len(OUTCOME_ORDER)


def _outcomes(counts: dict[tuple[str, str], int]) -> list[str]:
    return sorted({o for _, o in counts}, key=lambda o: (_rank(o), o))
