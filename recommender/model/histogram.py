"""Compact decaying histograms (VPA's): exponential buckets, float32 weights, O(1) decayed sample adds.

- Buckets (BucketScheme): bucket i covers [first * (ratio^i - 1) / (ratio - 1), the next start); the last
  one is open above and values below 0 count in bucket 0. A bucket's width is (ratio - 1) * start + first,
  so a value is known to within (ratio - 1) * value + first (5 % + 1 millicore / 1 MiB with the schemes
  below): `resolution(v)`.
- Decay: a sample at time t weighs weight * 2^((t - reference) / half_life) (recommender.model.recency's
  age rule, relative to a reference time instead of the newest sample; a percentile does not change when
  every weight is scaled alike). Adding a sample is O(1); when the factor of a new sample would exceed
  2^MAX_EXPONENT the reference moves to that sample's time and every weight is scaled down once. Weights
  that decay below float32's range become 0. half_life None or 0: no decay.
- Percentile q: the first bucket whose cumulative weight reaches q * total, linearly interpolated within
  it by weight (so the result lies in the bucket holding the exact weighted percentile).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from recommender.model import FloatArray

F32 = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.intp]
MAX_EXPONENT = 32.0
"""Largest decay exponent a stored weight may carry before the reference time moves (2^32 ~ 4e9)."""
MIB = float(2**20)


@dataclass(frozen=True)
class BucketScheme:
    """Exponential buckets: `count` of them, the first `first` wide, each `ratio` times wider."""

    first: float
    ratio: float
    count: int

    def __post_init__(self) -> None:
        if not (self.first > 0 and self.ratio > 1 and self.count >= 1):
            raise ValueError(f"bad bucket scheme {self}")

    @staticmethod
    def covering(first: float, ratio: float, top: float) -> BucketScheme:
        """The scheme whose buckets reach at least `top` (its last bucket starts at or above it)."""
        count = math.ceil(math.log1p(top * (ratio - 1) / first) / math.log(ratio)) + 1
        return BucketScheme(first, ratio, count)

    def starts(self) -> FloatArray:
        """The count + 1 bucket edges (the last: where the open last bucket is taken to end)."""
        i = np.arange(self.count + 1, dtype=np.float64)
        return self.first * np.expm1(i * math.log(self.ratio)) / (self.ratio - 1)

    def index(self, values: FloatArray) -> IntArray:
        """The bucket of each finite value (negative: bucket 0; beyond the top: the last bucket)."""
        scaled = np.maximum(values, 0.0) * ((self.ratio - 1) / self.first)
        i = np.floor(np.log1p(scaled) / math.log(self.ratio))
        return np.clip(i, 0, self.count - 1).astype(np.intp)

    def resolution(self, value: float) -> float:
        """The width of the bucket holding `value` at most: how far a percentile may be off."""
        return (self.ratio - 1) * max(value, 0.0) + self.first

    def describe(self) -> str:
        """A stable text form (checkpoints compare it): 'exp:first=0.001:ratio=1.05:count=223'."""
        return f"exp:first={self.first!r}:ratio={self.ratio!r}:count={self.count}"


CPU_BUCKETS = BucketScheme.covering(0.001, 1.05, 1000.0)
"""CPU cores: 1 millicore .. 1000 cores at 5 %."""
MEMORY_BUCKETS = BucketScheme.covering(MIB, 1.05, 4.0 * 2**40)
"""Memory bytes: 1 MiB .. 4 TiB at 5 %."""
ACTIVITY_BUCKETS = BucketScheme.covering(0.001, 1.05, 1.0)
"""GPU activity (0..1): 0.1 % .. 100 % at 5 %."""
FRAMEBUFFER_BUCKETS = BucketScheme.covering(1.0, 1.05, 1024.0 * 1024.0)
"""GPU framebuffer MiB: 1 MiB .. 1 TiB at 5 %."""


def _decay(half_life_s: float | None, at: FloatArray | float, reference: float) -> FloatArray:
    """2^((at - reference) / half_life) (1 without decay)."""
    if not half_life_s:
        return np.ones(np.shape(at))
    return np.asarray(np.exp2((np.asarray(at, dtype=np.float64) - reference) / half_life_s))


@dataclass(slots=True, eq=False)
class Histogram:
    """A decaying histogram over one BucketScheme: an accumulator (mutable), float32 weights.

    `reference` is NaN until the first sample (which sets it to that sample's time)."""

    scheme: BucketScheme
    half_life_s: float | None
    weights: F32 = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    reference: float = math.nan

    def __post_init__(self) -> None:
        if self.weights.size == 0:
            self.weights = np.zeros(self.scheme.count, dtype=np.float32)
        if self.weights.shape != (self.scheme.count,) or self.weights.dtype != np.float32:
            raise ValueError(f"weights must be float32 of shape ({self.scheme.count},)")

    def is_empty(self) -> bool:
        """No weight at all (nothing added, or everything decayed away)."""
        return not bool(self.weights.any())

    def total_weight(self) -> float:
        """Sum of the weights, relative to the reference time."""
        return float(self.weights.sum(dtype=np.float64))

    def _reference_for(self, newest: float) -> None:
        """Sets the reference (first sample) or moves it to `newest` when its factor would be too large."""
        if math.isnan(self.reference):
            self.reference = newest
        elif self.half_life_s and (newest - self.reference) / self.half_life_s > MAX_EXPONENT:
            self.rereference(newest)

    def rereference(self, reference: float) -> None:
        """Moves the reference time, scaling every weight so that percentiles do not change."""
        if not math.isnan(self.reference) and self.half_life_s:
            scale = float(_decay(self.half_life_s, self.reference, reference))
            self.weights = (self.weights.astype(np.float64) * scale).astype(np.float32)
        self.reference = reference

    def add(self, value: float, weight: float, at: float) -> None:
        """Adds one sample (O(1)); a non-finite value or a non-positive weight is ignored."""
        if not (math.isfinite(value) and weight > 0 and math.isfinite(at)):
            return
        self._reference_for(at)
        i = int(self.scheme.index(np.array([value]))[0])
        self.weights[i] += np.float32(weight * float(_decay(self.half_life_s, at, self.reference)))

    def add_many(self, values: FloatArray, weights: FloatArray | float, at: FloatArray) -> None:
        """Adds samples at once (accumulated in float64); non-finite values and weights <= 0 are ignored."""
        w = np.broadcast_to(np.asarray(weights, dtype=np.float64), values.shape)
        keep = np.isfinite(values) & np.isfinite(at) & (w > 0)
        if not keep.any():
            return
        values, w, at = values[keep], w[keep], at[keep]
        self._reference_for(float(at.max()))
        idx = self.scheme.index(values)
        w = w * _decay(self.half_life_s, at, self.reference)
        added = np.bincount(idx, weights=w, minlength=self.scheme.count)
        self.weights = (self.weights.astype(np.float64) + added).astype(np.float32)

    def merge(self, other: Histogram) -> None:
        """Adds another histogram of the same scheme and half-life (at the later reference time)."""
        if other.scheme != self.scheme or other.half_life_s != self.half_life_s:
            raise ValueError("cannot merge histograms of different schemes or half-lives")
        if other.is_empty():
            return
        mine = self.reference
        later = other.reference if math.isnan(mine) else max(mine, other.reference)
        self.rereference(later)
        theirs = other.weights.astype(np.float64) * float(_decay(self.half_life_s, other.reference, later))
        self.weights = (self.weights.astype(np.float64) + theirs).astype(np.float32)

    def percentile(self, q: float) -> float:
        """The weighted q-quantile (0 <= q <= 1), interpolated within its bucket; ValueError when empty."""
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"q must be within [0, 1], got {q}")
        cum = np.cumsum(self.weights, dtype=np.float64)
        total = float(cum[-1])
        if total <= 0:
            raise ValueError("empty histogram")
        target = q * total
        if q == 0.0:  # the first bucket with weight
            i = int(np.flatnonzero(self.weights)[0])
        else:
            i = min(int(np.searchsorted(cum, target, side="left")), self.scheme.count - 1)
        before = float(cum[i - 1]) if i > 0 else 0.0
        inside = float(self.weights[i])
        frac = min(max((target - before) / inside, 0.0), 1.0) if inside > 0 else 0.0
        lo, hi = self.scheme.starts()[i : i + 2]
        return float(lo + (hi - lo) * frac)

    def nonzero(self) -> tuple[IntArray, F32]:
        """The buckets with weight and their weights (the sparse form checkpoints store)."""
        idx = np.flatnonzero(self.weights)
        return idx, self.weights[idx]

    def nbytes(self) -> int:
        """Bytes of the weights array (the in-memory model state of this histogram)."""
        return int(self.weights.nbytes)
