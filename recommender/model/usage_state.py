"""Per (workload, container) usage state for incremental cycles: decaying histograms plus the counts,
peaks and OOM kills that sizing and confidence read (not yet used by the run loop; see docs/recommender.md).

- cpu: one sample per CPU sample (cores); memory: one sample per interval, its peak working set (bytes;
  a Prometheus step's max_over_time, or a raw sample); gpu_activity (0..1) and gpu_framebuffer (MiB used)
  only for containers with GPUs. All decay alike (recommender.model.histogram).
- cpu_peak / memory_peak: the largest sample ever added, unweighted (a peak is a peak however old).
- samples, first_seen, last_seen (epoch seconds, NaN before any sample) and the UTC days with a sample
  (a bitmap of the DAYS_KEPT days up to the newest one) are what confidence reads.
- ooms: the OOM kills (time, working set), the newest MAX_OOMS.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from podsizer.api.identity import WorkloadRef
from recommender.model import FloatArray
from recommender.model.histogram import (
    ACTIVITY_BUCKETS,
    CPU_BUCKETS,
    FRAMEBUFFER_BUCKETS,
    MEMORY_BUCKETS,
    Histogram,
)

DAY_S = 86400.0
DAYS_KEPT = 63
"""Days the seen-days bitmap covers (bit k: the k-th day before the newest day with a sample)."""
MAX_OOMS = 16


@dataclass(frozen=True, order=True)
class StateKey:
    """Whose state: one container of one workload."""

    workload: WorkloadRef
    container: str


@dataclass(frozen=True)
class OomEvent:
    """An OOM kill: when (epoch seconds) and the working set just before (bytes)."""

    at: float
    memory_bytes: float


def _days_mask(days: np.ndarray[tuple[int], np.dtype[np.int64]], newest: int) -> int:
    """The bitmap of `days` (UTC day numbers) relative to `newest` (bit 0), within DAYS_KEPT."""
    back = newest - days
    back = back[(back >= 0) & (back < DAYS_KEPT)]
    mask = 0
    for k in np.flatnonzero(np.bincount(back, minlength=DAYS_KEPT)).tolist():
        mask |= 1 << int(k)
    return mask


@dataclass(slots=True, eq=False)
class UsageState:
    """One container's usage model (an accumulator: adding samples changes it)."""

    cpu: Histogram
    memory: Histogram
    gpu_activity: Histogram | None = None
    gpu_framebuffer: Histogram | None = None
    cpu_peak: float = -math.inf
    memory_peak: float = -math.inf
    ooms: tuple[OomEvent, ...] = ()
    samples: int = 0
    first_seen: float = math.nan
    last_seen: float = math.nan
    newest_day: int = -1
    days_mask: int = 0
    half_life_s: float | None = field(default=None)

    @staticmethod
    def empty(half_life_s: float | None) -> UsageState:
        """A state with nothing seen yet (GPU histograms come with the first GPU sample)."""
        return UsageState(
            Histogram(CPU_BUCKETS, half_life_s),
            Histogram(MEMORY_BUCKETS, half_life_s),
            half_life_s=half_life_s,
        )

    def days_seen(self) -> int:
        """UTC days with at least one sample (within the DAYS_KEPT days up to the newest)."""
        return self.days_mask.bit_count()

    def history_days(self) -> float:
        """last_seen - first_seen in days (0 before two samples): the span confidence reads."""
        span = self.last_seen - self.first_seen
        return max(0.0, span / DAY_S) if math.isfinite(span) else 0.0

    def count(self, timestamps: FloatArray, samples: int) -> None:
        """Counts `samples` raw samples seen at `timestamps` (history only: no percentile changes)."""
        if timestamps.size == 0:
            return
        self.samples += samples
        lo, hi = float(timestamps.min()), float(timestamps.max())
        self.first_seen = lo if math.isnan(self.first_seen) else min(self.first_seen, lo)
        self.last_seen = hi if math.isnan(self.last_seen) else max(self.last_seen, hi)
        days = np.floor(timestamps / DAY_S).astype(np.int64)
        newest = max(int(days.max()), self.newest_day)
        shift = newest - self.newest_day if self.newest_day >= 0 else DAYS_KEPT
        kept = (self.days_mask << shift) & ((1 << DAYS_KEPT) - 1) if shift < DAYS_KEPT else 0
        self.days_mask = kept | _days_mask(days, newest)
        self.newest_day = newest

    def add_samples(
        self,
        timestamps: FloatArray,
        cpu_cores: FloatArray,
        memory_bytes: FloatArray,
        *,
        weight: float = 1.0,
        samples: int | None = None,
    ) -> None:
        """Adds one series' samples (NaN: a gap) with a weight factor (the template rule's); `samples`:
        the raw samples behind a pre-reduced series (None: one per timestamp with a value)."""
        seen = np.isfinite(cpu_cores) | np.isfinite(memory_bytes)
        n = int(np.count_nonzero(seen))
        if n == 0:
            return
        self.count(timestamps[seen], n if samples is None else samples)
        self.cpu.add_many(cpu_cores, weight, timestamps)
        self.memory.add_many(memory_bytes, weight, timestamps)
        self.cpu_peak = max(self.cpu_peak, float(np.fmax.reduce(cpu_cores)))
        self.memory_peak = max(self.memory_peak, float(np.fmax.reduce(memory_bytes)))

    def add_gpu(self, timestamps: FloatArray, activity: FloatArray, fb_used_mib: FloatArray) -> None:
        """Adds one GPU's activity (0..1) and framebuffer use (MiB) samples."""
        if self.gpu_activity is None or self.gpu_framebuffer is None:
            self.gpu_activity = Histogram(ACTIVITY_BUCKETS, self.half_life_s)
            self.gpu_framebuffer = Histogram(FRAMEBUFFER_BUCKETS, self.half_life_s)
        self.gpu_activity.add_many(activity, 1.0, timestamps)
        self.gpu_framebuffer.add_many(fb_used_mib, 1.0, timestamps)

    def add_oom(self, at: float, memory_bytes: float) -> None:
        """Records an OOM kill (the newest MAX_OOMS are kept)."""
        self.ooms = tuple(sorted((*self.ooms, OomEvent(at, memory_bytes)), key=lambda o: o.at))[-MAX_OOMS:]

    def merge(self, other: UsageState) -> None:
        """Adds another state of the same container (another time chunk or namespace slice of a cold
        start); same half-life required."""
        if other.half_life_s != self.half_life_s:
            raise ValueError("cannot merge usage states of different half-lives")
        self.cpu.merge(other.cpu)
        self.memory.merge(other.memory)
        for name in ("gpu_activity", "gpu_framebuffer"):
            theirs: Histogram | None = getattr(other, name)
            if theirs is not None:
                mine: Histogram | None = getattr(self, name)
                if mine is None:
                    mine = Histogram(theirs.scheme, self.half_life_s)
                    setattr(self, name, mine)
                mine.merge(theirs)
        self.cpu_peak, self.memory_peak = (
            max(self.cpu_peak, other.cpu_peak),
            max(self.memory_peak, other.memory_peak),
        )
        for o in other.ooms:
            self.add_oom(o.at, o.memory_bytes)
        if other.samples:
            days = np.array([other.newest_day - k for k in range(DAYS_KEPT) if other.days_mask >> k & 1])
            stamps = np.array([other.first_seen, other.last_seen, *(days * DAY_S)])
            self.count(stamps, other.samples)

    def oom_peak(self) -> float | None:
        """The largest working set of a recorded OOM kill (None: none)."""
        return max((o.memory_bytes for o in self.ooms), default=None)

    def nbytes(self) -> int:
        """Bytes of the histogram weights (the bulk of the in-memory state)."""
        hists = (self.cpu, self.memory, self.gpu_activity, self.gpu_framebuffer)
        return sum(h.nbytes() for h in hists if h is not None)
