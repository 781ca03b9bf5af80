"""Estimator building blocks: percentile interpolation, margin, confidence widening, floors, OOM bump."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from podsizer.api import ContainerPolicy
from podsizer.api.identity import WorkloadRef
from podsizer.api.quantity import MIB, format_human
from podsizer.bounds import clip
from recommender.model import ContainerUsage, Quantiles
from recommender.sizing.estimators import (
    ConfidenceEstimator,
    FloorAtPeak,
    MarginEstimator,
    MinMaxEstimator,
    OomBump,
    PercentileEstimator,
    Resource,
    ceil_mebibytes,
    ceil_millicores,
    quantile_at,
)

T0 = datetime(2026, 11, 1, tzinfo=UTC)
Q = Quantiles(p50=1.0, p90=2.0, p95=3.0, p99=4.0, max=5.0, mean=1.5)


def usage(cpu: Quantiles = Q, mem: Quantiles = Q, oom: float | None = None) -> ContainerUsage:
    return ContainerUsage(
        workload=WorkloadRef("ns", "Deployment", "web"),
        container="main",
        cpu_cores=cpu,
        memory_bytes=mem,
        per_replica_cpu_cores=cpu.mean,
        per_replica_memory_bytes=mem.mean,
        samples=5000,
        first_seen=T0,
        last_seen=T0 + timedelta(days=7),
        oom_kill_memory_bytes=oom,
    )


@pytest.mark.parametrize(
    ("percentile", "expected"),
    [(0.5, 1.0), (0.9, 2.0), (0.95, 3.0), (0.99, 4.0), (1.0, 5.0), (0.7, 1.5), (0.97, 3.5), (0.995, 4.5)],
)
def test_quantile_at_hits_stored_points_and_interpolates_between(percentile: float, expected: float) -> None:
    assert quantile_at(Q, percentile) == pytest.approx(expected)


@pytest.mark.parametrize("percentile", [0.1, 0.49, 1.01])
def test_quantile_at_refuses_percentiles_without_stored_points(percentile: float) -> None:
    with pytest.raises(ValueError, match="percentile"):
        quantile_at(Q, percentile)


def test_margin_multiplies_and_says_so() -> None:
    e = MarginEstimator(PercentileEstimator("cpu", 0.99), 0.15).explain(usage())
    assert e.value == pytest.approx(4.6)
    assert e.steps == ("p99 4000m", "+ 15% margin")


@pytest.mark.parametrize(
    ("conf", "expected"),
    [
        (1.0, 1.0),  # full confidence: no widening
        (0.5, (1 + 1 / 3.5) / (1 + 1 / 7)),  # 3.5 days -> x1.125
        (1 / 7, 2.0 / (1 + 1 / 7)),  # 1 day -> x1.75
        (0.0, 2.0),  # capped at max_factor
    ],
)
def test_confidence_widening_follows_vpa_formula(conf: float, expected: float) -> None:
    est = ConfidenceEstimator(PercentileEstimator("cpu", 0.99), lambda _u: conf, full_days=7.0)
    assert est.estimate(usage()) == pytest.approx(4.0 * expected)


def test_minmax_clamps_both_ways() -> None:
    inner = PercentileEstimator("cpu", 0.99)
    assert MinMaxEstimator(inner, "cpu", minimum=10.0).estimate(usage()) == 10.0
    assert MinMaxEstimator(inner, "cpu", maximum=2.0).estimate(usage()) == 2.0
    assert MinMaxEstimator(inner, "cpu", minimum=1.0, maximum=9.0).estimate(usage()) == 4.0


def test_floor_at_peak_never_below_observed_max() -> None:
    mem = Quantiles(p50=100 * MIB, p90=200 * MIB, p95=300 * MIB, p99=400 * MIB, max=480 * MIB, mean=150 * MIB)
    e = FloorAtPeak(MarginEstimator(PercentileEstimator("memory", 0.99), 0.15)).explain(usage(mem=mem))
    assert e.value == 480 * MIB
    assert e.steps[0].startswith("peak 480Mi")
    low_peak = Quantiles(100 * MIB, 200 * MIB, 300 * MIB, 400 * MIB, 420 * MIB, 150 * MIB)
    assert FloorAtPeak(MarginEstimator(PercentileEstimator("memory", 0.99), 0.15)).estimate(
        usage(mem=low_peak)
    ) == pytest.approx(460 * MIB)


@pytest.mark.parametrize(
    ("kill_mib", "expected_mib"),
    [
        (500, 600),  # x1.2 = 600Mi beats +100Mi = 600Mi (tie)
        (2000, 2400),  # x1.2 wins
        (200, 300),  # +100Mi wins over x1.2 = 240Mi
    ],
)
def test_oom_bump_takes_the_larger_of_factor_and_minimum(kill_mib: float, expected_mib: float) -> None:
    small = Quantiles(10 * MIB, 20 * MIB, 30 * MIB, 40 * MIB, 50 * MIB, 15 * MIB)
    e = OomBump(PercentileEstimator("memory", 0.99)).explain(usage(mem=small, oom=kill_mib * MIB))
    assert e.value == pytest.approx(expected_mib * MIB)
    assert "OOMKilled at" in e.steps[-1]


def test_oom_bump_leaves_a_larger_estimate_alone() -> None:
    big = Quantiles(1000 * MIB, 2000 * MIB, 3000 * MIB, 4000 * MIB, 5000 * MIB, 1500 * MIB)
    assert OomBump(PercentileEstimator("memory", 0.99)).estimate(usage(mem=big, oom=500 * MIB)) == 4000 * MIB


def test_rounding_goes_up_to_millicores_and_mebibytes() -> None:
    assert ceil_millicores(0.2501) == pytest.approx(0.251)
    assert ceil_millicores(0.25) == pytest.approx(0.25)
    assert ceil_mebibytes(MIB + 1) == 2 * MIB
    assert ceil_mebibytes(512 * MIB) == 512 * MIB


@pytest.mark.parametrize(("resource", "value", "text"), [("cpu", 0.2501, "251m"), ("memory", 1.0, "1Mi")])
def test_a_sizing_step_and_a_bound_write_an_amount_alike(resource: Resource, value: float, text: str) -> None:
    """One way to write an amount in a reason (podsizer.api.quantity.format_human): estimators and bounds."""
    idle = Quantiles(p50=0.0, p90=0.0, p95=0.0, p99=0.0, max=0.0, mean=0.0)
    floor = MinMaxEstimator(PercentileEstimator(resource, 0.5), resource, minimum=value)
    assert floor.explain(usage(idle, idle)).steps[-1] == f"raised to floor {text}"
    note = clip(resource, 0.0, ContainerPolicy("*", {resource: value})).note
    assert note == f"{resource} raised to minAllowed {text} (wanted {format_human(resource, 0.0)})"
    assert format_human(resource, float("nan")) == "nan"
