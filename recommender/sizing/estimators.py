"""VPA-like estimators: a percentile of the usage, wrapped by margin, confidence, floor and bound steps."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from podsizer.api.quantity import MIB, format_human
from recommender.model import ContainerUsage, Quantiles

Resource = Literal["cpu", "memory"]

# The points a Quantiles carries, as (probability, attribute).
QUANTILE_POINTS: tuple[tuple[float, str], ...] = (
    (0.5, "p50"),
    (0.9, "p90"),
    (0.95, "p95"),
    (0.99, "p99"),
    (1.0, "max"),
)


@dataclass(frozen=True)
class Estimate:
    """A value in base units (cores, bytes) and the steps that produced it, for the reason text."""

    value: float
    steps: tuple[str, ...] = ()


class Estimator(Protocol):
    """Turns one container's usage into a resource amount in base units."""

    def estimate(self, usage: ContainerUsage) -> float: ...

    def explain(self, usage: ContainerUsage) -> Estimate: ...


class Explained:
    """The base of every estimator: `estimate` is the value its `explain` gives."""

    def explain(self, usage: ContainerUsage) -> Estimate:
        raise NotImplementedError

    def estimate(self, usage: ContainerUsage) -> float:
        return self.explain(usage).value


def quantile_at(q: Quantiles, percentile: float) -> float:
    """Value at `percentile` (0.5-1.0), linear between the stored points p50, p90, p95, p99, max.

    Below 0.5 there is no stored point to interpolate from, so it is refused.
    """
    if not 0.5 <= percentile <= 1.0:
        raise ValueError(f"percentile must be within [0.5, 1.0], got {percentile}")
    for (p_lo, a_lo), (p_hi, a_hi) in itertools.pairwise(QUANTILE_POINTS):
        if p_lo <= percentile <= p_hi:
            lo, hi = float(getattr(q, a_lo)), float(getattr(q, a_hi))
            return lo + (hi - lo) * (percentile - p_lo) / (p_hi - p_lo)
    raise AssertionError("unreachable")  # pragma: no cover


def join_steps(steps: Sequence[str]) -> str:
    """'p99 210m + 15% margin, OOMKilled at 500Mi -> bumped to 600Mi': arithmetic steps run on."""
    out = ""
    for step in steps:
        if not out:
            out = step
        elif step.startswith(("+", "x")):
            out += f" {step}"
        else:
            out += f", {step}"
    return out


def _pct_label(percentile: float) -> str:
    return "max" if percentile >= 1.0 else f"p{percentile * 100:g}"


def samples_of(usage: ContainerUsage, resource: Resource) -> Quantiles:
    return usage.cpu_cores if resource == "cpu" else usage.memory_bytes


@dataclass(frozen=True)
class PercentileEstimator(Explained):
    """The usage distribution's value at `percentile` (0.99 = P99)."""

    resource: Resource
    percentile: float

    def explain(self, usage: ContainerUsage) -> Estimate:
        value = quantile_at(samples_of(usage, self.resource), self.percentile)
        return Estimate(value, (f"{_pct_label(self.percentile)} {format_human(self.resource, value)}",))


@dataclass(frozen=True)
class MarginEstimator(Explained):
    """inner x (1 + fraction)."""

    inner: Estimator
    fraction: float

    def explain(self, usage: ContainerUsage) -> Estimate:
        e = self.inner.explain(usage)
        if self.fraction == 0:
            return e
        return Estimate(e.value * (1.0 + self.fraction), (*e.steps, f"+ {self.fraction * 100:g}% margin"))


