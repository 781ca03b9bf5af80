"""User bounds from spec.resourcePolicy, VPA semantics: the container's own entry as a whole, else "*"."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from podsizer.api.quantity import format_human
from podsizer.api.resource import ContainerPolicy

WILDCARD = "*"


class BoundsError(ValueError):
    """A resourcePolicy entry whose minAllowed is above its maxAllowed; the message names the container."""


def policy_for(container: str, policies: Sequence[ContainerPolicy]) -> ContainerPolicy | None:
    """The entry naming the container, else the "*" entry, else None; entries are never merged."""
    wildcard: ContainerPolicy | None = None
    for p in policies:
        if p.container == container:
            return p
        if wildcard is None and p.container == WILDCARD:
            wildcard = p
    return wildcard


def limits_of(
    resource: str, policy: ContainerPolicy | None, container: str | None = None
) -> tuple[float | None, float | None]:
    """(minAllowed, maxAllowed) for `resource`; BoundsError when min > max."""
    if policy is None:
        return None, None
    lo, hi = policy.min_allowed.get(resource), policy.max_allowed.get(resource)
    if lo is not None and hi is not None and lo > hi:
        name = container or policy.container
        entry = "" if policy.container == name else f' (its "{policy.container}" entry)'
        raise BoundsError(
            f"resourcePolicy for container {name!r}{entry}: minAllowed {resource} "
            f"{format_human(resource, lo)} is above maxAllowed {format_human(resource, hi)}"
        )
    return lo, hi


@dataclass(frozen=True)
class Clipped:
    """A value after bounds, and the sentence saying so when a bound changed it."""

    value: float
    note: str | None = None


def clip(
    resource: str, value: float, policy: ContainerPolicy | None, container: str | None = None
) -> Clipped:
    """Apply minAllowed/maxAllowed for `resource`; bounds win over every other rule."""
    lo, hi = limits_of(resource, policy, container)
    if hi is not None and value > hi:
        wanted = format_human(resource, value)
        return Clipped(hi, f"{resource} clipped to maxAllowed {format_human(resource, hi)} (wanted {wanted})")
    if lo is not None and value < lo:
        wanted = format_human(resource, value)
        return Clipped(lo, f"{resource} raised to minAllowed {format_human(resource, lo)} (wanted {wanted})")
    return Clipped(value)


def clip_count(resource: str, count: int, policy: ContainerPolicy | None) -> tuple[int, str | None]:
    """A whole count (GPUs) within the bounds, rounded inward to whole numbers (bounds win)."""
    lo, hi = limits_of(resource, policy)
    if hi is not None and count > hi:
        bounded = max(0, math.floor(hi))
        return bounded, f"{resource} clipped to maxAllowed {bounded} (wanted {count})"
    if lo is not None and count < lo:
        bounded = math.ceil(lo)
        return bounded, f"{resource} raised to minAllowed {bounded} (wanted {count})"
    return count, None
