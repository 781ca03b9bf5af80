"""Per (workload, container, pod template) usage state for incremental cycles: decaying histograms plus
the counts, peaks, OOM kills, facts and hourly demand that sizing and confidence read
(recommender.incremental merges a container's templates with the replaced-template rule).

- cpu: one sample per CPU sample (cores); memory: one sample per interval, its peak working set (bytes;
  a Prometheus step's max_over_time, or a raw sample); gpu_activity (0..1) and gpu_framebuffer (MiB used)
  only for containers with GPUs. All decay alike (recommender.model.histogram).
- cpu_peak / memory_peak: the largest sample ever added, unweighted (a peak is a peak however old);
  day_peaks / day_peak_at: the PEAK_TOP highest cpu and memory samples of each of the PEAK_DAYS UTC days
  up to the newest, at distinct times, and their times: a window's top samples without its samples, as
  recommender.sizing.robust needs them to tell a corroborated peak from one or two bad scrapes (samples
  of several pods at one time are one scrape: the highest of them counts, `top_distinct`).
- day_cpu: each of those days' CPU p50, p90, p95 and p99 (undecayed) and hours with samples
  (recommender.model.recurrence's input): a day's samples go into an undecayed histogram of that day
  (open_cpu, with the hours seen in open_hours) until `close_days` turns every day before the newest into
  its column (state_build calls it once a build's samples are in, so that every pod of a chunk is).
- samples, first_seen, last_seen (epoch seconds, NaN before any sample) and the UTC days with a sample
  (a bitmap of the DAYS_KEPT days up to the newest one) are what confidence reads.
- ooms: the OOM kills (time, working set), the newest MAX_OOMS.
- facts: what the newest pod's spec says (requests, limits, labels), distinct pods and Jobs seen, samples
  rejected by rule; hourly: the hourly mean of each pod summed over pods (demand, the forecast's input),
  the raw samples of each hour (a window's sample count) and the CPU counter's resets among them (a reset
  storm lowers confidence), for the DEMAND_HOURS hours up to the newest.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from podsizer.api.identity import WorkloadRef
from podsizer.keys import ours
from recommender.model import FloatArray
from recommender.model.histogram import (
    ACTIVITY_BUCKETS,
    CPU_BUCKETS,
    FRAMEBUFFER_BUCKETS,
    MEMORY_BUCKETS,
    Histogram,
    percentiles_of,
)
from recommender.model.recurrence import DayUsage

DAY_S = 86400.0
DAYS_KEPT = 63
"""Days the seen-days bitmap covers (bit k: the k-th day before the newest day with a sample)."""
MAX_OOMS = 16
PEAK_DAYS = 16
"""Days of daily peaks kept: a window of up to PEAK_DAYS - 1 days has exact peaks (to the day)."""
HOUR_S = 3600.0
DEMAND_HOURS = 24 * 8 + 1
"""Hours of demand kept (an 8-day window's; the forecast reads the window's demand)."""
PEAK_TOP = 3
"""Highest samples kept per day and resource: a peak is corroborated by the third-highest scrape."""
CPU_PEAKS, MEMORY_PEAKS = 0, PEAK_TOP
"""The first row of each resource's top samples in day_peaks and day_peak_at."""
HOURLY_ROWS = 4
RAW_SAMPLES, CPU_RESETS = 2, 3
"""Rows of the hourly array after the demand's cpu (0) and memory (1): raw samples, CPU counter resets."""
DAY_ROWS = 5
"""Rows of day_cpu: p50, p90, p95, p99, hours with samples."""
DAY_QS = (0.5, 0.9, 0.95, 0.99)
MAX_RECENT = 64
"""Pods (and Jobs) of the newest cycle remembered, so that one pod seen again is not counted twice."""
F32 = npt.NDArray[np.float32]


@dataclass(frozen=True, order=True)
class StateKey:
    """Whose state: one container of one workload."""

    workload: WorkloadRef
    container: str
    template: str = ""
    """The pod template (ReplicaSet / ReplicationController name); "" for other owners."""

    @property
    def container_key(self) -> tuple[WorkloadRef, str]:
        return (self.workload, self.container)