@dataclass(frozen=True)
class ConfidenceEstimator(Explained):
    """Widens inner when history is thin, after VPA's confidence multiplier.

    factor = ((1 + multiplier / d) / (1 + multiplier / full_days)) ** exponent, where d is the
    confidence expressed in days (confidence x full_days, at least 0.01). The factor is 1.0 at full
    confidence, grows as confidence falls, and is capped at `max_factor`.
    """

    inner: Estimator
    confidence: Callable[[ContainerUsage], float]
    full_days: float = 7.0
    multiplier: float = 1.0
    exponent: float = 1.0
    max_factor: float = 2.0

    def factor(self, usage: ContainerUsage) -> float:
        days = max(0.01, self.confidence(usage) * self.full_days)
        ratio = (1.0 + self.multiplier / days) / (1.0 + self.multiplier / self.full_days)
        raw = float(ratio**self.exponent)
        return max(1.0, min(self.max_factor, raw))

    def explain(self, usage: ContainerUsage) -> Estimate:
        e = self.inner.explain(usage)
        f = self.factor(usage)
        if f < 1.005:  # under half a percent: applied, but not worth a word in the reason
            return Estimate(e.value * f, e.steps)
        return Estimate(e.value * f, (*e.steps, f"x{f:.2f} for thin history"))


@dataclass(frozen=True)
class MinMaxEstimator(Explained):
    """inner clamped to [minimum, maximum] (either may be None)."""

    inner: Estimator
    resource: Resource
    minimum: float | None = None
    maximum: float | None = None
    label: str = "floor"

    def explain(self, usage: ContainerUsage) -> Estimate:
        e = self.inner.explain(usage)
        if self.minimum is not None and e.value < self.minimum:
            raised = f"raised to {self.label} {format_human(self.resource, self.minimum)}"
            return Estimate(self.minimum, (*e.steps, raised))
        if self.maximum is not None and e.value > self.maximum:
            capped = f"capped at {format_human(self.resource, self.maximum)}"
            return Estimate(self.maximum, (*e.steps, capped))
        return e


@dataclass(frozen=True)
class FloorAtPeak(Explained):
    """Memory: never below the observed peak (a request under the peak invites OOM kills)."""

    inner: Estimator

    def explain(self, usage: ContainerUsage) -> Estimate:
        e = self.inner.explain(usage)
        peak = usage.memory_bytes.max
        if peak > e.value:
            return Estimate(peak, (f"peak {format_human('memory', peak)} (above {join_steps(e.steps)})",))
        return e


def oom_bumped(value: float, kill: float | None, factor: float, min_bytes: float) -> Estimate | None:
    """The OOM rule of every sizing path: after a kill at `kill` bytes, memory is at least
    max(kill x factor, kill + min_bytes); that amount and its step where `value` is below it, else None
    (and None without a kill)."""
    if kill is None or kill <= 0:
        return None
    needed = max(kill * factor, kill + min_bytes)
    if needed <= value:
        return None
    return Estimate(
        needed,
        (f"OOMKilled at {format_human('memory', kill)} -> bumped to {format_human('memory', needed)}",),
    )


@dataclass(frozen=True)
class OomBump(Explained):
    """After an OOM kill: memory >= max(kill x factor, kill + min_bytes)."""

    inner: Estimator
    factor: float = 1.2
    min_bytes: float = 100 * MIB

    def explain(self, usage: ContainerUsage) -> Estimate:
        e = self.inner.explain(usage)
        kill = usage.oom_kill_memory_bytes
        if kill is None or kill <= 0:
            return e
        bumped = oom_bumped(e.value, kill, self.factor, self.min_bytes)
        if bumped is not None:
            return Estimate(bumped.value, (*e.steps, *bumped.steps))
        return Estimate(e.value, (*e.steps, f"OOMKilled at {format_human('memory', kill)}, already covered"))


def ceil_millicores(cores: float) -> float:
    """Round cores up to whole millicores (what format_cpu writes)."""
    return max(1, math.ceil(round(cores * 1000, 6))) / 1000.0


def ceil_mebibytes(bytes_: float) -> float:
    """Round bytes up to whole MiB (what format_memory writes)."""
    return float(max(1, math.ceil(round(bytes_ / MIB, 6))) * MIB)


def round_resource(resource: Resource, value: float) -> float:
    return ceil_millicores(value) if resource == "cpu" else ceil_mebibytes(value)
