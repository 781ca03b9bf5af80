"""Static sizing for workloads no horizontal autoscaler scales: history near P99 plus a safety margin."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import partial

from podsizer.api.quantity import format_human
from podsizer.api.resource import ContainerPolicy
from podsizer.bounds import clip, policy_for
from podsizer.plausibility import Ceilings, round_down
from podsizer.sizing_policy import SizingPolicy
from recommender.model import ContainerUsage
from recommender.sizing import confidence as conf
from recommender.sizing.burst import BurstAware, BurstRule, Bursts, burst_limit, burst_limit_note, detect
from recommender.sizing.estimators import (
    ConfidenceEstimator,
    Estimate,
    Estimator,
    FloorAtPeak,
    MarginEstimator,
    MinMaxEstimator,
    OomBump,
    PercentileEstimator,
    Resource,
    join_steps,
    round_resource,
)
from recommender.sizing.forecast import Feed, fed


@dataclass(frozen=True)
class ContainerSizing:
    """Requests and limits (base units) for one container, with the reason and confidence."""

    container: str
    requests: dict[str, float]
    limits: dict[str, float]
    reason: str
    confidence: float
    low_confidence: bool
    notes: tuple[str, ...] = field(default_factory=tuple)

    def formatted(self) -> tuple[dict[str, str], dict[str, str]]:
        """Requests and limits as Kubernetes quantity strings."""
        from podsizer.api.quantity import format_resource

        return (
            {k: format_resource(k, v) for k, v in self.requests.items()},
            {k: format_resource(k, v) for k, v in self.limits.items()},
        )


def confident(
    inner: Estimator,
    policy: SizingPolicy,
    judge: Callable[[ContainerUsage, SizingPolicy], float] = conf.confidence,
) -> Estimator:
    """`inner` widened for thin evidence; `judge(usage, policy)` is the confidence rule."""
    return ConfidenceEstimator(
        inner,
        partial(_judged, judge=judge, policy=policy),
        full_days=policy.confidence_full_days,
        multiplier=policy.confidence_multiplier,
        exponent=policy.confidence_exponent,
        max_factor=policy.confidence_max_widening,
    )


def _judged(
    usage: ContainerUsage, judge: Callable[[ContainerUsage, SizingPolicy], float], policy: SizingPolicy
) -> float:
    return judge(usage, policy)


def cpu_estimator(
    policy: SizingPolicy, judge: Callable[[ContainerUsage, SizingPolicy], float] = conf.confidence
) -> Estimator:
    """P99 -> + margin -> widened for thin history (`judge`) -> floor cpu_min_cores; with cpu_burst_path,
    a bursty container's request is the same chain at its sustained point (burst.py)."""
    at = partial(_cpu_chain, policy=policy, judge=judge)
    regular = at(policy.cpu_percentile)
    return BurstAware(regular, at, BurstRule.of(policy)) if policy.cpu_burst_path else regular


def _cpu_chain(
    percentile: float, policy: SizingPolicy, judge: Callable[[ContainerUsage, SizingPolicy], float]
) -> Estimator:
    base = MarginEstimator(PercentileEstimator("cpu", percentile), policy.cpu_margin)
    return MinMaxEstimator(confident(base, policy, judge), "cpu", minimum=policy.cpu_min_cores)


def bursts_of(usage: ContainerUsage, policy: SizingPolicy) -> Bursts | None:
    """The container's CPU bursts when the burst path is on and it is bursty (burst.py), else None."""
    return detect(usage.cpu_cores, BurstRule.of(policy)) if policy.cpu_burst_path else None


def memory_estimator(policy: SizingPolicy) -> Estimator:
    """P99 -> + margin -> widened -> never below the peak -> OOM bump -> floor memory_min_bytes."""
    base = MarginEstimator(PercentileEstimator("memory", policy.memory_percentile), policy.memory_margin)
    bumped = OomBump(FloorAtPeak(confident(base, policy)), policy.oom_bump_factor, policy.oom_bump_min_bytes)
    return MinMaxEstimator(bumped, "memory", minimum=policy.memory_min_bytes)