def workload_order(w: WorkloadRef) -> tuple[str, str, str, str]:
    """WorkloadRef's own order as one flat tuple: sorting thousands of keys compares tuples of strings,
    not dataclasses field by field."""
    return (w.namespace, w.kind, w.name, w.cluster)


def state_order(key: StateKey) -> tuple[str, str, str, str, str, str]:
    """StateKey's own order (workload, container, template) as one flat tuple."""
    return (*workload_order(key.workload), key.container, key.template)


@dataclass(frozen=True)
class OomEvent:
    """An OOM kill: when (epoch seconds) and the working set just before (bytes)."""

    at: float
    memory_bytes: float


def _days_mask(days: Iterable[int], newest: int) -> int:
    """The bitmap of `days` (UTC day numbers) relative to `newest` (bit 0), within DAYS_KEPT."""
    mask = 0
    for d in days:
        if 0 <= newest - d < DAYS_KEPT:
            mask |= 1 << (newest - d)
    return mask


@dataclass(slots=True)
class Facts:
    """What the pods of one state say beyond their samples (the newest pod's spec wins)."""

    requests: dict[str, float] = field(default_factory=dict)
    limits: dict[str, float] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)  # its podsizer.io/ ones only
    init_container: bool = False
    newest_pod_at: float = -math.inf
    pods: int = 0
    jobs: int = 0
    recent_pods: frozenset[str] = frozenset()
    recent_jobs: frozenset[str] = frozenset()
    rejected: dict[tuple[str, str], int] = field(default_factory=dict)
    pod_requests: dict[str, dict[str, float]] = field(default_factory=dict)
    """Each pod's requests for the container, of the newest MAX_RECENT pods seen (the request mix)."""

    def see_pod(self, pod: str, job: str | None, at: float, spec: PodSpecFacts | None) -> None:
        """One pod with samples up to `at`; its spec (when known) replaces an older pod's."""
        if pod not in self.recent_pods:
            self.pods += 1
            self.recent_pods = _bounded(self.recent_pods | {pod})
        if job and job not in self.recent_jobs:
            self.jobs += 1
            self.recent_jobs = _bounded(self.recent_jobs | {job})
        newest = next(reversed(self.pod_requests), None)
        if spec is not None and not (newest == pod and self.pod_requests[pod] == spec[0]):
            self.pod_requests.pop(pod, None)  # the newest pods last
            self.pod_requests[pod] = dict(spec[0])
            for old in list(self.pod_requests)[:-MAX_RECENT]:
                del self.pod_requests[old]
        self.see_spec(at, spec)

    def see_spec(self, at: float, spec: PodSpecFacts | None) -> None:
        """A pod's spec as of `at` (when known; samples or not): it replaces an older pod's (copied only
        where it differs: every cycle sees the same pods again)."""
        if spec is not None and at >= self.newest_pod_at:
            self.newest_pod_at = at
            if spec[0] != self.requests:
                self.requests = dict(spec[0])
            if spec[1] != self.limits:
                self.limits = dict(spec[1])
            if spec[2] != self.labels:
                self.labels = dict(spec[2])
            annotations = ours(spec[4]) if spec[4] else {}
            if annotations != self.annotations:
                self.annotations = dict(annotations)
        self.init_container = self.init_container or (spec is not None and spec[3])

    def reject(self, counts: dict[tuple[str, str], int]) -> None:
        for k, n in counts.items():
            self.rejected[k] = self.rejected.get(k, 0) + n


PodSpecFacts = tuple[Mapping[str, float], Mapping[str, float], Mapping[str, str], bool, Mapping[str, str]]
"""A pod's (requests, limits, labels, is-init-container, annotations) for one container."""


def _bounded(names: frozenset[str]) -> frozenset[str]:
    return names if len(names) <= MAX_RECENT else frozenset(sorted(names)[-MAX_RECENT:])


def _empty_peaks() -> FloatArray:
    return np.full((2 * PEAK_TOP, PEAK_DAYS), np.nan)


