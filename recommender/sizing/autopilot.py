"""Autopilot sizing: when an HPA/KEDA scaler owns replicas, size from per-replica steady state.

Why request = per_replica_usage / target_utilization: the HPA computes
desired = ceil(current_replicas x utilization / target) with utilization = usage / request. With that
request, at steady state every replica shows exactly the target utilization, desired == current, and the
replica count does not move; the target keeps its meaning (scale out when per-replica use grows past it).
Sizing the targeted resource at P99 + margin instead would lower utilization under the target, the HPA
would scale in, per-replica use would rise, and the two control loops would fight.
"""

from __future__ import annotations

from collections.abc import Sequence

from podsizer.api.quantity import format_human
from podsizer.api.resource import ContainerPolicy
from podsizer.plausibility import Ceilings
from podsizer.sizing_policy import SizingPolicy
from recommender.model import Autoscaler, ContainerUsage
from recommender.sizing.estimators import Estimate, Resource, oom_bumped
from recommender.sizing.static import ContainerSizing, cpu_estimator, finish, memory_estimator

SIZED_RESOURCES: tuple[Resource, ...] = ("cpu", "memory")


def target_fraction(value: float) -> float:
    """HPA averageUtilization is a percent (70); accept a fraction (0.7) too."""
    if value <= 0:
        raise ValueError(f"target utilization must be positive, got {value}")
    return value / 100.0 if value > 1.0 else value


def targeted(autoscaler: Autoscaler) -> dict[Resource, float]:
    """The cpu/memory utilization targets (as fractions) the autoscaler uses."""
    out: dict[Resource, float] = {}
    for resource in SIZED_RESOURCES:
        if resource in autoscaler.target_utilization:
            out[resource] = target_fraction(autoscaler.target_utilization[resource])
    return out


def label(autoscaler: Autoscaler) -> str:
    kind = "HPA" if autoscaler.kind == "HorizontalPodAutoscaler" else "ScaledObject"
    targets = ", ".join(f"{r} {t * 100:g}%" for r, t in targeted(autoscaler).items())
    return f"{kind} {autoscaler.name} targets {targets}"


def is_autopilot(autoscaler: Autoscaler | None) -> bool:
    return autoscaler is not None and bool(targeted(autoscaler))


def size_autopilot(
    usage: ContainerUsage,
    autoscaler: Autoscaler,
    policy: SizingPolicy,
    bounds: Sequence[ContainerPolicy] = (),
    ceilings: Ceilings | None = None,
) -> ContainerSizing:
    """Targeted resources: per-replica steady state / target (memory never below the per-replica
    peak), floors and bounds; resources the autoscaler does not target are sized statically.
    """
    targets = targeted(autoscaler)
    if not targets:
        raise ValueError(f"{autoscaler.kind} {autoscaler.name} targets neither cpu nor memory utilization")
    estimates: dict[Resource, Estimate] = {}
    for resource in SIZED_RESOURCES:
        if resource not in targets:
            est = cpu_estimator(policy) if resource == "cpu" else memory_estimator(policy)
            e = est.explain(usage)
            estimates[resource] = Estimate(e.value, ("static", *e.steps))
            continue
        t = targets[resource]
        steady = usage.per_replica_cpu_cores if resource == "cpu" else usage.per_replica_memory_bytes
        value = steady / t
        steps = [
            f"per-replica {format_human(resource, steady)} / target {t * 100:g}% = "
            f"{format_human(resource, value)}"
        ]
        floor = policy.cpu_min_cores if resource == "cpu" else policy.memory_min_bytes
        if resource == "memory" and usage.memory_bytes.max > value:
            value = usage.memory_bytes.max
            steps.append(f"raised to per-replica peak {format_human(resource, value)}")
        bumped = (
            oom_bumped(value, usage.oom_kill_memory_bytes, policy.oom_bump_factor, policy.oom_bump_min_bytes)
            if resource == "memory"
            else None
        )
        if bumped is not None:
            value = bumped.value
            steps.extend(bumped.steps)
        if value < floor:
            value = floor
            steps.append(f"raised to floor {format_human(resource, floor)}")
        estimates[resource] = Estimate(value, tuple(steps))
    prefix = f"autopilot ({label(autoscaler)})"
    return finish(usage, estimates, policy, bounds, prefix=prefix, ceilings=ceilings)
