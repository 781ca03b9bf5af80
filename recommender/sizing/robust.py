"""Robust usage: impossible samples (above the ceiling, negative, isolated spikes) cannot move an estimate.

Rules, per resource of a container (docs/recommender.md "Robust estimators"); each names what it ignored in
the container's reason:
- Samples the aggregation already left out (ContainerUsage.rejected) are named with their count.
- Negative values: percentile points below zero count as zero; when negative samples were seen and the P99
  is not above zero, the container cannot be sized (the workload is skipped, its stored Recommendation
  stays, instead of floors replacing it).
- The peak (Quantiles.max, the memory "never below the peak" floor and the top of the P99..max line): a
  peak above the ceiling (the largest node's allocatable, else the configured one) is impossible and is
  replaced by the next-highest possible sample when known, else by the P99. A peak must be corroborated:
  it counts when at least CORROBORATING_SAMPLES (3) samples, at distinct times, reach 1/SPIKE_FACTOR of
  it, that is when it is at most SPIKE_FACTOR times the third-highest sample; the one or two samples above
  that are ignored and the peak is the highest sample that is (one or two bad scrapes among thousands
  move nothing: k <= 2 such samples raise the peak to at most SPIKE_FACTOR x the highest genuine one).
  The rule waits for evidence: it applies when the third-highest sample is known and the samples are at
  least MIN_SAMPLES_PER_SPIKE per ignored one (a few-minute Job's profile is its profile); a memory peak of
  a container OOM-killed in the window is corroborated by the kill. Percentile points above the peak
  (interpolated towards an ignored sample) stop at it.
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
CORROBORATING_SAMPLES = 3
MIN_SAMPLES_PER_SPIKE = 100
"""An ignored sample must be at most 1 % of the container's samples: it then lies above the P99."""
_POINTS = ("p50", "p90", "p95", "p99", "mean")
_RULE_TEXT = {
    "negative": "negative",
    "non-finite": "non-finite",
    "above-allocatable": "above node allocatable",
    "above-limit": "above the container's memory limit",
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


@dataclass(frozen=True)
class Evidence:
    """What may corroborate a peak beyond the samples themselves: their count, and for memory whether the
    container was OOM-killed in the window (the kill shows the working set reached its limit)."""

    samples: int = 0
    oom_killed: bool = False


NO_EVIDENCE = Evidence()


def _possible_tops(q: Quantiles, ceiling: float) -> list[float]:
    """The known highest samples (max, second, third) that are finite and within 0..ceiling, highest
    first: the highest possible ones (impossible samples are above every possible one)."""
    known = [v for v in (q.max, q.second_max, q.third_max) if v is not None]
    return [v for v in known if math.isfinite(v) and 0 <= v <= ceiling]


def _uncorroborated(tops: list[float], evidence: Evidence) -> int:
    """How many of the highest samples (0, 1 or 2) fewer than CORROBORATING_SAMPLES samples reach
    1/SPIKE_FACTOR of (module docstring). Counted only where the known samples prove it (one of them falls
    short, so no unknown lower one reaches either), and 0 where the rule must not apply."""
    if evidence.oom_killed:
        return 0
    ignored = 0
    for value in tops[: CORROBORATING_SAMPLES - 1]:
        reaching = sum(1 for v in tops if v >= value / SPIKE_FACTOR)
        if reaching == len(tops) or reaching >= CORROBORATING_SAMPLES:
            break
        ignored += 1
    return ignored if evidence.samples >= ignored * MIN_SAMPLES_PER_SPIKE else 0


def _peak(
    resource: Resource, q: Quantiles, ceiling: float, where: str, evidence: Evidence
) -> tuple[float, str | None]:
    """The robust peak: the highest possible, corroborated sample (module docstring), and what was
    ignored to reach it."""
    tops = _possible_tops(q, ceiling)
    notes = [f"{resource} peak {_show(resource, q.max)} above {where} ignored"] if q.max > ceiling else []
    ignored = _uncorroborated(tops, evidence)
    if ignored:
        values = " and ".join(_show(resource, v) for v in tops[:ignored])
        why = f"fewer than {CORROBORATING_SAMPLES} samples reach 1/{SPIKE_FACTOR:g} of it: not corroborated"
        after = format_human(resource, tops[ignored])
        notes.append(f"{resource} peak {values} ignored ({_samples(ignored)}, {why}); peak {after}")
    if not notes:
        return q.max, None
    return (tops[ignored] if tops else min(q.p99, ceiling)), "; ".join(notes)


def _untouched(q: Quantiles, ceiling: float, evidence: Evidence) -> bool:
    """Whether no rule changes `q` (the common case, checked first): every point finite, not negative, the
    peak within the ceiling, above every point and corroborated."""
    low = q.p50 if q.min is None else min(q.min, q.p50)
    known = [v for v in (q.second_max, q.third_max) if v is not None]
    return (
        low >= 0.0
        and max(q.p90, q.p95, q.p99, q.mean) <= q.max <= ceiling
        and min(q.p90, q.p95, q.p99, q.mean) >= 0.0
        and all(0.0 <= v <= q.max for v in known)
        and _uncorroborated(_possible_tops(q, ceiling), evidence) == 0
    )


def robust_quantiles(
    resource: Resource,
    q: Quantiles,
    ceiling: float,
    where: str,
    negatives_seen: bool = False,
    rejected: str = "",
    evidence: Evidence = NO_EVIDENCE,
) -> tuple[Quantiles, list[str]]:
    """`q` with the rules of the module docstring applied; ValueError when nothing usable is left, naming
    `rejected` (what the aggregation left out: "576 samples above the container's memory limit")."""
    if not negatives_seen and _untouched(q, ceiling, evidence):
        return q, []
    return _applied(resource, q, (ceiling, where), negatives_seen, rejected, evidence)


def _applied(
    resource: Resource,
    q: Quantiles,
    limit: tuple[float, str],
    negatives_seen: bool,
    rejected: str,
    evidence: Evidence = NO_EVIDENCE,
) -> tuple[Quantiles, list[str]]:
    """Every rule of the module docstring, applied one by one; `limit`: the ceiling and where it is from."""
    ceiling, where = limit
    values = [getattr(q, a) for a in _POINTS] + [q.max]
    if not all(math.isfinite(v) for v in values):
        if rejected:  # the aggregation left out every sample: say so (the stored Recommendation stays)
            raise ValueError(f"{resource}: no usable samples ({rejected} rejected): not sized")
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
    peak, note = _peak(resource, q, ceiling, where, evidence)
    if note is not None:
        notes.append(note)
        if peak in (q.second_max, q.third_max):
            # no sample lies between this one and the ignored ones: points above it are interpolations
            # towards an ignored sample (few samples), so they stop at it
            points = {a: min(v, peak) for a, v in points.items()}
    peak = max(peak, points["p99"], 0.0)
    out = replace(
        q,
        **points,
        max=peak,
        second_max=_at_most(q.second_max, peak),
        third_max=_at_most(q.third_max, peak),
        min=None if q.min is None else max(0.0, q.min),
    )
    return out, notes


def _at_most(value: float | None, peak: float) -> float | None:
    return None if value is None else min(max(0.0, value), peak)


def _rejected_text(usage: ContainerUsage, resource: str) -> str:
    """The samples of `resource` the aggregation left out, by rule ("" when none)."""
    return ", ".join(
        f"{_samples(r.count)} {_RULE_TEXT.get(r.rule, r.rule)}"
        for r in usage.rejected
        if r.resource == resource and r.count > 0
    )


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
    count = {res: _rejected_text(usage, res) for res in ("cpu", "memory")}
    cpu_ceiling, mem_ceiling = ceilings.cpu_cores, ceilings.memory_bytes
    kill, kill_note = _oom_kill(usage.oom_kill_memory_bytes, mem_ceiling, where)
    seen = Evidence(usage.samples)
    cpu, cpu_notes = robust_quantiles(
        "cpu", usage.cpu_cores, cpu_ceiling, where, "cpu" in negatives, count["cpu"], seen
    )
    killed = Evidence(usage.samples, oom_killed=kill is not None)
    mem, mem_notes = robust_quantiles(
        "memory", usage.memory_bytes, mem_ceiling, where, "memory" in negatives, count["memory"], killed
    )
    notes += cpu_notes + mem_notes
    per_cpu = _bounded(usage.per_replica_cpu_cores, cpu_ceiling)
    per_mem = _bounded(usage.per_replica_memory_bytes, mem_ceiling)
    if (per_cpu, per_mem) != (usage.per_replica_cpu_cores, usage.per_replica_memory_bytes):
        notes.append(f"per-replica steady state bounded to 0..{where}")
    if kill_note:
        notes.append(kill_note)
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


def _oom_kill(kill: float | None, ceiling: float, where: str) -> tuple[float | None, str]:
    """The OOM kill's working set when within 0..ceiling, else None and why it was ignored."""
    if kill is None or (math.isfinite(kill) and 0 < kill <= ceiling):
        return kill, ""
    return None, f"OOM kill at {_show('memory', kill)} ignored (not within 0..{where})"


def _bounded(value: float, ceiling: float) -> float:
    if not math.isfinite(value):
        return value  # finish() refuses it with the container's name
    return min(max(0.0, value), ceiling)
