"""Eviction budgets: single replica, minimum age, one pod at a time per workload, cluster rate."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from podsizer.api import WorkloadRef
from tests.unit.updater.builders import NOW, WEB, pod
from updater.budget import Budgets, Eviction, Ledger, eviction_blocker

BUDGETS = Budgets(min_pod_age_seconds=600, workload_cooldown_seconds=60, evictions_per_minute=2)


def _blocker(
    p: dict[str, Any] | None = None,
    siblings: list[dict[str, Any]] | None = None,
    replicas: int | None = 3,
    allow: bool = False,
    ledger: Ledger | None = None,
) -> str | None:
    p = p or pod()
    return eviction_blocker(p, WEB, siblings or [p], replicas, allow, ledger or Ledger(), BUDGETS, NOW)


def test_a_healthy_old_pod_of_a_three_replica_workload_may_be_evicted() -> None:
    assert _blocker() is None


def test_single_replica_blocks_unless_allowed() -> None:
    assert _blocker(replicas=1) == "single-replica"
    assert _blocker(replicas=1, allow=True) is None


def test_unknown_replicas_count_the_pods_seen() -> None:
    assert _blocker(replicas=None) == "single-replica"
    assert _blocker(replicas=None, siblings=[pod("a"), pod("b")]) is None


def test_a_pod_younger_than_the_minimum_age_is_not_evicted() -> None:
    assert _blocker(pod(age=timedelta(minutes=5))) == "pod-too-young"


def test_one_pod_at_a_time_a_not_ready_sibling_blocks() -> None:
    me = pod("a")
    assert _blocker(me, siblings=[me, pod("b", ready=False)]) == "workload-disruption-in-progress"


def test_a_recent_eviction_of_the_same_workload_blocks_until_the_cooldown() -> None:
    recent = Ledger((Eviction(NOW - timedelta(seconds=30), WEB, "web-x"),))
    older = Ledger((Eviction(NOW - timedelta(seconds=90), WEB, "web-x"),))
    assert _blocker(ledger=recent) == "workload-cooldown"
    assert _blocker(ledger=older) is None


def test_the_cluster_rate_counts_every_workload_in_the_last_minute() -> None:
    others = tuple(
        Eviction(NOW - timedelta(seconds=s), WorkloadRef("shop", "Deployment", f"w{s}"), "p")
        for s in (10, 20)
    )
    assert _blocker(ledger=Ledger(others)) == "cluster-rate-limit"
    assert _blocker(ledger=Ledger(others[:1])) is None


def test_the_ledger_drops_entries_older_than_it_keeps() -> None:
    ledger = Ledger((Eviction(NOW - timedelta(minutes=5), WEB, "old"),))
    added = ledger.add(Eviction(NOW, WEB, "new"), timedelta(minutes=1))
    assert [e.pod for e in added.entries] == ["new"]
