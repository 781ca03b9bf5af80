"""Recurring peaks survive recency: the one rule for how far the age decay may lower a container's CPU
percentiles, read alike from raw samples (aggregate) and from usage states (recommender.incremental).

Recency weighs the last day most (recommender.model.recency), so a busier day earlier in the window
counts for little: right for what stopped (a step down, a falling trend), wrong for what recurs (a weekly
heavy day, busy weekdays before a quiet weekend). From per-day summaries of the container's running
templates (DayUsage: each UTC day's p50, p90, p95 and p99) the rule tells them apart:

- A day whose weekday a week later has been seen (a whole day of it, MIN_HOURS hours with samples) had its
  chance to recur: if it did, that later day speaks for it; if not, it stopped and recency discounts it.
- Every other day may still recur (a weekly cycle cannot be ruled out with less than a week after it):
  it counts as the peak of a cycle that is present (the same weekday a week earlier was as busy, within
  SAME_LEVEL) or cannot be ruled out.
- Days with samples in fewer than MIN_HOURS hours (a partial first day, a pod started at the end) are too
  thin to speak for a day.

A day counts as busier when its p99 is above the recency-weighted p99 by more than DAY_NOISE (days of a
steady workload differ by that much by chance). The CPU points (p50 .. p99) are then each at least the
same point of the busiest such day (the largest over those days, point by point): a request sized from
them covers the busiest day of a possible weekly cycle as the profile's percentile covers a day. The
result is never more than DAY_NOISE below an undecayed percentile of those days (a mixture's quantile is
at most its largest component's), which every profile's margin (5 % or more) covers. The maximum, the
mean and memory are not touched (memory is floored at its peak anyway). Without decay (half-life off)
every sample already weighs alike and the rule changes nothing. The note says which day decided and why.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import NamedTuple

from recommender.model import Quantiles
from recommender.model.recency import Recency

DAY_S = 86400.0
CYCLE_DAYS = 7
"""The longest cycle the usage model knows (the forecast's day-of-week terms): a week."""
MIN_HOURS = 12
"""A day speaks for itself with samples in at least this many of its hours (the forecast's daily peaks)."""
SAME_LEVEL = 0.8
"""A day a week earlier at least this share of the busiest day's p99 shows the cycle is present."""
DAY_NOISE = 0.05
"""A day is busier than the recency-weighted figures when its p99 is above theirs by more than this share
(the spread of a steady workload's daily p99s; well above the 2 % the two reading paths may differ by)."""
POINTS = ("p50", "p90", "p95", "p99")


class DayUsage(NamedTuple):
    """One UTC day of a container's CPU samples (its running templates' pods pooled); a named tuple: a
    cycle makes one per container and day."""

    day: int
    """Days since the epoch (UTC)."""
    hours: int
    """Hours of the day with at least one sample."""
    points: tuple[float, float, float, float]
    """p50, p90, p95, p99 of the day's samples."""

    @property
    def p99(self) -> float:
        return self.points[3]


@dataclass(frozen=True)
class Recurrence:
    """The rule's outcome: the CPU quantiles sizing reads, and the words for the reason ("" when the
    rule changed nothing worth saying)."""

    cpu: Quantiles
    note: str = ""


def _date(day: int) -> str:
    return datetime.fromtimestamp(day * DAY_S, UTC).strftime("%a %Y-%m-%d")


def _fmt(cores: float) -> str:
    return f"{cores * 1000:.0f}m"


def recurring(decayed: Quantiles, days: Sequence[DayUsage], recency: Recency) -> Recurrence:
    """The CPU quantiles with recurring peaks kept (module docstring): `decayed` are the ones weighted by
    `recency`, `days` the per-day summaries of the same samples (any order; days of one container; a day
    may come once per running template)."""
    full = [d for d in days if d.hours >= MIN_HOURS and all(map(math.isfinite, d.points))]
    if not recency.decays or not full or not all(math.isfinite(getattr(decayed, p)) for p in POINTS):
        return Recurrence(decayed)
    seen_again = {d.day - CYCLE_DAYS for d in full}
    recent = [d for d in full if d.day not in seen_again]
    stopped = [d for d in full if d.day in seen_again]
    note = _stopped_note(decayed, recent, stopped)
    busier = [d for d in recent if d.p99 > decayed.p99 * (1.0 + DAY_NOISE)]
    if not busier:
        return Recurrence(decayed, note)
    points = [getattr(decayed, p) for p in POINTS]
    for i in range(len(POINTS)):
        points[i] = max(points[i], *(d.points[i] for d in busier), *points[:i])  # and never below a lower one
    kept = replace(decayed, **dict(zip(POINTS, points, strict=True)))
    kept = replace(kept, max=max(kept.max, kept.p99))
    note = "; ".join(x for x in (_kept_note(decayed, busier, full), note) if x)
    return Recurrence(kept, note)


def _kept_note(decayed: Quantiles, recent: Sequence[DayUsage], full: Sequence[DayUsage]) -> str:
    busiest = max(recent, key=lambda d: d.p99)
    earlier = next((d for d in full if d.day == busiest.day - CYCLE_DAYS), None)
    if earlier is not None and earlier.p99 >= SAME_LEVEL * busiest.p99:
        why = f"a weekly cycle is present ({_date(earlier.day)} was as busy)"
    elif earlier is not None:
        why = f"a weekly cycle cannot be ruled out ({_date(earlier.day)} was quieter: new this week)"
    else:
        why = f"a weekly cycle cannot be ruled out in {len(full)} days of history"
    return (
        f"cpu percentiles kept at the busiest day's, {_date(busiest.day)} (p99 {_fmt(busiest.p99)}; "
        f"recency-weighted p99 {_fmt(decayed.p99)}): {why}, so recency does not discount it"
    )


def _stopped_note(decayed: Quantiles, recent: Sequence[DayUsage], stopped: Sequence[DayUsage]) -> str:
    if not stopped:
        return ""
    top = max(stopped, key=lambda d: d.p99)
    level = max([decayed.p99, *(d.p99 for d in recent)])
    if top.p99 <= level * (1.0 + DAY_NOISE):
        return ""
    return (
        f"busier days up to {_date(max(d.day for d in stopped))} (p99 up to {_fmt(top.p99)}) did not "
        f"recur within a week: recency discounts them"
    )
