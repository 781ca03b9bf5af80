"""Static sizing: P99 + margin, memory floor at peak, OOM bump, limits, floors and user bounds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from podsizer.api.identity import WorkloadRef
from podsizer.api.quantity import MIB
from podsizer.api.resource import ContainerPolicy
from podsizer.sizing_policy import SizingPolicy
from recommender.model import ContainerUsage, Quantiles
from recommender.sizing.static import size_static

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def usage(
    cpu: np.ndarray,
    mem: np.ndarray,
    *,
    days: float = 7.0,
    samples: int | None = None,
    oom: float | None = None,
    container: str = "main",
) -> ContainerUsage:
    return ContainerUsage(
        workload=WorkloadRef("shop", "StatefulSet", "db"),
        container=container,
        cpu_cores=Quantiles.of(cpu),
        memory_bytes=Quantiles.of(mem),
        per_replica_cpu_cores=float(cpu.mean()),
        per_replica_memory_bytes=float(mem.mean()),
        samples=samples if samples is not None else int(cpu.size),
        first_seen=T0,
        last_seen=T0 + timedelta(days=days),
        oom_kill_memory_bytes=oom,
    )


class Steady:
    """Uniform noise within center x (1 +/- spread): a week of 30 s samples, from one test's own generator."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = np.random.default_rng(seed)

    def __call__(self, center: float, spread: float, n: int = 20160) -> np.ndarray:
        return center * (1 + self.rng.uniform(-spread, spread, n))


@pytest.fixture
def steady() -> Steady:
    return Steady()


def test_steady_200m_plus_minus_5_percent_lands_in_a_stated_band(steady: Steady) -> None:
    # P99 of 200m +/- 5 % is ~209m; + 15 % margin -> ~241m. Band: 235m..245m.
    s = size_static(usage(steady(0.2, 0.05), steady(400 * MIB, 0.02)), SizingPolicy())
    assert 0.235 <= s.requests["cpu"] <= 0.245
    assert s.requests["cpu"] * 1000 == int(s.requests["cpu"] * 1000 + 1e-9)  # whole millicores
    assert "cpu: p99" in s.reason and "+ 15% margin" in s.reason


def test_memory_is_p99_plus_margin_and_limit_is_request_times_factor(steady: Steady) -> None:
    mem = steady(400 * MIB, 0.02)
    s = size_static(usage(steady(0.2, 0.05), mem), SizingPolicy())
    expected = np.quantile(mem, 0.99) * 1.15
    assert expected <= s.requests["memory"] < expected + MIB
    assert s.requests["memory"] % MIB == 0
    assert s.limits["memory"] >= s.requests["memory"] * 1.25
    assert s.limits["memory"] < s.requests["memory"] * 1.25 + MIB
    assert "cpu" not in s.limits  # CPU limit not set by default


def test_cpu_limit_written_only_when_configured(steady: Steady) -> None:
    s = size_static(usage(steady(0.2, 0.05), steady(400 * MIB, 0.02)), SizingPolicy(cpu_limit_factor=2.0))
    assert s.limits["cpu"] == pytest.approx(s.requests["cpu"] * 2.0, abs=0.001)


def test_memory_never_below_observed_peak(steady: Steady) -> None:
    mem = steady(400 * MIB, 0.01)
    mem[100] = 900 * MIB  # one spike far above P99 + 15 %
    s = size_static(usage(steady(0.2, 0.05), mem), SizingPolicy())
    assert s.requests["memory"] >= 900 * MIB
    assert "peak 900Mi" in s.reason


@pytest.mark.parametrize(
    ("kill_mib", "min_request_mib"),
    [(500, 600), (300, 400), (1000, 1200)],  # max(x1.2, +100Mi)
)
def test_oom_kill_bumps_memory_over_the_memory_at_the_kill(
    kill_mib: int, min_request_mib: int, steady: Steady
) -> None:
    s = size_static(usage(steady(0.2, 0.05), steady(250 * MIB, 0.02), oom=kill_mib * MIB), SizingPolicy())
    assert s.requests["memory"] >= min_request_mib * MIB
    assert s.requests["memory"] < (min_request_mib + 1) * MIB
    assert f"OOMKilled at {kill_mib}Mi -> bumped" in s.reason


def test_floors_apply_to_tiny_containers(steady: Steady) -> None:
    s = size_static(usage(steady(0.0005, 0.1), steady(2 * MIB, 0.1)), SizingPolicy())
    assert s.requests["cpu"] == pytest.approx(0.01)
    assert s.requests["memory"] == 32 * MIB
    assert "floor 10m" in s.reason and "floor 32Mi" in s.reason


def test_star_bounds_win_and_the_reason_says_so(steady: Steady) -> None:
    bounds = (ContainerPolicy("*", min_allowed={"memory": 1024 * MIB}, max_allowed={"cpu": 0.1}),)
    s = size_static(usage(steady(0.2, 0.05), steady(400 * MIB, 0.02)), SizingPolicy(), bounds)
    assert s.requests["cpu"] == pytest.approx(0.1)
    assert s.requests["memory"] == 1024 * MIB
    assert "cpu clipped to maxAllowed 100m" in s.reason
    assert "memory raised to minAllowed 1024Mi" in s.reason


def test_bounds_by_name_beat_star_and_win_over_oom_bump(steady: Steady) -> None:
    bounds = (
        ContainerPolicy("*", max_allowed={"memory": 2048 * MIB}),
        ContainerPolicy("main", max_allowed={"memory": 512 * MIB}),
    )
    s = size_static(usage(steady(0.2, 0.05), steady(250 * MIB, 0.02), oom=500 * MIB), SizingPolicy(), bounds)
    assert s.requests["memory"] == 512 * MIB
    assert "memory clipped to maxAllowed 512Mi" in s.reason
    other = size_static(
        usage(steady(0.2, 0.05), steady(250 * MIB, 0.02), oom=500 * MIB, container="sidecar"),
        SizingPolicy(),
        bounds,
    )
    assert other.requests["memory"] >= 600 * MIB  # only "*" applies, and 2Gi is not reached


def test_min_above_max_bound_is_a_clear_error(steady: Steady) -> None:
    bounds = (ContainerPolicy("*", min_allowed={"cpu": 1.0}, max_allowed={"cpu": 0.5}),)
    with pytest.raises(ValueError, match="minAllowed cpu 1000m is above maxAllowed 500m"):
        size_static(usage(steady(0.2, 0.05), steady(400 * MIB, 0.02)), SizingPolicy(), bounds)


def test_thin_history_is_low_confidence_and_widened(steady: Steady) -> None:
    cpu, mem = steady(0.2, 0.05, 2000), steady(400 * MIB, 0.02, 2000)
    full = size_static(usage(cpu, mem, days=7.0), SizingPolicy())
    thin = size_static(usage(cpu, mem, days=1.0), SizingPolicy())
    assert not full.low_confidence and full.confidence == pytest.approx(1.0)
    assert thin.low_confidence and thin.confidence == pytest.approx(1 / 7)
    assert thin.requests["cpu"] > full.requests["cpu"] * 1.5  # x1.75 for one day of history
    assert "low confidence 0.14" in thin.reason
