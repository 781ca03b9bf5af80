"""Batch sizing (CronJob, Job): one workload sized from the peaks of its runs, trusted by the runs seen.

A CronJob's runs are one workload. Its pods exist only while a run is active, so the usage model holds
only samples from runs: the time between runs is a gap, never a zero, and cannot dilute a percentile.

- memory: the peak of the runs + memory_margin (a run that needs it once needs it every time), widened
  for few runs, bumped after an OOM kill, floored at memory_min_bytes.
- cpu: cpu_percentile (P99) of the runs' samples + cpu_margin, widened for few runs, floored.
- confidence: runs seen / cronjob_full_runs (a bare Job: its one run), instead of days and samples.
"""

from __future__ import annotations

from collections.abc import Sequence

from podsizer.api.identity import WorkloadRef
from podsizer.api.resource import ContainerPolicy
from podsizer.plausibility import Ceilings
from podsizer.sizing_policy import SizingPolicy
from recommender.model import ContainerUsage
from recommender.sizing import confidence as conf
from recommender.sizing.estimators import (
    Estimate,
    Estimator,
    MarginEstimator,
    MinMaxEstimator,
    OomBump,
    PercentileEstimator,
    Resource,
)
from recommender.sizing.static import ContainerSizing, bursts_of, confident, cpu_estimator, finish


def is_batch(workload: WorkloadRef) -> bool:
    return workload.kind in conf.BATCH_KINDS


def batch_cpu_estimator(policy: SizingPolicy) -> Estimator:
    """P99 of the runs' samples -> + margin -> widened for few runs -> floor cpu_min_cores: static sizing's
    CPU chain (with its burst path: bursts within runs) judged by runs."""
    return cpu_estimator(policy, conf.runs_confidence)


def batch_memory_estimator(policy: SizingPolicy) -> Estimator:
    """Peak of the runs -> + margin -> widened for few runs -> OOM bump -> floor memory_min_bytes."""
    base = MarginEstimator(PercentileEstimator("memory", 1.0), policy.memory_margin)
    bumped = OomBump(
        confident(base, policy, conf.runs_confidence), policy.oom_bump_factor, policy.oom_bump_min_bytes
    )
    return MinMaxEstimator(bumped, "memory", minimum=policy.memory_min_bytes)


def size_batch(
    usage: ContainerUsage,
    policy: SizingPolicy,
    bounds: Sequence[ContainerPolicy] = (),
    ceilings: Ceilings | None = None,
) -> ContainerSizing:
    """A batch container: the module's rules, then the same bounds, ceilings and limits as static sizing."""
    estimates: dict[Resource, Estimate] = {
        "cpu": batch_cpu_estimator(policy).explain(usage),
        "memory": batch_memory_estimator(policy).explain(usage),
    }
    trust = conf.runs_trust(usage, policy)
    return finish(
        usage, estimates, policy, bounds, ceilings=ceilings, trust=trust, bursts=bursts_of(usage, policy)
    )


def batch_reason(workload: WorkloadRef, containers: Sequence[ContainerUsage], policy: SizingPolicy) -> str:
    """'CronJob: sized from the peaks of 3 runs (memory: peak; cpu: p99 while a run was active, time
    between runs not counted; full confidence at 5 runs)'."""
    runs = max((conf.runs(c) for c in containers), default=1)
    plural = "run" if runs == 1 else "runs"
    pct = f"p{policy.cpu_percentile * 100:g}"
    return (
        f"{workload.kind}: sized from the peaks of {runs} {plural} (memory: peak; cpu: {pct} while a run "
        f"was active, time between runs not counted; full confidence at {policy.cronjob_full_runs} runs)"
    )
