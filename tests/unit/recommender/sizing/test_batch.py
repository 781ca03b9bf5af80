"""Batch sizing: a CronJob's runs are one workload sized from their peaks, trusted by the number of runs."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from podsizer.api.identity import WorkloadRef
from podsizer.api.quantity import MIB, parse
from podsizer.api.resource import ContainerPolicy, Recommendation
from podsizer.settings.loader import load
from podsizer.settings.roles import RecommenderSettings
from podsizer.sizing_policy import SizingPolicy
from recommender.model import UsageSnapshot
from recommender.model.aggregate import aggregate
from recommender.model.raw import ContainerSamples, OwnerLink, PodInfo, RawDataset
from recommender.sizing.confidence import runs_confidence
from recommender.sizing.cost import PriceTable
from recommender.sizing.engine import RecommendationRun, recommend, recommend_workload

END = datetime(2026, 12, 1, tzinfo=UTC)
START = END - timedelta(days=7)
STEP = 60.0
BUSY_CORES = 2.0
PEAK_MIB = 1500.0
REPORT = WorkloadRef("batch", "CronJob", "report")
POLICY = SizingPolicy()


def _runs(count: int, *, minutes: int = 20, cron: str | None = "report", ns: str = "batch") -> Runs:
    """`count` runs, one a day: BUSY_CORES while running, memory up to PEAK_MIB; no sample between runs."""
    pods: list[PodInfo] = []
    owners: list[OwnerLink] = []
    containers: list[ContainerSamples] = []
    for i in range(count):
        t0 = START.timestamp() + (i + 1) * 86400.0
        ts = t0 + STEP * np.arange(minutes, dtype=np.float64)
        job = f"{cron}-{int(t0 // 60)}" if cron else "migrate"
        owners.append(OwnerLink(ns, "Job", job, "CronJob" if cron else "", cron or ""))
        pod = f"{job}-x{i}z9q"
        pods.append(PodInfo(ns, pod, "n1", "Job", job, requests={"main": {"cpu": 4.0, "memory": 4096 * MIB}}))
        cpu = np.full(minutes, BUSY_CORES)
        mem = np.linspace(200 * MIB, PEAK_MIB * MIB, minutes)
        containers.append(ContainerSamples(ns, pod, "main", ts, cpu, mem))
    return pods, owners, containers


Runs = tuple[list[PodInfo], list[OwnerLink], list[ContainerSamples]]


def _run(*parts: Runs, policy: SizingPolicy = POLICY) -> tuple[UsageSnapshot, RecommendationRun]:
    raw = RawDataset(
        START,
        END,
        tuple(p for part in parts for p in part[0]),
        tuple(o for part in parts for o in part[1]),
        tuple(c for part in parts for c in part[2]),
    )
    snapshot = aggregate(raw, source="test")
    return snapshot, recommend(snapshot, policy, PriceTable.for_policy(policy), END)


def _rec(recs: tuple[Recommendation, ...], target: WorkloadRef) -> Recommendation:
    (rec,) = [r for r in recs if r.target == target]
    return rec


def test_a_cronjobs_runs_are_one_workload_counted_as_runs() -> None:
    snapshot, run = _run(_runs(3))
    assert snapshot.workloads() == [REPORT]
    (usage,) = snapshot.containers
    assert (usage.runs, usage.pods, usage.samples) == (3, 3, 60)
    assert [r.target for r in run.recommendations] == [REPORT]


def test_peaks_are_not_diluted_by_the_idle_days_between_runs() -> None:
    # 3 x 20 busy minutes in a week: idle time counted as zeros would put every percentile below P99 at 0
    _, run = _run(_runs(3))
    (c,) = _rec(run.recommendations, REPORT).containers
    assert parse(c.requests["cpu"]) >= BUSY_CORES * (1 + POLICY.cpu_margin)
    assert parse(c.requests["memory"]) >= PEAK_MIB * MIB * (1 + POLICY.memory_margin)


@pytest.mark.parametrize(("runs", "expected"), [(1, 0.2), (2, 0.4), (4, 0.8), (5, 1.0), (7, 1.0)])
def test_confidence_comes_from_the_runs_seen_not_from_days_or_samples(runs: int, expected: float) -> None:
    snapshot, run = _run(_runs(runs))
    (usage,) = snapshot.containers
    assert usage.samples < POLICY.confidence_full_samples / 5  # samples alone would say "little"
    assert runs_confidence(usage, POLICY) == pytest.approx(expected)
    (c,) = _rec(run.recommendations, REPORT).containers
    assert c.confidence == pytest.approx(expected)
    assert c.low_confidence == (expected < POLICY.confidence_threshold)


def test_full_confidence_at_cronjob_full_runs_and_no_widening_there() -> None:
    _, run = _run(_runs(3), policy=SizingPolicy(cronjob_full_runs=3))
    (c,) = _rec(run.recommendations, REPORT).containers
    assert c.confidence == 1.0 and "thin history" not in c.reason
    assert parse(c.requests["cpu"]) == pytest.approx(BUSY_CORES * (1 + POLICY.cpu_margin), abs=0.001)


def test_the_reason_names_the_runs_and_the_same_usage_under_a_deployment_is_judged_by_days() -> None:
    snapshot, run = _run(_runs(4))
    rec = _rec(run.recommendations, REPORT)
    assert rec.reason.startswith("CronJob: sized from the peaks of 4 runs")
    assert "full confidence at 5 runs" in rec.reason
    (usage,) = snapshot.containers
    deployment = WorkloadRef("batch", "Deployment", "report")
    as_deployment = replace(snapshot, containers=(replace(usage, workload=deployment),))
    prices = PriceTable.for_policy(POLICY)
    dep = recommend_workload(deployment, as_deployment, POLICY, prices, END).recommendation
    assert dep.containers[0].low_confidence and not rec.containers[0].low_confidence
    assert rec.containers[0].confidence == pytest.approx(0.8)


def test_a_bare_job_is_its_own_workload_sized_from_its_one_run() -> None:
    _, run = _run(_runs(1, cron=None))
    rec = _rec(run.recommendations, WorkloadRef("batch", "Job", "migrate"))
    assert rec.reason.startswith("Job: sized from the peaks of 1 run (")
    (c,) = rec.containers
    assert c.low_confidence and "low confidence 0.20 (1 of 5 runs): not applied" in c.reason


def test_bounds_apply_to_a_cronjob_unchanged() -> None:
    snapshot, _ = _run(_runs(5))
    bounds = (ContainerPolicy("*", max_allowed={"cpu": 1.0}),)
    rec = recommend_workload(
        REPORT, snapshot, POLICY, PriceTable.for_policy(POLICY), END, bounds
    ).recommendation
    assert parse(rec.containers[0].requests["cpu"]) == 1.0


def test_cronjob_full_runs_is_a_recommender_setting() -> None:
    settings = load(RecommenderSettings, env={"PODSIZER_CRONJOB_FULL_RUNS": "3"})
    assert settings.to_sizing_policy().cronjob_full_runs == 3
    assert RecommenderSettings().cronjob_full_runs == 5
