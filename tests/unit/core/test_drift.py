"""Recommender, webhook and console apply the same bounds and modes, in the cases where they once drifted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from console.build import build_console_data
from podsizer.api import ContainerPolicy, WorkloadRef
from podsizer.api.quantity import MIB
from podsizer.policy import PlanPolicy
from podsizer.sizing_policy import SizingPolicy
from recommender.model import ContainerUsage, Quantiles
from recommender.model.aggregate import aggregate
from recommender.model.raw import ContainerSamples, OwnerLink, PodInfo, RawDataset
from recommender.sizing.engine import RecommendationRun
from recommender.sizing.static import size_static
from tests.unit.webhook.builders import (
    admitter,
    apply_reply,
    container,
    crec,
    recommendation,
    replicaset_pod,
    resources_of,
    review,
)

T0 = datetime(2026, 11, 1, tzinfo=UTC)
# VPA's rule: "main" has its own entry, so only that entry applies to it (no cpu maximum); never merged.
BOUNDS = (
    ContainerPolicy("*", max_allowed={"cpu": 1.0}),
    ContainerPolicy("main", min_allowed={"cpu": 0.5}),
)


def _usage(cores: float) -> ContainerUsage:
    cpu = np.full(20160, cores)
    mem = np.full(20160, 256.0 * MIB)
    return ContainerUsage(
        workload=WorkloadRef("shop", "Deployment", "web"),
        container="main",
        cpu_cores=Quantiles.of(cpu),
        memory_bytes=Quantiles.of(mem),
        per_replica_cpu_cores=cores,
        per_replica_memory_bytes=256.0 * MIB,
        samples=cpu.size,
        first_seen=T0,
        last_seen=T0 + timedelta(days=7),
    )


def test_bounds_recommender_sizing_keeps_two_cores_under_the_vpa_rule() -> None:
    unbounded = size_static(_usage(1.75), SizingPolicy(), ())
    bounded = size_static(_usage(1.75), SizingPolicy(), BOUNDS)
    assert unbounded.requests["cpu"] >= 2.0  # the sizing wants at least 2 cores
    assert bounded.requests["cpu"] == unbounded.requests["cpu"]  # "*" maxAllowed 1 does not apply to main


def test_bounds_webhook_patch_gives_two_cores_under_the_vpa_rule() -> None:
    rec = recommendation(containers=[crec("main", {"cpu": "2", "memory": "512Mi"})], policy=BOUNDS)
    pod = replicaset_pod(containers=[container("main", {"cpu": "500m", "memory": "512Mi"})])
    reply, decision = admitter(rec, default_mode="auto").review(review(pod))
    assert decision.outcome == "applied"
    assert resources_of(apply_reply(pod, reply), "main")["requests"]["cpu"] == "2000m"


def workload_mode(labels: dict[str, str], annotations: dict[str, str]) -> tuple[str, str]:
    """The console's mode (and its source) for Deployment shop/web whose pod carries this metadata."""
    pod = PodInfo("shop", "web-6d4f-x1", "n", "ReplicaSet", "web-6d4f", labels, annotations, {"main": {}})
    samples = ContainerSamples("shop", pod.name, "main", np.array([T0.timestamp()]), np.ones(1), np.ones(1))
    owner = OwnerLink("shop", "ReplicaSet", "web-6d4f", "Deployment", "web")
    raw = RawDataset(T0, T0 + timedelta(hours=1), (pod,), (owner,), (samples,))
    run = RecommendationRun((recommendation(),))
    data = build_console_data(raw, aggregate(raw, source="test"), run, T0, policy=PlanPolicy())
    (row,) = data.workloads()
    return row.mode, row.mode_source


EXCLUDED = [
    pytest.param({}, {"podsizer.io/exclude": "true"}, id="annotation"),
    pytest.param({}, {"podsizer.io/exclude": "TRUE"}, id="annotation in capitals"),
    pytest.param({"podsizer.io/exclude": "true"}, {}, id="label"),
]


@pytest.mark.parametrize(("labels", "annotations"), EXCLUDED)
def test_an_excluded_pod_is_excluded_in_the_webhook_and_the_console(
    labels: dict[str, str], annotations: dict[str, str]
) -> None:
    pod: dict[str, Any] = replicaset_pod(labels={"app": "web", **labels}, annotations=annotations)
    _, decision = admitter(recommendation(), default_mode="dry-run").review(review(pod))
    assert (decision.outcome, decision.reason) == ("skipped", "excluded-pod")
    mode, _ = workload_mode(labels, {"podsizer.io/mode": "dry-run", **annotations})
    assert mode == "excluded"


@pytest.mark.parametrize("value", ["Auto", "AUTO", " auto "])
def test_mode_auto_in_any_case_works_in_the_webhook_and_the_console(value: str) -> None:
    pod = replicaset_pod(annotations={"podsizer.io/mode": value})
    _, decision = admitter(recommendation(), default_mode="dry-run").review(review(pod))
    assert decision.outcome == "applied"
    assert workload_mode({}, {"podsizer.io/mode": value}) == (
        "auto",
        "podsizer.io/mode pod annotation",
    )
