"""Real Prometheus: a CronJob's runs (kube_pod_owner -> kube_job_owner -> CronJob) are one workload, sized
from the peaks of its runs with confidence from the runs seen; a bare Job is its own workload."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from podsizer.api import Recommendation, WorkloadRef
from podsizer.api.quantity import parse
from podsizer.sizing_policy import SizingPolicy
from recommender.input.prometheus import PromClient, PrometheusSource
from recommender.model import UsageSnapshot
from recommender.sizing.cost import PriceTable
from recommender.sizing.engine import RecommendationRun, recommend

from .conftest import Served
from .history import MI, REPORT_RUN_MINUTES, REPORT_RUNS

pytestmark = pytest.mark.integration

POLICY = SizingPolicy()
REPORT = WorkloadRef("batch", "CronJob", "report")
MIGRATE = WorkloadRef("batch", "Job", "migrate")


@dataclass(frozen=True)
class Batch:
    snapshot: UsageSnapshot
    run: RecommendationRun

    def rec(self, target: WorkloadRef) -> Recommendation:
        return next(r for r in self.run.recommendations if r.target == target)


@pytest.fixture(scope="module")
def batch(served: Served) -> Iterator[Batch]:
    with PromClient(served.server.url) as client:
        snap = PrometheusSource(client, namespaces=["batch"]).collect(
            served.history.start, served.history.end
        )
    yield Batch(snap, recommend(snap, POLICY, PriceTable.for_policy(POLICY), served.history.end))


def test_every_run_of_the_cronjob_is_one_workload_and_no_job_is_skipped(batch: Batch) -> None:
    kinds = {w for w in batch.snapshot.workloads() if w.kind in ("CronJob", "Job")}
    assert kinds == {REPORT, MIGRATE}
    (report,) = [c for c in batch.snapshot.containers if c.workload == REPORT]
    assert (report.runs, report.pods) == (REPORT_RUNS, REPORT_RUNS)
    subjects = [str(s.subject) for s in batch.snapshot.skipped]
    assert not [s for s in subjects if "/pod/report-" in s or "migrate" in s]


def test_the_runs_usage_holds_only_the_runs_samples_so_the_median_is_the_busy_level(batch: Batch) -> None:
    (report,) = [c for c in batch.snapshot.containers if c.workload == REPORT]
    # 1.5 busy cores for 30 minutes a day on 4 days; idle time between runs would put the median at 0
    assert report.samples <= REPORT_RUNS * REPORT_RUN_MINUTES
    assert 1.4 <= report.cpu_cores.p50 <= 1.6
    assert report.memory_bytes.max == pytest.approx(900 * MI, rel=0.01)


def test_the_cronjob_is_sized_from_the_peaks_of_its_runs_with_runs_based_confidence(batch: Batch) -> None:
    rec = batch.rec(REPORT)
    assert rec.reason.startswith(f"CronJob: sized from the peaks of {REPORT_RUNS} runs")
    (c,) = rec.containers
    assert c.confidence == pytest.approx(REPORT_RUNS / POLICY.cronjob_full_runs)
    assert not c.low_confidence
    widening = (1 + 1 / (c.confidence * 7)) / (1 + 1 / 7)  # VPA-style, 4 of 5 runs
    assert 1.45 * 1.15 * widening <= parse(c.requests["cpu"]) <= 1.65 * 1.15 * widening
    memory = parse(c.requests["memory"])
    assert 900 * MI * 1.15 * widening <= memory <= 910 * MI * 1.15 * widening + MI


def test_a_bare_job_is_its_own_workload_with_its_one_run_low_confidence(batch: Batch) -> None:
    rec = batch.rec(MIGRATE)
    assert rec.reason.startswith("Job: sized from the peaks of 1 run")
    (c,) = rec.containers
    assert c.confidence == pytest.approx(1 / POLICY.cronjob_full_runs) and c.low_confidence
    assert "(1 of 5 runs): not applied" in c.reason
