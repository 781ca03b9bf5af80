"""User bounds from a Recommendation's spec.resourcePolicy: pick the container's entry and clip to it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from podsizer.api.resource import ContainerPolicy
from recommender.sizing.estimators import Resource, fmt


def policy_for(container: str, policies: Sequence[ContainerPolicy]) -> ContainerPolicy | None:
    """The entry naming the container wins over the "*" entry; None when neither exists."""
    exact = next((p for p in policies if p.container == container), None)
    if exact is not None:
        return exact
    return next((p for p in policies if p.container == "*"), None)


@dataclass(frozen=True)
class Clipped:
    """A value after bounds, and the sentence saying so when a bound changed it."""

    value: float
    note: str | None = None


def clip(resource: Resource, value: float, policy: ContainerPolicy | None) -> Clipped:
    """Apply minAllowed/maxAllowed for `resource`; bounds win over every other rule."""
    if policy is None:
        return Clipped(value)
    lo = policy.min_allowed.get(resource)
    hi = policy.max_allowed.get(resource)
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(
            f"resourcePolicy for container {policy.container!r}: minAllowed {resource} "
            f"{fmt(resource, lo)} is above maxAllowed {fmt(resource, hi)}"
        )
    if hi is not None and value > hi:
        return Clipped(
            hi, f"{resource} clipped to maxAllowed {fmt(resource, hi)} (wanted {fmt(resource, value)})"
        )
    if lo is not None and value < lo:
        return Clipped(
            lo, f"{resource} raised to minAllowed {fmt(resource, lo)} (wanted {fmt(resource, value)})"
        )
    return Clipped(value)
