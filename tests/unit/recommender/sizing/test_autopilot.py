"""Autopilot sizing: request = per-replica steady state / HPA target; the HPA target keeps its meaning."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Literal

import pytest

from podsizer.api.identity import WorkloadRef
from podsizer.api.quantity import MIB
from podsizer.api.resource import ContainerPolicy
from podsizer.sizing_policy import SizingPolicy
from recommender.model import Autoscaler, ContainerUsage, Quantiles
from recommender.sizing.autopilot import size_autopilot, target_fraction

T0 = datetime(2026, 11, 1, tzinfo=UTC)
WL = WorkloadRef("shop", "Deployment", "web")


def usage(per_cpu: float, per_mem: float, mem_peak: float, oom: float | None = None) -> ContainerUsage:
    cpu = Quantiles(per_cpu, per_cpu * 1.3, per_cpu * 1.5, per_cpu * 2.0, per_cpu * 2.5, per_cpu)
    mem = Quantiles(per_mem, per_mem * 1.05, per_mem * 1.1, per_mem * 1.15, mem_peak, per_mem)
    return ContainerUsage(
        WL,
        "main",
        cpu,
        mem,
        per_cpu,
        per_mem,
        20000,
        T0,
        T0 + timedelta(days=7),
        pods=4,
        oom_kill_memory_bytes=oom,
    )


def hpa(
    targets: dict[str, float],
    kind: Literal["HorizontalPodAutoscaler", "ScaledObject"] = "HorizontalPodAutoscaler",
    name: str = "web",
) -> Autoscaler:
    return Autoscaler(WL, kind, name, 2, 10, targets, current_replicas=4)


@pytest.mark.parametrize(
    ("per_replica", "target", "expected"),
    [(0.35, 70, 0.5), (0.35, 0.7, 0.5), (0.12, 60, 0.2), (0.9, 90, 1.0)],
)
def test_targeted_cpu_is_per_replica_over_target(per_replica: float, target: float, expected: float) -> None:
    s = size_autopilot(usage(per_replica, 300 * MIB, 320 * MIB), hpa({"cpu": target}), SizingPolicy())
    assert s.requests["cpu"] == pytest.approx(expected, abs=0.0011)


def test_hpa_sees_exactly_its_target_so_replicas_do_not_move() -> None:
    u = usage(0.35, 300 * MIB, 320 * MIB)
    s = size_autopilot(u, hpa({"cpu": 70}), SizingPolicy())
    utilization = u.per_replica_cpu_cores / s.requests["cpu"]
    current = 4
    desired = math.ceil(round(current * utilization / 0.70, 6))  # the HPA's formula
    assert desired == current
    assert abs(utilization / 0.70 - 1) <= 0.1  # inside the HPA's default 10 % tolerance


def test_untargeted_memory_is_sized_statically() -> None:
    s = size_autopilot(usage(0.35, 300 * MIB, 320 * MIB), hpa({"cpu": 70}), SizingPolicy())
    # static memory: max(p99 x 1.15, peak) = max(345 x 1.15 = 396.75Mi, 320Mi)
    assert s.requests["memory"] == 397 * MIB
    assert s.limits["memory"] >= 397 * MIB * 1.25
    assert "memory: static" in s.reason


def test_targeted_memory_over_target_but_never_below_per_replica_peak() -> None:
    s = size_autopilot(usage(0.35, 400 * MIB, 450 * MIB), hpa({"memory": 80}), SizingPolicy())
    assert s.requests["memory"] == 500 * MIB  # 400Mi / 0.8
    s = size_autopilot(usage(0.35, 400 * MIB, 600 * MIB), hpa({"memory": 80}), SizingPolicy())
    assert s.requests["memory"] == 600 * MIB
    assert "per-replica peak 600Mi" in s.reason


def test_reason_names_the_autoscaler_and_target() -> None:
    s = size_autopilot(
        usage(0.35, 300 * MIB, 320 * MIB), hpa({"cpu": 70}, "ScaledObject", "web-keda"), SizingPolicy()
    )
    assert s.reason.startswith("autopilot (ScaledObject web-keda targets cpu 70%)")
    assert "per-replica 350m / target 70% = 500m" in s.reason


def test_floor_and_bounds_apply_to_the_targeted_resource() -> None:
    s = size_autopilot(usage(0.001, 300 * MIB, 320 * MIB), hpa({"cpu": 70}), SizingPolicy())
    assert s.requests["cpu"] == pytest.approx(0.01)
    bounds = (ContainerPolicy("main", max_allowed={"cpu": 0.25}),)
    s = size_autopilot(usage(0.35, 300 * MIB, 320 * MIB), hpa({"cpu": 70}), SizingPolicy(), bounds)
    assert s.requests["cpu"] == pytest.approx(0.25)
    assert "cpu clipped to maxAllowed 250m" in s.reason


def test_autoscaler_without_cpu_or_memory_targets_is_refused() -> None:
    with pytest.raises(ValueError, match="targets neither cpu nor memory"):
        size_autopilot(usage(0.35, 300 * MIB, 320 * MIB), hpa({}), SizingPolicy())


@pytest.mark.parametrize(("raw", "fraction"), [(70, 0.7), (0.7, 0.7), (100, 1.0), (1.0, 1.0)])
def test_target_fraction_accepts_percent_and_fraction(raw: float, fraction: float) -> None:
    assert target_fraction(raw) == pytest.approx(fraction)


def test_target_fraction_rejects_non_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        target_fraction(0)


def test_targeted_and_static_memory_bump_alike_after_an_oom_kill() -> None:
    """One OOM rule (estimators.oom_bumped): memory >= max(kill x factor, kill + min) on either path."""
    u = usage(0.35, 100 * MIB, 120 * MIB, oom=1000 * MIB)
    targeted = size_autopilot(u, hpa({"memory": 80}), SizingPolicy())
    untargeted = size_autopilot(u, hpa({"cpu": 70}), SizingPolicy())
    assert targeted.requests["memory"] == untargeted.requests["memory"] == 1200 * MIB
    for s in (targeted, untargeted):
        assert "OOMKilled at 1000Mi -> bumped to 1200Mi" in s.reason
