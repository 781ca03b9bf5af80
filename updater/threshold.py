"""When is a running pod far enough from its plan to act: outside the band, or more than a fraction off."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from podsizer.podspec import Change, quantity, sidecar_indexes
from podsizer.resources import CPU_MEMORY


@dataclass(frozen=True)
class Band:
    """One container's band inside which no change is needed (lowerBound / upperBound quantities)."""

    lower: Mapping[str, str] = field(default_factory=dict)
    upper: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Threshold:
    """relative: a cpu/memory value more than this fraction off its target is outside (0.10 = 10 %);
    use_band: a request outside the container's band is outside too (where the Recommendation has one)."""

    relative: float = 0.10
    use_band: bool = True


def _outside_band(change: Change, band: Band | None) -> bool:
    if band is None or change.field != "requests":
        return False
    old = quantity(change.old)
    lower, upper = quantity(band.lower.get(change.resource)), quantity(band.upper.get(change.resource))
    if old is None:
        return False
    return (lower is not None and old < lower) or (upper is not None and old > upper)


def off_by_more(old: Decimal | None, new: Decimal | None, relative: float) -> bool:
    """Whether `new` is more than the fraction `relative` off `old`; a value added, removed or from
    nothing always is, the same value never."""
    if old == new:
        return False
    if old is None or new is None or old <= 0:
        return True
    return abs(new - old) / old > Decimal(str(relative))


def _too_far(change: Change, relative: float) -> bool:
    return off_by_more(quantity(change.old), quantity(change.new), relative)


def outside(change: Change, threshold: Threshold, band: Band | None = None) -> bool:
    """One change is worth acting on: any GPU/MIG change; a cpu/memory value outside the band (requests)
    or more than `threshold.relative` off."""
    if change.resource not in CPU_MEMORY:
        return True
    if threshold.use_band and _outside_band(change, band):
        return True
    return _too_far(change, threshold.relative)


def significant(
    changes: Iterable[Change], threshold: Threshold, bands: Mapping[str, Band] | None = None
) -> tuple[Change, ...]:
    """The changes outside the threshold (bands by container name)."""
    bands = bands or {}
    return tuple(c for c in changes if outside(c, threshold, bands.get(c.container)))


def running_changes(pod: Mapping[str, object], changes: Sequence[Change]) -> tuple[Change, ...]:
    """The changes that matter to a running pod: app containers and sidecars (init containers with
    restartPolicy Always); a finished init container's values no longer matter."""
    sidecars = sidecar_indexes(pod)
    return tuple(c for c in changes if c.section == "containers" or c.index in sidecars)
