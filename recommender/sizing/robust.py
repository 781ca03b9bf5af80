"""Robust usage: impossible samples (above the ceiling, negative, isolated spikes) cannot move an estimate.

Rules, per resource of a container (docs/recommender.md "Robust estimators"); each names what it ignored in
the container's reason:
- Samples the aggregation already left out (ContainerUsage.rejected) are named with their count.
- Negative values: percentile points below zero count as zero; when negative samples were seen and the P99
  is not above zero, the container cannot be sized (the workload is skipped, its stored Recommendation
  stays, instead of floors replacing it).
- The peak (Quantiles.max, the memory "never below the peak" floor and the top of the P99..max line): a peak
  above the ceiling (the largest node's allocatable, else the configured one) is impossible and is
  replaced by the next-highest sample when known, else by the P99; a single sample more than SPIKE_FACTOR
  times the next-highest one is an isolated spike and is replaced the same way. With the next-highest
  sample known, percentile points above it (interpolated towards the ignored sample) stop at it.
- Percentile points, the mean and the per-replica steady state above the ceiling are capped at it (more
  than 1 % of impossible samples: the result is capped, never trusted past the ceiling).
- An OOM kill above the ceiling or not positive is ignored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from podsizer.api.quantity import format_human
from podsizer.plausibility import Ceilings
from recommender.model import ContainerUsage, Quantiles
from recommender.sizing.estimators import Resource

SPIKE_FACTOR = 10.0
_POINTS = ("p50", "p90", "p95", "p99", "mean")
_RULE_TEXT = {
    "negative": "negative",
    "non-finite": "non-finite",
    "above-allocatable": "above node allocatable",
}


@dataclass(frozen=True)
class RobustUsage:
    """The usage sizing may trust and what was ignored to get it (for the container's reason)."""

    usage: ContainerUsage
    notes: tuple[str, ...] = ()


def _show(resource: Resource, value: float) -> str:
    """format_human(), except that an absurd value is written short: `1e+300 cores`, not 300 digits of
    millicores."""
    text = format_human(resource, value)
    return text if len(text) <= 24 else f"{value:.3g} {'cores' if resource == 'cpu' else 'bytes'}"


def _samples(n: int) -> str:
    return f"{n} sample" if n == 1 else f"{n} samples"


def _peak(resource: Resource, q: Quantiles, ceiling: float, where: str) -> tuple[float, str | None]:
    """The robust peak: max unless it is above the ceiling or an isolated spike."""
    second = q.second_max
    fallback = second if second is not None and 0 <= second <= ceiling else min(q.p99, ceiling)
    if q.max > ceiling:
        return fallback, f"{resource} peak {_show(resource, q.max)} above {where} ignored"
    if second is not None and second > 0 and q.max > SPIKE_FACTOR * second:
        next_highest = format_human(resource, second)
        spike = f"{_show(resource, q.max)}, over {SPIKE_FACTOR:g}x the next-highest {next_highest}"
        return second, f"1 {resource} sample of {spike} ignored"
    return q.max, None


def _untouched(q: Quantiles, ceiling: float) -> bool:
    """Whether no rule changes `q` (the common case, checked first): every point finite, not negative, the
    peak within the ceiling, above every point and not an isolated spike."""
    low = q.p50 if q.min is None else min(q.min, q.p50)
    second = q.second_max
    return (
        low >= 0.0
        and max(q.p90, q.p95, q.p99, q.mean) <= q.max <= ceiling
        and min(q.p90, q.p95, q.p99, q.mean) >= 0.0
        and (second is None or 0.0 <= second <= q.max)
        and (second is None or second <= 0 or q.max <= SPIKE_FACTOR * second)
    )


def robust_quantiles(
    resource: Resource,
    q: Quantiles,
    ceiling: float,
    where: str,
    negatives_seen: bool = False,
    rejected: int = 0,
) -> tuple[Quantiles, list[str]]:
    """`q` with the rules of the module docstring applied; ValueError when nothing usable is left."""
    if not negatives_seen and _untouched(q, ceiling):
        return q, []
    return _applied(resource, q, ceiling, where, negatives_seen, rejected)


def _applied(
    resource: Resource, q: Quantiles, ceiling: float, where: str, negatives_seen: bool, rejected: int
) -> tuple[Quantiles, list[str]]:
    """Every rule of the module docstring, applied one by one."""
    values = [getattr(q, a) for a in _POINTS] + [q.max]
    if not all(math.isfinite(v) for v in values):
        if rejected:  # the aggregation left out every sample: say so (the stored Recommendation stays)
            raise ValueError(f"{resource}: no usable samples ({_samples(rejected)} rejected): not sized")
        return q, []  # finish() refuses a non-finite estimate, naming the container
    notes: list[str] = []
    negative = negatives_seen or (q.min is not None and q.min < 0) or min(values) < 0
    if negative and q.p99 <= 0:
        raise ValueError(f"{resource}: no usable samples (1 % or more negative, the rest zero): not sized")
    if min(values) < 0 or (q.min is not None and q.min < 0):
        notes.append(f"negative {resource} samples counted as zero")
    points = {a: min(max(0.0, getattr(q, a)), ceiling) for a in _POINTS}
    capped = [a for a in ("p50", "p90", "p95", "p99") if getattr(q, a) > ceiling]
    if capped:
        notes.append(f"{resource} {capped[0]} and above capped at {where} {format_human(resource, ceiling)}")
    peak, note = _peak(resource, q, ceiling, where)
    if note is not None:
        notes.append(note)
        if q.second_max is not None and peak == q.second_max:
            # no sample lies between the next-highest one and the ignored peak: points above it are
            # interpolations towards the ignored sample (few samples), so they stop at it
            points = {a: min(v, peak) for a, v in points.items()}
    peak = max(peak, points["p99"], 0.0)
    out = replace(
        q,
        **points,
        max=peak,
        second_max=None if q.second_max is None else min(max(0.0, q.second_max), peak),
        min=None if q.min is None else max(0.0, q.min),
    )
    return out, notes


def _rejected_notes(usage: ContainerUsage) -> list[str]:
    return [
        f"{_samples(r.count)} of {r.resource} {_RULE_TEXT.get(r.rule, r.rule)} ignored"
        for r in usage.rejected
        if r.count > 0
    ]


def robust_usage(usage: ContainerUsage, ceilings: Ceilings) -> RobustUsage:
    """The container's usage with impossible samples unable to move the estimate, and what was ignored."""
    where = ceilings.where
    notes = _rejected_notes(usage)
    negatives = {r.resource for r in usage.rejected if r.rule == "negative" and r.count > 0}
    count = {res: sum(r.count for r in usage.rejected if r.resource == res) for res in ("cpu", "memory")}
    cpu_ceiling, mem_ceiling = ceilings.cpu_cores, ceilings.memory_bytes
    cpu, cpu_notes = robust_quantiles(
        "cpu", usage.cpu_cores, cpu_ceiling, where, "cpu" in negatives, count["cpu"]
    )
    mem, mem_notes = robust_quantiles(
        "memory", usage.memory_bytes, mem_ceiling, where, "memory" in negatives, count["memory"]
    )
    notes += cpu_notes + mem_notes
    per_cpu = _bounded(usage.per_replica_cpu_cores, cpu_ceiling)
    per_mem = _bounded(usage.per_replica_memory_bytes, mem_ceiling)
    if (per_cpu, per_mem) != (usage.per_replica_cpu_cores, usage.per_replica_memory_bytes):
        notes.append(f"per-replica steady state bounded to 0..{where}")
    kill = usage.oom_kill_memory_bytes
    if kill is not None and not (math.isfinite(kill) and 0 < kill <= mem_ceiling):
        notes.append(f"OOM kill at {_show('memory', kill)} ignored (not within 0..{where})")
        kill = None
    if not notes:
        return RobustUsage(usage)
    fixed = replace(
        usage,
        cpu_cores=cpu,
        memory_bytes=mem,
        per_replica_cpu_cores=per_cpu,
        per_replica_memory_bytes=per_mem,
        oom_kill_memory_bytes=kill,
    )
    return RobustUsage(fixed, tuple(notes))


def _bounded(value: float, ceiling: float) -> float:
    if not math.isfinite(value):
        return value  # finish() refuses it with the container's name
    return min(max(0.0, value), ceiling)
