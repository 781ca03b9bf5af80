"""Scoring recommendations against the evaluation days: risk (minutes above request/limit) and cost."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from recommender.model import FloatArray

GIB = 2.0**30
CORE_PRICE_IN_GIB = 8.0
"""Cost weight for the per-pattern winner: one core costs as much as 8 GiB (the usual cloud price ratio)."""
SAFE_CPU_SHARE = 0.015
"""A pattern counts as safely sized when at most 1.5 % of its pod-minutes use more CPU than requested (a p99
target plus sampling noise) and no minute uses more memory than the limit."""


@dataclass(frozen=True)
class Sizing:
    """What a tool asks for one container; with no memory limit, use above the request is the risk."""

    cpu_request: float
    memory_request: float
    memory_limit: float | None = None

    @property
    def memory_ceiling(self) -> float:
        return self.memory_limit if self.memory_limit is not None else self.memory_request


@dataclass(frozen=True)
class Score:
    """One container's evaluation: pod-minutes above request/limit, and the time-averaged amounts."""

    pod_minutes: int
    cpu_over: int
    memory_over: int
    cpu_requested: float
    memory_requested: float
    cpu_used: float
    memory_used: float

    @property
    def cpu_over_share(self) -> float:
        return self.cpu_over / self.pod_minutes if self.pod_minutes else 0.0

    @property
    def cpu_slack(self) -> float:
        return self.cpu_requested - self.cpu_used

    @property
    def memory_slack(self) -> float:
        return self.memory_requested - self.memory_used


def score(cpu: Sequence[FloatArray], memory: Sequence[FloatArray], sizing: Sizing, minutes: int) -> Score:
    """Per-pod per-minute use over the evaluation window (`minutes` long) against one sizing.

    Requested and used are averages over the window of the sum over live pods (cores, bytes), so a
    workload with more replicas reserves more; a minute counts once per pod that lives in it."""
    pod_minutes = sum(c.size for c in cpu)
    cpu_all = np.concatenate(list(cpu)) if cpu else np.zeros(0)
    mem_all = np.concatenate(list(memory)) if memory else np.zeros(0)
    return Score(
        pod_minutes,
        int(np.count_nonzero(cpu_all > sizing.cpu_request)),
        int(np.count_nonzero(mem_all > sizing.memory_ceiling)),
        sizing.cpu_request * pod_minutes / minutes,
        sizing.memory_request * pod_minutes / minutes,
        float(cpu_all.sum()) / minutes,
        float(mem_all.sum()) / minutes,
    )


@dataclass(frozen=True)
class Total:
    """A tool over every container: the figures of the Pareto table."""

    containers: int
    mean_cpu_over_share: float
    pooled_cpu_over_share: float
    oom_containers: int
    memory_over_minutes: int
    cpu_requested: float
    memory_requested: float
    cpu_slack: float
    memory_slack: float

    def cost(self) -> float:
        return self.cpu_requested * CORE_PRICE_IN_GIB + self.memory_requested / GIB


def total(scores: Sequence[Score]) -> Total:
    pod_minutes = sum(s.pod_minutes for s in scores)
    return Total(
        len(scores),
        float(np.mean([s.cpu_over_share for s in scores])) if scores else 0.0,
        sum(s.cpu_over for s in scores) / pod_minutes if pod_minutes else 0.0,
        sum(1 for s in scores if s.memory_over > 0),
        sum(s.memory_over for s in scores),
        sum(s.cpu_requested for s in scores),
        sum(s.memory_requested for s in scores),
        sum(s.cpu_slack for s in scores),
        sum(s.memory_slack for s in scores),
    )


def _axes(t: Total) -> tuple[float, ...]:
    """Lower is better on every axis: CPU risk, memory risk, CPU and memory requested."""
    return (
        t.mean_cpu_over_share,
        t.oom_containers,
        t.memory_over_minutes,
        t.cpu_requested,
        t.memory_requested,
    )


def dominates(a: Total, b: Total) -> bool:
    """a is no worse than b on every axis and better on at least one."""
    pa, pb = _axes(a), _axes(b)
    return all(x <= y for x, y in zip(pa, pb, strict=True)) and any(
        x < y for x, y in zip(pa, pb, strict=True)
    )


def dominated_by(totals: Mapping[str, Total]) -> dict[str, list[str]]:
    """For each tool, the tools that dominate it (empty: on the Pareto front)."""
    return {
        name: [o for o, ot in totals.items() if o != name and dominates(ot, t)] for name, t in totals.items()
    }


def safe(t: Total) -> bool:
    return t.memory_over_minutes == 0 and t.pooled_cpu_over_share <= SAFE_CPU_SHARE


def winner(totals: Mapping[str, Total]) -> str:
    """The cheapest safe tool; when none is safe, the least risky (memory first, then CPU), then cheapest."""
    valid = {
        n: t
        for n, t in totals.items()
        if math.isfinite(t.cpu_requested) and math.isfinite(t.memory_requested)
    }
    if not valid:
        return "-"
    safe_ones = [n for n, t in valid.items() if safe(t)]
    if safe_ones:
        return min(safe_ones, key=lambda n: (valid[n].cost(), n))
    return min(
        valid,
        key=lambda n: (valid[n].memory_over_minutes, valid[n].pooled_cpu_over_share, valid[n].cost(), n),
    )
