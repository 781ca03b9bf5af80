"""Eviction budgets: per workload (one pod at a time, a minimum pod age, single replicas) and per cluster
(evictions per minute), as pure checks over a ledger of recent evictions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from podsizer.api import WorkloadRef
from updater.podstate import pod_age, ready

MINUTE = timedelta(minutes=1)


@dataclass(frozen=True)
class Budgets:
    """min_pod_age_seconds: a pod younger than this is not evicted; workload_cooldown_seconds: after an
    eviction, the workload's next one waits this long (its controller makes the replacement meanwhile);
    evictions_per_minute: the whole cluster's cap."""

    min_pod_age_seconds: float = 600.0
    workload_cooldown_seconds: float = 60.0
    evictions_per_minute: int = 5


@dataclass(frozen=True)
class Eviction:
    """One eviction the updater made (or, in dry-run, would have made)."""

    at: datetime
    workload: WorkloadRef
    pod: str


@dataclass(frozen=True)
class Ledger:
    """Recent evictions, newest last; `add` gives a new ledger without entries older than `keep`."""

    entries: tuple[Eviction, ...] = ()

    def add(self, eviction: Eviction, keep: timedelta) -> Ledger:
        cutoff = eviction.at - keep
        return Ledger((*(e for e in self.entries if e.at > cutoff), eviction))

    def since(self, when: datetime) -> tuple[Eviction, ...]:
        return tuple(e for e in self.entries if e.at > when)


def eviction_blocker(
    pod: Mapping[str, Any],
    workload: WorkloadRef,
    siblings: Sequence[Mapping[str, Any]],
    replicas: int | None,
    allow_single_replica: bool,
    ledger: Ledger,
    budgets: Budgets,
    now: datetime,
    pdb_allows: int | None = None,
) -> str | None:
    """Why this pod may not be evicted now (the skip reason), or None.

    `siblings`: the workload's pods, this one included; `replicas`: the workload's desired count (None:
    unknown, then the pods seen count); `pdb_allows`: the fewest disruptions the PodDisruptionBudgets covering
    the pod allow now (None: no budget covers it; the Eviction API checks again either way)."""
    count = replicas if replicas is not None else len(siblings)
    if count <= 1 and not allow_single_replica:
        return "single-replica"
    age = pod_age(pod, now)
    if age is None or age.total_seconds() < budgets.min_pod_age_seconds:
        return "pod-too-young"
    if any(not ready(s) for s in siblings):
        return "workload-disruption-in-progress"  # one pod at a time: wait for the last replacement
    cooldown = now - timedelta(seconds=budgets.workload_cooldown_seconds)
    if any(e.workload == workload for e in ledger.since(cooldown)):
        return "workload-cooldown"
    if len(ledger.since(now - MINUTE)) >= budgets.evictions_per_minute:
        return "cluster-rate-limit"
    if pdb_allows is not None and pdb_allows < 1:
        return "pdb-no-disruptions-allowed"
    return None
