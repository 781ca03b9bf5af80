"""How far to trust a container's history: a 0-1 confidence from its sample count and time span, or, for
batch workloads (CronJob, Job), from the number of runs seen; lowered by a CPU counter reset storm."""

from __future__ import annotations

from dataclasses import dataclass

from podsizer.sizing_policy import SizingPolicy
from recommender.model import ContainerUsage

SECONDS_PER_DAY = 86400.0
BATCH_KINDS = frozenset({"CronJob", "Job"})
RESET_STORM_SHARE = 0.01
"""A CPU counter resets when its container restarts (a new series) or its exporter does: more than one
reset in RESET_STORM_SHARE**-1 samples is a counter whose rates cannot be trusted."""
RESET_STORM_MIN = 3


@dataclass(frozen=True)
class Trust:
    """A container's confidence and what it was judged on ('2.1 d, 400 samples'); `text` is how it reads
    in the reason ('confidence 0.30 (2.1 d, 400 samples)')."""

    value: float
    detail: str

    @property
    def text(self) -> str:
        return f"confidence {self.value:.2f} ({self.detail})"


def history_days(usage: ContainerUsage) -> float:
    """Span of the history in days (last_seen - first_seen), never negative."""
    return max(0.0, (usage.last_seen - usage.first_seen).total_seconds() / SECONDS_PER_DAY)


def confidence(usage: ContainerUsage, policy: SizingPolicy) -> float:
    """min(span / confidence_full_days, samples / confidence_full_samples), clipped to [0, 1].

    Both must be there: many samples over one hour miss the daily cycle, and a week with a handful
    of samples misses the peaks.
    """
    span_score = history_days(usage) / policy.confidence_full_days if policy.confidence_full_days > 0 else 1.0
    sample_score = (
        usage.samples / policy.confidence_full_samples if policy.confidence_full_samples > 0 else 1.0
    )
    return max(0.0, min(1.0, span_score, sample_score))


def is_low(value: float, policy: SizingPolicy) -> bool:
    """Below confidence_threshold: the recommendation is shown but must not be applied."""
    return value < policy.confidence_threshold


def _history(usage: ContainerUsage) -> str:
    """What a long-running workload's confidence is judged on: '2.1 d, 400 samples'."""
    return f"{history_days(usage):.1f} d, {usage.samples} samples"


def reset_storm(usage: ContainerUsage) -> float:
    """The factor a CPU counter reset storm puts on confidence: 1 without one; else RESET_STORM_SHARE over
    the share of samples that were resets (a counter that resets every sample: about 0.01)."""
    if usage.cpu_resets < RESET_STORM_MIN or usage.cpu_resets <= RESET_STORM_SHARE * usage.samples:
        return 1.0
    return RESET_STORM_SHARE * max(1, usage.samples) / usage.cpu_resets


def _stormed(usage: ContainerUsage, trust: Trust) -> Trust:
    """`trust` lowered by a reset storm (reset_storm), which its detail then names."""
    factor = reset_storm(usage)
    if factor >= 1.0:
        return trust
    storm = f"cpu counter reset {usage.cpu_resets} times in {usage.samples} samples"
    return Trust(trust.value * factor, f"{trust.detail}; {storm}: its rates are not trusted")


def history_trust(usage: ContainerUsage, policy: SizingPolicy) -> Trust:
    """Long-running workloads: `confidence` (days and samples), lowered by a reset storm."""
    value = confidence(usage, policy)
    return _stormed(usage, Trust(value, _history(usage)))


def runs(usage: ContainerUsage) -> int:
    """Runs of a batch workload seen in the window: its distinct Jobs (a bare Job: its one run)."""
    return max(1, usage.runs)


def runs_confidence(usage: ContainerUsage, policy: SizingPolicy) -> float:
    """Batch workloads: runs seen / cronjob_full_runs, clipped to [0, 1]. Runs are short, so neither the
    span (the gaps between runs are no evidence) nor the sample count says how much has been seen."""
    return max(0.0, min(1.0, runs(usage) / policy.cronjob_full_runs)) if policy.cronjob_full_runs > 0 else 1.0


def runs_trust(usage: ContainerUsage, policy: SizingPolicy) -> Trust:
    """'confidence 0.40 (2 of 5 runs)'."""
    value = runs_confidence(usage, policy)
    n = runs(usage)
    return _stormed(usage, Trust(value, f"{n} of {policy.cronjob_full_runs} runs"))
