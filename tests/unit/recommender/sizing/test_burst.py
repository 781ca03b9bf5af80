"""The burst path: bursty CPU detected from its distribution, requested at its sustained level, safely."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from podsizer.api.identity import WorkloadRef
from podsizer.api.quantity import MIB
from podsizer.api.resource import ContainerPolicy
from podsizer.plausibility import Ceilings
from podsizer.sizing_policy import SizingPolicy
from recommender.model import ContainerUsage, Quantiles
from recommender.sizing.batch import size_batch
from recommender.sizing.burst import BurstRule, detect, share_above
from recommender.sizing.static import size_static
from tests.support.hypo import examples

T0 = datetime(2026, 11, 1, tzinfo=UTC)
WEEK = 7 * 1440
ON = SizingPolicy(cpu_burst_path=True)


def worker(seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """A week per minute: idles at 20m / 256Mi, 20 minutes every 4 h at 2 cores / 1.1Gi."""
    rng = np.random.default_rng(seed)
    m = np.arange(WEEK)
    burst = (m % 240) < 20
    cpu = np.where(burst, 2.0, 0.02) * (1 + 0.05 * rng.standard_normal(WEEK))
    mem = np.where(burst, 1100.0, 256.0) * MIB * (1 + 0.01 * rng.standard_normal(WEEK))
    return np.clip(cpu, 0.001, None), mem


def daily(seed: int = 4) -> np.ndarray:
    """A daily cycle 100m..800m: a peak far above the median, but no bursts."""
    rng = np.random.default_rng(seed)
    hours = (np.arange(WEEK) % 1440) / 60
    shape = 0.5 * (1 + np.cos(2 * np.pi * (hours - 14) / 24))
    return (0.1 + 0.7 * shape) * (1 + 0.03 * rng.standard_normal(WEEK))


def usage(cpu: np.ndarray, mem: np.ndarray, kind: str = "Deployment") -> ContainerUsage:
    return ContainerUsage(
        workload=WorkloadRef("shop", kind, "worker"),
        container="main",
        cpu_cores=Quantiles.of(cpu),
        memory_bytes=Quantiles.of(mem),
        per_replica_cpu_cores=float(cpu.mean()),
        per_replica_memory_bytes=float(mem.mean()),
        samples=int(cpu.size),
        first_seen=T0,
        last_seen=T0 + timedelta(days=7),
        runs=5 if kind == "CronJob" else 0,
    )


def test_a_worker_idling_between_short_bursts_is_bursty_at_its_p90() -> None:
    cpu, _ = worker()
    b = detect(Quantiles.of(cpu), BurstRule())
    assert b is not None
    assert b.label == "p90"
    assert 0.015 < b.sustained < 0.03
    assert 1.8 < b.peak < 2.3
    # 20 minutes in 240 are bursts: 8.3 % of the time, 2 h a day; the estimate is at most 1 - 0.90
    assert 0.05 <= b.share <= 0.10
    assert 1.2 <= b.hours_a_day <= 2.4


def test_a_daily_cycle_is_not_bursty() -> None:
    assert detect(Quantiles.of(daily()), BurstRule()) is None


def test_bursts_over_a_fifth_of_the_time_are_not_bursty() -> None:
    # 300m with 1.4-core GC bursts 2 minutes in 10: the p90 is inside the bursts, the p99 near it
    m = np.arange(WEEK)
    cpu = np.where(m % 10 < 2, 1.4, 0.3)
    assert detect(Quantiles.of(cpu), BurstRule()) is None


def test_bursts_too_small_in_cores_are_not_bursty() -> None:
    cpu, _ = worker()
    assert detect(Quantiles.of(cpu / 100), BurstRule()) is None  # 0.2m idle, 20m bursts: under 100m


def test_max_share_limits_the_sustained_point_to_the_allowed_percentiles() -> None:
    cpu, _ = worker()
    assert detect(Quantiles.of(cpu), BurstRule(max_share=0.05)) is None  # p95 is inside the bursts


def test_share_above_reads_the_interpolated_distribution() -> None:
    q = Quantiles(p50=1.0, p90=2.0, p95=3.0, p99=4.0, max=5.0, mean=1.5)
    assert share_above(q, 2.0) == pytest.approx(0.10)
    assert share_above(q, 2.5) == pytest.approx(0.075)
    assert share_above(q, 5.0) == 0.0
    assert share_above(q, 0.5) == 0.5


@settings(max_examples=examples(50))
@given(st.floats(0.0, 10.0), st.floats(0.0, 10.0))
def test_share_above_never_grows_with_the_threshold(a: float, b: float) -> None:
    q = Quantiles(p50=1.0, p90=2.0, p95=3.0, p99=4.0, max=8.0, mean=1.5)
    lo, hi = sorted((a, b))
    assert 0.0 <= share_above(q, hi) <= share_above(q, lo) <= 0.5


def test_static_sizing_requests_the_sustained_level_and_says_where_bursts_run() -> None:
    cpu, mem = worker()
    s = size_static(usage(cpu, mem), ON)
    p90 = Quantiles.of(cpu).p90
    assert s.requests["cpu"] == pytest.approx(p90 * 1.15, abs=0.0011)
    assert "bursty" in s.reason and "h a day" in s.reason and "node headroom" in s.reason
    assert "cpu" not in s.limits  # no CPU limit by default: bursts run on the node's headroom


def test_the_burst_path_is_off_by_default() -> None:
    cpu, mem = worker()
    s = size_static(usage(cpu, mem), SizingPolicy())
    assert s.requests["cpu"] > 2.0
    assert "bursty" not in s.reason


def test_memory_never_follows_the_burst_path() -> None:
    cpu, mem = worker()
    on, off = size_static(usage(cpu, mem), ON), size_static(usage(cpu, mem), SizingPolicy())
    peak = float(mem.max())
    assert on.requests["memory"] == off.requests["memory"]
    assert on.requests["memory"] >= peak
    assert on.limits["memory"] >= peak * 1.15


def test_a_cpu_limit_covers_the_bursts() -> None:
    cpu, mem = worker()
    s = size_static(usage(cpu, mem), replace(ON, cpu_limit_factor=2.0))
    assert s.limits["cpu"] >= Quantiles.of(cpu).p99 * 1.15
    assert s.limits["cpu"] > 2 * s.requests["cpu"]
    assert "covers the bursts" in s.reason


def test_the_burst_limit_stays_within_the_ceiling() -> None:
    cpu, mem = worker()
    top = Ceilings(cpu_cores=1.0, memory_bytes=64 * 1024 * MIB, gpus=8)
    s = size_static(usage(cpu, mem), replace(ON, cpu_limit_factor=2.0), ceilings=top)
    assert s.limits["cpu"] == 1.0


def test_user_bounds_win_over_the_sustained_request() -> None:
    cpu, mem = worker()
    bounds = (ContainerPolicy(container="main", min_allowed={"cpu": 0.5}),)
    s = size_static(usage(cpu, mem), ON, bounds)
    assert s.requests["cpu"] == 0.5


def test_batch_sizing_uses_the_same_burst_rule() -> None:
    cpu, mem = worker()
    job, deploy = size_batch(usage(cpu, mem, "CronJob"), ON), size_static(usage(cpu, mem), ON)
    assert job.requests["cpu"] == deploy.requests["cpu"]
    assert "bursty" in job.reason


@settings(max_examples=examples(40), deadline=None)
@given(
    st.floats(0.001, 0.5),
    st.floats(0.5, 8.0),
    st.integers(1, 40),
    st.floats(100.0, 4000.0),
    st.floats(1.0, 4.0),
)
def test_the_burst_path_never_takes_memory_under_its_peak_or_cpu_past_the_ceiling(
    idle: float, burst: float, minutes: int, mem_idle_mib: float, mem_factor: float
) -> None:
    m = np.arange(WEEK)
    on = (m % 240) < minutes
    cpu = np.where(on, burst, idle)
    mem = np.where(on, mem_idle_mib * mem_factor, mem_idle_mib) * MIB
    top = Ceilings(cpu_cores=4.0, memory_bytes=64 * 1024 * MIB, gpus=8)
    s = size_static(usage(cpu, mem), replace(ON, cpu_limit_factor=1.5), ceilings=top)
    assert s.requests["memory"] >= float(mem.max())
    assert s.limits["memory"] >= float(mem.max()) * 1.15
    assert ON.cpu_min_cores <= s.requests["cpu"] <= s.limits["cpu"] <= 4.0