def finish(
    usage: ContainerUsage,
    estimates: dict[Resource, Estimate],
    policy: SizingPolicy,
    bounds: Sequence[ContainerPolicy],
    prefix: str = "",
    ceilings: Ceilings | None = None,
    trust: conf.Trust | None = None,
    bursts: Bursts | None = None,
) -> ContainerSizing:
    """Apply bounds, rounding, the ceilings (hard: they win over bounds) and limits to per-resource
    estimates and write the reason; `trust`: the confidence (default: days and samples); `bursts`: the
    CPU was sized at its sustained level, so a CPU limit written covers the bursts (and the reason says
    where they run)."""
    top = ceilings or policy.ceilings()
    user = policy_for(usage.container, bounds)
    requests: dict[str, float] = {}
    parts: list[str] = []
    notes: list[str] = []
    for resource, e in estimates.items():
        if not math.isfinite(e.value) or e.value < 0:
            raise ValueError(
                f"container {usage.container!r}: {resource} estimate {e.value} is not a finite amount "
                "(usage data has NaN/inf or negative values)"
            )
        clipped = clip(resource, e.value, user, usage.container)
        requests[resource], capped = _capped(resource, round_resource(resource, clipped.value), top)
        parts.append(f"{resource}: {join_steps(e.steps) or format_human(resource, e.value)}")
        if clipped.note:
            notes.append(clipped.note)
        if capped:
            notes.append(capped)
    limits: dict[str, float] = {}
    if "memory" in requests:
        limit = round_resource("memory", requests["memory"] * policy.memory_limit_factor)
        limits["memory"] = _capped("memory", limit, top)[0]
    if "cpu" in requests and policy.cpu_limit_factor is not None:
        limit = requests["cpu"] * policy.cpu_limit_factor
        limit = max(limit, burst_limit(bursts, policy)) if bursts is not None else limit
        limits["cpu"] = _capped("cpu", round_resource("cpu", limit), top)[0]
    if bursts is not None and "cpu" in requests:
        parts.insert(list(requests).index("cpu") + 1, burst_limit_note(bursts, policy, limits.get("cpu")))
    judged = trust or conf.history_trust(usage, policy)
    value = judged.value
    low = conf.is_low(value, policy)
    history = [usage.recency_note] if usage.recency_note else []  # e.g. a replaced template left out
    reason = "; ".join([p for p in [prefix] if p] + parts + history + notes)
    refused = implausible_series({r: round_resource(r, e.value) for r, e in estimates.items()}, top)
    if refused is not None:
        value, low = 0.0, True
        reason += f"; {refused}: not applied"
    elif low:
        reason += f"; low {judged.text}: not applied"
    return ContainerSizing(usage.container, requests, limits, reason, value, low, tuple(notes))


def implausible_series(estimates: Mapping[Resource, float], ceilings: Ceilings) -> str | None:
    """Why a container's series is not believed, or None: an estimate (before bounds) at or beyond its
    ceiling (the largest node's allocatable, else the configured one) is a series no container can have,
    and is refused (confidence 0, never applied) rather than recommended as the ceiling."""
    for resource, value in estimates.items():
        ceiling = ceilings.of(resource)
        if ceiling is not None and value >= float(round_down(resource, Decimal(repr(ceiling)))):
            top = format_human(resource, float(round_down(resource, Decimal(repr(ceiling)))))
            return f"implausible {resource} series: the estimate reaches {ceilings.where} {top}"
    return None


def _capped(resource: Resource, value: float, ceilings: Ceilings) -> tuple[float, str]:
    """`value` at most the resource's ceiling (rounded down to whole millicores / MiB), and why."""
    ceiling = ceilings.of(resource)
    if ceiling is None or value <= ceiling:
        return value, ""
    top = float(round_down(resource, Decimal(repr(ceiling))))
    return top, f"{resource} {format_human(resource, value)} capped at {ceilings.where} " + format_human(
        resource, top
    )


def size_static(
    usage: ContainerUsage,
    policy: SizingPolicy,
    bounds: Sequence[ContainerPolicy] = (),
    ceilings: Ceilings | None = None,
    feeds: Mapping[Resource, Feed] | None = None,
) -> ContainerSizing:
    """CPU request from P99 + margin; memory request from P99 + margin, never below the peak, bumped
    after an OOM kill; either raised by `feeds` (a certain rising trend of the workload, forecast.py);
    memory limit = request x memory_limit_factor; no CPU limit unless cpu_limit_factor is set; floors;
    then the user's bounds, which win over everything.
    """
    feeds = feeds or {}
    estimates: dict[Resource, Estimate] = {
        "cpu": fed(cpu_estimator(policy).explain(usage), feeds.get("cpu")),
        "memory": fed(memory_estimator(policy).explain(usage), feeds.get("memory")),
    }
    return finish(usage, estimates, policy, bounds, ceilings=ceilings, bursts=bursts_of(usage, policy))
