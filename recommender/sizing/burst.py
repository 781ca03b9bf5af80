"""The burst path: bursty CPU is requested at its sustained level; the bursts run above the request.

Rule (docs/recommender.md "Burst path"), on a container's CPU distribution (Quantiles: p50, p90, p95, p99,
max), with ratio, max_share and min_cores from the policy (cpu_burst_*):
- candidates for the sustained level: the stored points that leave at most max_share of the time above
  them (p95, and p90 with the default 0.10), highest first;
- the sustained level is the first candidate S with a peak far above it: p99 >= ratio x S and
  p99 - S >= min_cores; the container is bursty when there is one (a daily cycle or a plateau has its
  p99 within a few times its p90, a batch worker idling between bursts a hundred times);
- burst threshold = ratio x S; the expected burst time is the share of the time above it, 1 - F(threshold),
  F the distribution interpolated linearly between the stored points (at most 1 - S's percentile);
- the request is S through the same margin / thin-history / floor chain as any CPU estimate.
A container that is not bursty keeps the regular estimate. The bursts themselves (p99, max) then run on
the node's headroom, or under a CPU limit that covers them (cpu_limit_factor set: limit >= p99 + margin).
Memory is never sized from this path: it stays at or above its peak (memory bursts get OOM-killed).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from podsizer.api.quantity import format_human
from podsizer.sizing_policy import SizingPolicy
from recommender.model import ContainerUsage, Quantiles
from recommender.sizing.estimators import QUANTILE_POINTS, Estimate, Estimator, Explained

_SUSTAINED = ((0.95, "p95"), (0.9, "p90"), (0.5, "p50"))  # sustained-level candidates, highest first


@dataclass(frozen=True)
class BurstRule:
    """When CPU use counts as bursty (cpu_burst_ratio, cpu_burst_max_share, cpu_burst_min_cores)."""

    ratio: float = 4.0
    max_share: float = 0.1
    min_cores: float = 0.1

    @staticmethod
    def of(policy: SizingPolicy) -> BurstRule:
        return BurstRule(policy.cpu_burst_ratio, policy.cpu_burst_max_share, policy.cpu_burst_min_cores)


@dataclass(frozen=True)
class Bursts:
    """A bursty container's CPU: the sustained point, the burst threshold, the bursts' p99 and time share."""

    sustained_percentile: float
    sustained: float
    threshold: float
    peak: float
    share: float

    @property
    def label(self) -> str:
        return f"p{self.sustained_percentile * 100:g}"

    @property
    def hours_a_day(self) -> float:
        return 24.0 * self.share

    def text(self) -> str:
        """'bursty: above 80m ~9.9 % of the time (~2.4 h a day) up to p99 2184m, request at the sustained'
        (the sustained point's step follows)."""
        return (
            f"bursty: above {format_human('cpu', self.threshold)} ~{100 * self.share:.1f} % of the time "
            f"(~{self.hours_a_day:.1f} h a day) up to p99 {format_human('cpu', self.peak)}, "
            "request at the sustained"
        )


def share_above(q: Quantiles, value: float) -> float:
    """Estimated share of samples above `value`: 1 - F(value), F linear between the stored points (at most
    0.5 at or below the median: the stored points tell nothing finer below it)."""
    if value < q.p50:
        return 0.5
    for (p_lo, a_lo), (p_hi, a_hi) in itertools.pairwise(QUANTILE_POINTS):
        lo, hi = float(getattr(q, a_lo)), float(getattr(q, a_hi))
        if value <= hi:
            f = p_hi if hi <= lo else p_lo + (p_hi - p_lo) * (value - lo) / (hi - lo)
            return 1.0 - f
    return 0.0


def detect(q: Quantiles, rule: BurstRule) -> Bursts | None:
    """The bursts of a CPU distribution per the module's rule, or None when it is not bursty."""
    for pct, name in _SUSTAINED:
        level = float(getattr(q, name))
        if 1.0 - pct > rule.max_share + 1e-9:
            break
        if level <= 0 or q.p99 < rule.ratio * level or q.p99 - level < rule.min_cores:
            continue
        threshold = rule.ratio * level
        return Bursts(pct, level, threshold, q.p99, min(share_above(q, threshold), 1.0 - pct))
    return None


@dataclass(frozen=True)
class BurstAware(Explained):
    """CPU: `regular` for a container that is not bursty; else `at(sustained percentile)`, its reason
    starting with the bursts found (share of time, expected hours a day)."""

    regular: Estimator
    at: Callable[[float], Estimator]
    rule: BurstRule

    def explain(self, usage: ContainerUsage) -> Estimate:
        bursts = detect(usage.cpu_cores, self.rule)
        if bursts is None:
            return self.regular.explain(usage)
        e = self.at(bursts.sustained_percentile).explain(usage)
        first = f"{bursts.text()} {e.steps[0]}" if e.steps else bursts.text()
        return Estimate(e.value, (first, *e.steps[1:]))


def burst_limit_note(bursts: Bursts, policy: SizingPolicy, limit: float | None) -> str:
    """Where the bursts go: under the CPU limit written, or on the node's headroom (no CPU limit)."""
    if limit is not None:
        return (
            f"CPU limit {format_human('cpu', limit)} covers the bursts "
            f"(p99 + {policy.cpu_margin * 100:g}% margin)"
        )
    return (
        f"no CPU limit: bursts to {format_human('cpu', bursts.peak)} run on node headroom "
        "(a CPU limit kept by limit-policy keep-ratio would throttle them)"
    )


def burst_limit(bursts: Bursts, policy: SizingPolicy) -> float:
    """The least CPU limit that covers the bursts: their p99 plus the CPU margin."""
    return bursts.peak * (1.0 + policy.cpu_margin)
