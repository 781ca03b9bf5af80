"""Compact decaying histograms (VPA's): exponential buckets, float32 weights, O(1) decayed sample adds.

- Buckets (BucketScheme): bucket i covers [first * (ratio^i - 1) / (ratio - 1), the next start); the last
  one is open above and values below 0 count in bucket 0. A bucket's width is (ratio - 1) * start + first,
  so a value is known to within (ratio - 1) * value + first (2 % + 0.1 millicore / 64 KiB for CPU and
  memory below): `resolution(v)`.
- Decay: a sample at time t weighs weight * 2^((t - reference) / half_life) (recommender.model.recency's
  age rule, relative to a reference time instead of the newest sample; a percentile does not change when
  every weight is scaled alike). Adding a sample is O(1); when the factor of a new sample would exceed
  2^MAX_EXPONENT the reference moves to that sample's time and every weight is scaled down once. Weights
  that decay below float32's range become 0. half_life None or 0: no decay.
- Percentile q: the first bucket whose cumulative weight reaches q * total, linearly interpolated within
  it by weight (so the result lies in the bucket holding the exact weighted percentile).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from recommender.model import FloatArray

F32 = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.intp]
Matrix = npt.NDArray[np.float64]
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


CPU_BUCKETS = BucketScheme.covering(0.0001, 1.02, 1000.0)
"""CPU cores: 0.1 millicore .. 1000 cores at 2 % (a percentile within 2 % of the exact one)."""
MEMORY_BUCKETS = BucketScheme.covering(MIB / 16, 1.02, 4.0 * 2**40)
"""Memory bytes: 64 KiB .. 4 TiB at 2 %."""
ACTIVITY_BUCKETS = BucketScheme.covering(0.001, 1.05, 1.0)
"""GPU activity (0..1): 0.1 % .. 100 % at 5 %."""
FRAMEBUFFER_BUCKETS = BucketScheme.covering(1.0, 1.05, 1024.0 * 1024.0)
"""GPU framebuffer MiB: 1 MiB .. 1 TiB at 5 %."""


def _decay(half_life_s: float | None, at: FloatArray | float, reference: float) -> FloatArray:
    """2^((at - reference) / half_life) (1 without decay)."""
    if not half_life_s:
        return np.ones(np.shape(at))
    return np.asarray(np.exp2((np.asarray(at, dtype=np.float64) - reference) / half_life_s))


class Histogram:
    """A decaying histogram over one BucketScheme: an accumulator (mutable), float32 weights.

    In memory only the buckets from the lowest to the highest with weight are held (`offset` is the
    first one's index): a container's usage spans a few dozen buckets of hundreds. `reference` is NaN
    until the first sample (which sets it to that sample's time)."""

    __slots__ = ("half_life_s", "offset", "reference", "scheme", "span")

    def __init__(
        self,
        scheme: BucketScheme,
        half_life_s: float | None,
        weights: F32 | None = None,
        reference: float = math.nan,
    ) -> None:
        """`weights`: all `scheme.count` buckets' (float32), or None for an empty histogram."""
        self.scheme, self.half_life_s, self.reference = scheme, half_life_s, reference
        self.offset, self.span = 0, np.zeros(0, dtype=np.float32)
        if weights is not None:
            if weights.shape != (scheme.count,) or weights.dtype != np.float32:
                raise ValueError(f"weights must be float32 of shape ({scheme.count},)")
            self._set_dense(weights)

    def _set_dense(self, dense: FloatArray | F32) -> None:
        weights = np.asarray(dense, dtype=np.float32)  # trimmed as stored: a weight below float32's is none
        nz = np.flatnonzero(weights)
        if nz.size == 0:
            self.offset, self.span = 0, np.zeros(0, dtype=np.float32)
        else:
            self.offset = int(nz[0])
            self.span = weights[nz[0] : nz[-1] + 1].copy()

    @property
    def weights(self) -> F32:
        """Every bucket's weight (a dense copy)."""
        out = np.zeros(self.scheme.count, dtype=np.float32)
        out[self.offset : self.offset + self.span.size] = self.span
        return out

    def is_empty(self) -> bool:
        """No weight at all (nothing added, or everything decayed away)."""
        return not bool(self.span.any())

    def total_weight(self) -> float:
        """Sum of the weights, relative to the reference time."""
        return float(self.span.sum(dtype=np.float64))

    def reference_for(self, newest: float) -> None:
        """Sets the reference (first sample) or moves it to `newest` when its factor would be too large
        (before samples up to `newest` are added)."""
        if math.isnan(self.reference):
            self.reference = newest
        elif self.half_life_s and (newest - self.reference) / self.half_life_s > MAX_EXPONENT:
            self.rereference(newest)

    def rereference(self, reference: float) -> None:
        """Moves the reference time, scaling every weight so that percentiles do not change."""
        if not math.isnan(self.reference) and self.half_life_s:
            scale = float(_decay(self.half_life_s, self.reference, reference))
            base = self.offset
            self._set_dense(self.span.astype(np.float64) * scale)  # weights that underflow: trimmed
            self.offset += base
        self.reference = reference

    def add_dense(self, lo: int, added: FloatArray) -> None:
        """Adds float64 weights (already decayed to the reference) of buckets lo .. lo + len(added) - 1
        (then trims zero ends)."""
        if self.span.size == 0:
            start, end = lo, lo + added.size
        elif self.offset <= lo and lo + added.size <= self.offset + self.span.size:
            # within the span (the usual case once a histogram has history): its ends stay nonzero
            self.span[lo - self.offset : lo - self.offset + added.size] += added
            return
        else:
            start, end = min(self.offset, lo), max(self.offset + self.span.size, lo + added.size)
        merged = np.zeros(end - start, dtype=np.float64)
        merged[self.offset - start : self.offset - start + self.span.size] = self.span
        merged[lo - start : lo - start + added.size] += added
        base = start
        self._set_dense(merged)
        self.offset += base

    def add(self, value: float, weight: float, at: float) -> None:
        """Adds one sample (O(1) unless the span grows); a non-finite value or a non-positive weight is
        ignored."""
        if not (math.isfinite(value) and weight > 0 and math.isfinite(at)):
            return
        self.reference_for(at)
        i = int(self.scheme.index(np.array([value]))[0])
        w = weight * float(_decay(self.half_life_s, at, self.reference))
        self.add_dense(i, np.array([w]))

    def add_many(self, values: FloatArray, weights: FloatArray | float, at: FloatArray) -> None:
        """Adds samples at once (accumulated in float64); non-finite values and weights <= 0 are ignored."""
        w = np.broadcast_to(np.asarray(weights, dtype=np.float64), values.shape)
        keep = np.isfinite(values) & np.isfinite(at) & (w > 0)
        if not keep.any():
            return
        values, w, at = values[keep], w[keep], at[keep]
        self.reference_for(float(at.max()))
        idx = self.scheme.index(values)
        w = w * _decay(self.half_life_s, at, self.reference)
        lo = int(idx.min())
        self.add_dense(lo, np.bincount(idx - lo, weights=w).astype(np.float64))

    def merge(self, other: Histogram, scale: float = 1.0) -> None:
        """Adds another histogram of the same scheme and half-life (at the later reference time), its
        weights times `scale` (the replaced-template rule's factor)."""
        if other.scheme != self.scheme or other.half_life_s != self.half_life_s:
            raise ValueError("cannot merge histograms of different schemes or half-lives")
        if other.is_empty() or scale <= 0:
            return
        mine = self.reference
        later = other.reference if math.isnan(mine) else max(mine, other.reference)
        self.rereference(later)
        factor = scale * float(_decay(self.half_life_s, other.reference, later))
        self.add_dense(other.offset, other.span.astype(np.float64) * factor)

    def percentile(self, q: float) -> float:
        """The weighted q-quantile (0 <= q <= 1), interpolated within its bucket; ValueError when empty."""
        return self.percentiles((q,))[0]

    def percentiles(self, qs: tuple[float, ...]) -> list[float]:
        """percentile() of each q, over one cumulative sum."""
        q = np.asarray(qs, dtype=np.float64)
        if not ((q >= 0.0) & (q <= 1.0)).all():
            raise ValueError(f"q must be within [0, 1], got {qs}")
        cum = np.cumsum(self.span, dtype=np.float64)
        total = float(cum[-1]) if cum.size else 0.0
        if total <= 0:
            raise ValueError("empty histogram")
        target = q * total
        i = np.minimum(np.searchsorted(cum, target, side="left"), self.span.size - 1)
        i = np.where(q == 0.0, np.flatnonzero(self.span)[0], i)  # q = 0: the first bucket with weight
        before = np.where(i > 0, cum[i - 1], 0.0)
        inside = self.span[i].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(inside > 0, np.clip((target - before) / inside, 0.0, 1.0), 0.0)
        edges = _edges(self.scheme)
        lo, hi = edges[self.offset + i], edges[self.offset + i + 1]
        return [float(v) for v in lo + (hi - lo) * frac]

    def mean(self) -> float:
        """The weighted mean, each bucket at its midpoint; ValueError when empty."""
        total = self.total_weight()
        if total <= 0:
            raise ValueError("empty histogram")
        edges = _edges(self.scheme)[self.offset : self.offset + self.span.size + 1]
        mids = (edges[:-1] + edges[1:]) / 2.0
        return float(np.dot(self.span.astype(np.float64), mids) / total)

    def nonzero(self) -> tuple[IntArray, F32]:
        """The buckets with weight and their weights (the sparse form checkpoints store)."""
        idx = np.flatnonzero(self.span)
        return idx + self.offset, self.span[idx]

    def nbytes(self) -> int:
        """Bytes of the weights in memory (from the lowest to the highest bucket with weight)."""
        return int(self.span.nbytes)


@functools.lru_cache(maxsize=16)
def _edges(scheme: BucketScheme) -> FloatArray:
    """The scheme's bucket edges, computed once per scheme."""
    edges = scheme.starts()
    edges.setflags(write=False)
    return edges


def percentiles_of(
    hists: Sequence[Histogram], qs: tuple[float, ...], rows: int = 512
) -> tuple[Matrix, FloatArray]:
    """Histogram.percentiles(qs) and mean() of many histograms of one scheme at once: (len, len(qs))
    and (len,), NaN for an empty one; `rows` at a time, each over the buckets its histograms span."""
    q = np.asarray(qs, dtype=np.float64)
    out, means = np.full((len(hists), q.size), np.nan), np.full(len(hists), np.nan)
    for a in range(0, len(hists), rows):
        part = [h for h in hists[a : a + rows]]
        full = [h for h in part if h.span.size]
        if not full:
            continue
        lo = min(h.offset for h in full)
        width = max(h.offset + h.span.size for h in full) - lo
        dense = np.zeros((len(part), width))
        for r, h in enumerate(part):
            dense[r, h.offset - lo : h.offset - lo + h.span.size] = h.span
        cum = np.cumsum(dense, axis=1)
        total = cum[:, -1]
        target = total[:, None] * q[None, :]
        idx = np.minimum((cum[:, :, None] < target[:, None, :]).sum(axis=1), width - 1)
        idx = np.where(q[None, :] == 0.0, (dense > 0).argmax(axis=1)[:, None], idx)
        before = np.where(idx > 0, np.take_along_axis(cum, np.maximum(idx - 1, 0), axis=1), 0.0)
        inside = np.take_along_axis(dense, idx, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(inside > 0, np.clip((target - before) / inside, 0.0, 1.0), 0.0)
            edges = _edges(part[0].scheme)[lo : lo + width + 1]
            value = edges[idx] + (edges[idx + 1] - edges[idx]) * frac
            mean = dense @ ((edges[:-1] + edges[1:]) / 2.0) / total
        empty = total <= 0
        out[a : a + len(part)] = np.where(empty[:, None], np.nan, value)
        means[a : a + len(part)] = np.where(empty, np.nan, mean)
    return out, means