Peak = tuple[float, float]
"""A sample as the daily peaks hold it: (value, time in epoch seconds)."""


def top_distinct(peaks: Iterable[Peak], k: int = PEAK_TOP) -> list[Peak]:
    """The k highest samples at distinct times, highest first (ties: earlier first): of several samples at
    one time (pods of one workload scraped together) only the highest counts. Exact whatever the grouping:
    the top k of top-k lists is the top k of their union."""
    best: dict[float, float] = {}
    for value, at in peaks:
        if value > best.get(at, -math.inf):
            best[at] = value
    return sorted(((v, t) for t, v in best.items()), key=lambda p: (-p[0], p[1]))[:k]


def _empty_days() -> F32:
    return np.full((DAY_ROWS, PEAK_DAYS), np.nan, dtype=np.float32)


def _empty_demand() -> F32:
    return np.full((HOURLY_ROWS, DEMAND_HOURS), np.nan, dtype=np.float32)


@dataclass(slots=True, eq=False)
class UsageState:
    """One container's usage model under one pod template (an accumulator: adding samples changes it)."""

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
    day_peaks: FloatArray = field(default_factory=_empty_peaks)
    """Rows: the PEAK_TOP highest cpu samples (from CPU_PEAKS), then memory's (from MEMORY_PEAKS), highest
    first; column k: newest_day - k (NaN: none)."""
    day_peak_at: FloatArray = field(default_factory=_empty_peaks)
    """The time (epoch seconds) of each sample of day_peaks."""
    demand: F32 = field(default_factory=_empty_demand)
    """Rows: cpu cores, memory bytes (demand), raw samples (RAW_SAMPLES), CPU counter resets (CPU_RESETS);
    column k: hour newest_hour - DEMAND_HOURS + 1 + k."""
    newest_hour: int = -1
    facts: Facts = field(default_factory=Facts)
    day_cpu: F32 = field(default_factory=_empty_days)
    """Rows DAY_ROWS; column k: newest_day - k (as day_peaks)."""
    open_cpu: dict[int, Histogram] = field(default_factory=dict)
    """UTC day -> the undecayed CPU histogram of a day not closed yet."""
    open_hours: dict[int, int] = field(default_factory=dict)
    """UTC day -> bit h set when hour h of that open day has a sample."""

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
        days = np.unique(np.floor(timestamps / DAY_S).astype(np.int64)).tolist()
        self.count_seen(float(timestamps.min()), float(timestamps.max()), days, samples)

    def count_seen(self, first: float, last: float, days: list[int], samples: int) -> None:
        """count() of `samples` raw samples seen from `first` to `last` on the UTC `days` (at least one)."""
        self.samples += samples
        self.first_seen = first if math.isnan(self.first_seen) else min(self.first_seen, first)
        self.last_seen = last if math.isnan(self.last_seen) else max(self.last_seen, last)
        newest = max(max(days), self.newest_day)
        shift = newest - self.newest_day if self.newest_day >= 0 else DAYS_KEPT
        kept = (self.days_mask << shift) & ((1 << DAYS_KEPT) - 1) if shift < DAYS_KEPT else 0
        self.days_mask = kept | _days_mask(days, newest)
        self._shift_peaks(newest - self.newest_day if self.newest_day >= 0 else PEAK_DAYS)
        self.newest_day = newest

    def _shift_peaks(self, days: int) -> None:
        if days <= 0:
            return
        kept = max(0, PEAK_DAYS - days)
        pad = np.full((2 * PEAK_TOP, PEAK_DAYS - kept), np.nan)
        self.day_peaks = np.concatenate([pad, self.day_peaks[:, :kept]], 1)
        self.day_peak_at = np.concatenate([pad, self.day_peak_at[:, :kept]], 1)
        points = self.day_cpu[:, : max(0, PEAK_DAYS - days)]
        pad = np.full((DAY_ROWS, PEAK_DAYS - points.shape[1]), np.nan, dtype=np.float32)
        self.day_cpu = np.concatenate([pad, points], 1)

    def add_day_cpu(self, timestamps: FloatArray, cpu: FloatArray) -> None:
        """Folds finite CPU samples into the undecayed histogram of their UTC day; a day already closed,
        or older than the PEAK_DAYS kept, takes no more."""
        ok = np.isfinite(cpu)
        if not ok.any():
            return
        ts, values = timestamps[ok], cpu[ok]
        days = np.floor(ts / DAY_S).astype(np.int64)
        for d in np.unique(days).tolist():
            if not self.takes_day(d):
                continue
            on = days == d
            self.open_day(d).add_many(values[on], 1.0, ts[on])
            hours = np.unique(np.floor(ts[on] / HOUR_S).astype(np.int64) - 24 * d)
            self.see_hours(d, sum(1 << int(h) for h in hours.tolist()))

    def takes_day(self, day: int) -> bool:
        """Whether samples of `day` still go into its histogram: open, or not seen yet and within the
        PEAK_DAYS kept."""
        back = self.newest_day - day
        return day in self.open_cpu or (0 <= back < PEAK_DAYS and not np.isfinite(self.day_cpu[0, back]))

    def see_hours(self, day: int, mask: int) -> None:
        """Marks hours of an open day as seen (bit h: hour h)."""
        self.open_hours[day] = self.open_hours.get(day, 0) | mask

    def open_day(self, day: int) -> Histogram:
        """The undecayed CPU histogram of an open day (a new one for a day not seen yet)."""
        h = self.open_cpu.get(day)
        if h is None:
            h = self.open_cpu[day] = Histogram(CPU_BUCKETS, None)
        return h

    def close_days(self) -> None:
        """Every open day before the newest becomes its day_cpu column, its histogram dropped."""
        for d in sorted(d for d in self.open_cpu if d < self.newest_day):
            back = self.newest_day - d
            if back < PEAK_DAYS:
                self.day_cpu[:, back] = self._open_points(d)
            del self.open_cpu[d]
            self.open_hours.pop(d, None)

    def _open_points(self, day: int) -> list[float]:
        h = self.open_cpu[day]
        if h.is_empty():
            return [math.nan] * DAY_ROWS
        return [*h.percentiles(DAY_QS), float(self.open_hours.get(day, 0).bit_count())]

    def day_usage(self, since: float, open_points: Mapping[int, list[float]] | None = None) -> list[DayUsage]:
        """The CPU summary of each UTC day from `since`'s day on (closed or open); `open_points`: the open
        days' summaries when already computed (open_day_points)."""
        days = max(0, min(PEAK_DAYS, self.newest_day - math.floor(since / DAY_S) + 1))
        out = []
        for back, closed in enumerate(self.day_cpu[:, :days].T.tolist()):
            day = self.newest_day - back
            column = closed
            if day in self.open_cpu:
                column = self._open_points(day) if open_points is None else open_points[day]
            if math.isfinite(column[0]):
                out.append(DayUsage(day, int(column[4]), (column[0], column[1], column[2], column[3])))
        return out

    def add_day_peaks(self, timestamps: FloatArray, values: FloatArray, row: int) -> None:
        """Folds each day's PEAK_TOP highest finite values into the rows from `row` (merge_day_top)."""
        ok = np.isfinite(values)
        if not ok.any():
            return
        ts, vals = timestamps[ok], values[ok]
        days = np.floor(ts / DAY_S).astype(np.int64)
        for d in np.unique(days).tolist():
            on = np.flatnonzero(days == d)
            top = on[np.argsort(-vals[on], kind="stable")[:PEAK_TOP]]
            self.merge_day_top(d, row, list(zip(vals[top].tolist(), ts[top].tolist(), strict=True)))

    def merge_day_top(self, day: int, row: int, peaks: Sequence[Peak]) -> None:
        """A day's highest samples (value, time) merged into the PEAK_TOP held from `row` (top_distinct):
        the one daily-peaks rule (add_day_peaks and the batch fold both come here); a day outside the
        PEAK_DAYS held takes nothing."""
        back = self.newest_day - day
        if not 0 <= back < PEAK_DAYS or not peaks:
            return
        lowest = float(self.day_peaks[row + PEAK_TOP - 1, back])  # NaN: fewer held
        if lowest == lowest and all(v < lowest for v, _ in peaks):
            return  # the usual case in a cycle: nothing new reaches the day's top
        values, times = self.day_peaks, self.day_peak_at
        held = [(float(values[r, back]), float(times[r, back])) for r in range(row, row + PEAK_TOP)]
        top = top_distinct([*(p for p in held if p[0] == p[0]), *peaks])  # p[0] == p[0]: not NaN
        for r, (value, at) in enumerate(top, start=row):
            values[r, back], times[r, back] = value, at
        for r in range(row + len(top), row + PEAK_TOP):
            values[r, back] = times[r, back] = math.nan

    def window_peaks(self, since: float) -> tuple[list[Peak], list[Peak]]:
        """The held top cpu and memory samples (value, time) of the days from `since`'s day on."""
        days = min(PEAK_DAYS, self.newest_day - math.floor(since / DAY_S) + 1)
        if days <= 0:
            return [], []
        out: list[list[Peak]] = []
        for row in (CPU_PEAKS, MEMORY_PEAKS):
            values = self.day_peaks[row : row + PEAK_TOP, :days]
            at = self.day_peak_at[row : row + PEAK_TOP, :days]
            held = np.isfinite(values)
            out.append(list(zip(values[held].tolist(), at[held].tolist(), strict=True)))
        return out[0], out[1]

    def add_samples(
        self,
        timestamps: FloatArray,
        cpu_cores: FloatArray,
        memory_bytes: FloatArray,
        *,
        weight: float = 1.0,
        samples: int | None = None,
        resets: int = 0,
    ) -> None:
        """Adds one series' samples (NaN: a gap) with a weight factor; `samples`: the raw samples behind a
        pre-reduced series (None: one per timestamp with a value); `resets`: the CPU counter's resets
        among them (spread over the series' hours as its samples are)."""
        seen = np.isfinite(cpu_cores) | np.isfinite(memory_bytes)
        n = int(np.count_nonzero(seen))
        if n == 0:
            return
        self.count(timestamps[seen], n if samples is None else samples)
        # the raw samples by hour: a pre-reduced series' count spread over its points
        per_point = 1.0 if samples is None else samples / n
        hours = np.floor(timestamps[seen] / HOUR_S).astype(np.int64)
        self.count_hours(hours, np.full(n, per_point))
        if resets:
            self.count_hours(hours, np.full(n, resets / n), CPU_RESETS)
        self.cpu.add_many(cpu_cores, weight, timestamps)
        self.memory.add_many(memory_bytes, weight, timestamps)
        self.add_day_cpu(timestamps, cpu_cores)
        self.cpu_peak = max(self.cpu_peak, float(np.fmax.reduce(cpu_cores)))
        self.memory_peak = max(self.memory_peak, float(np.fmax.reduce(memory_bytes)))
        self.add_day_peaks(timestamps, cpu_cores, CPU_PEAKS)
        self.add_day_peaks(timestamps, memory_bytes, MEMORY_PEAKS)

    def set_demand(self, first_hour: int, cpu: FloatArray, memory: FloatArray) -> None:
        """Replaces the demand of hours first_hour .. first_hour + len - 1 where cpu or memory has a value
        (a later read of an hour holds every pod of it: it replaces, never adds)."""
        self._advance_hours(first_hour + cpu.size - 1)
        at = first_hour - (self.newest_hour - DEMAND_HOURS + 1) + np.arange(cpu.size)
        ok = (at >= 0) & (at < DEMAND_HOURS) & (np.isfinite(cpu) | np.isfinite(memory))
        self.demand[0, at[ok]] = cpu[ok]
        self.demand[1, at[ok]] = memory[ok]

    def _advance_hours(self, last: int) -> None:
        """Makes `last` the newest hour held when it is later (older hours drop off the front)."""
        if last <= self.newest_hour:
            return
        shift = last - self.newest_hour if self.newest_hour >= 0 else DEMAND_HOURS
        kept = self.demand[:, min(shift, DEMAND_HOURS) :]
        pad = np.full((HOURLY_ROWS, DEMAND_HOURS - kept.shape[1]), np.nan, np.float32)
        self.demand = np.concatenate([kept, pad], 1)
        self.newest_hour = last

    def count_hours(self, hours: npt.NDArray[np.int64], samples: FloatArray, row: int = RAW_SAMPLES) -> None:
        """Adds raw samples (or, row CPU_RESETS, counter resets) to their hours (absolute hour numbers)."""
        if hours.size == 0:
            return
        self._advance_hours(int(hours.max()))
        at = hours - (self.newest_hour - DEMAND_HOURS + 1)
        ok = at >= 0
        if not ok.any():
            return
        added = np.bincount(at[ok], weights=samples[ok], minlength=DEMAND_HOURS)
        held = self.demand[row]
        self.demand[row] = np.where(added > 0, np.nan_to_num(held) + added, held)

    def count_hour(self, hour: int, samples: float, row: int = RAW_SAMPLES) -> None:
        """count_hours() of one hour (an absolute hour number) and its count, without arrays."""
        if samples <= 0:
            return
        self._advance_hours(hour)
        at = hour - (self.newest_hour - DEMAND_HOURS + 1)
        if at >= 0:
            held = float(self.demand[row, at])
            self.demand[row, at] = samples if math.isnan(held) else held + samples

    def samples_since(self, t: float, row: int = RAW_SAMPLES) -> int:
        """Raw samples (or, row CPU_RESETS, counter resets) from the hour holding `t` on (within the
        DEMAND_HOURS hours held)."""
        first = math.floor(t / HOUR_S) - (self.newest_hour - DEMAND_HOURS + 1)
        return round(float(np.nansum(self.demand[row, max(0, first) :], dtype=np.float64)))

    def demand_hours(self, first_hour: int, hours: int) -> tuple[FloatArray, FloatArray]:
        """cpu and memory demand of hours first_hour .. first_hour + hours - 1 (NaN: none)."""
        out = np.full((2, hours), np.nan)
        at = first_hour - (self.newest_hour - DEMAND_HOURS + 1) + np.arange(hours)
        ok = (at >= 0) & (at < DEMAND_HOURS)
        out[:, ok] = self.demand[:2, at[ok]]
        return out[0], out[1]

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

    def oom_peak(self, since: float = -math.inf) -> float | None:
        """The largest working set of a recorded OOM kill at or after `since` (None: none)."""
        return max((o.memory_bytes for o in self.ooms if o.at >= since), default=None)

    def nbytes(self) -> int:
        """Bytes of the histogram weights, daily peaks and demand (the bulk of the in-memory state)."""
        hists = (self.cpu, self.memory, self.gpu_activity, self.gpu_framebuffer, *self.open_cpu.values())
        arrays = self.day_peaks.nbytes + self.day_peak_at.nbytes + self.demand.nbytes + self.day_cpu.nbytes
        return sum(h.nbytes() for h in hists if h is not None) + arrays


def open_day_points(states: Sequence[UsageState]) -> list[dict[int, list[float]]]:
    """Each state's open days' CPU summaries (UsageState._open_points' columns), the percentiles of every
    open day's histogram computed at once."""
    hists: list[Histogram] = []
    where: list[tuple[int, int]] = []
    for i, s in enumerate(states):
        for day, h in s.open_cpu.items():
            hists.append(h)
            where.append((i, day))
    out: list[dict[int, list[float]]] = [{} for _ in states]
    if not hists:
        return out
    points, _ = percentiles_of(hists, DAY_QS)
    for (i, day), row in zip(where, points.tolist(), strict=True):
        if math.isnan(row[0]):
            out[i][day] = [math.nan] * DAY_ROWS
        else:
            out[i][day] = [*row, float(states[i].open_hours.get(day, 0).bit_count())]
    return out
