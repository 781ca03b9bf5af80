"""How a namespace's CPU and working-set series are read onto the query grid: the cheapest way the server
offers, chosen once per source (PODSIZER_PROMETHEUS_READ, default auto).

- remote-read: Prometheus' /api/v1/read with streamed XOR chunks: the stored bytes, about a quarter of the
  CPU a range query costs the server and a fifth of its bytes on the wire (bench/bench_read_paths.py),
  decoded in numpy (xorchunks.py) and reduced to the grid here (rawgrid.py);
- export: VictoriaMetrics' /api/v1/export (JSON lines of raw samples), about half the server's CPU of a
  range query;
- query: range queries (rate over PODSIZER_CPU_RATE_WINDOW, max_over_time over a step): every server with
  the Prometheus query API (Thanos, Mimir's query frontend, ...).
auto asks for remote read first, then the export API, then queries, and keeps the first the server
answers: a 4xx, a 501 or an answer of another type means "not here" (logged once), not a failure.

Every path ends in the same GridUsage (series.py: one row per container, a point per grid step). Read raw,
CPU is the rate over the scrape intervals ending in the step and memory the step's highest sample
(rawgrid.py); a range query's rate averages its window (2 minutes: two intervals at a 60 s scrape) and
Prometheus 2's closed ranges hold one sample more (docs/recommender.md, "How samples are read").
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx
import numpy as np

from podsizer.settings.names import where
from podsizer.settings.source import DEFAULT_MAX_SAMPLES_PER_CYCLE, ReadPath
from recommender.input.prometheus import queries as q
from recommender.input.prometheus.caps import IMPOSSIBLE_TIME, CycleBudget, Origin
from recommender.input.prometheus.client import NON_FINITE, PromClient, RangeResult, split_over_time
from recommender.input.prometheus.export import measured, parsed
from recommender.input.prometheus.rawgrid import Grid, GridRows, MetricFold, RawSeries
from recommender.input.prometheus.remoteread import (
    CONTENT_TYPE,
    REQUEST_HEADERS,
    ChunkedAnswer,
    FrameError,
    Matcher,
    RemoteReadCodec,
    checked_counts,
)
from recommender.input.prometheus.series import ContainerKey, GridUsage, on_grid
from recommender.input.prometheus.xorchunks import ChunkError, batches, decode_range
from recommender.model import SourceError
from recommender.model.timegrid import IntArray

log = logging.getLogger("podsizer")

SLOW_SCRAPE_WINDOW_S = 600  # the CPU rate window of containers scraped too seldom for the set one


class NotOffered(Exception):
    """The server does not offer this read (a 4xx, a 501, or an answer of another type)."""


@dataclass(frozen=True)
class Usage:
    """A namespace's CPU and working set on the grid; `slow`: containers whose CPU is the rate over
    SLOW_SCRAPE_WINDOW_S (scraped less often than the rate window holds two samples)."""

    grid: GridUsage
    slow: set[ContainerKey] = field(default_factory=set)


@dataclass(frozen=True)
class GridSpec:
    """Where the points go: lo, lo + res, ... hi (seconds), and the CPU rate window."""

    lo: float
    hi: float
    res: float
    rate_s: int

    @property
    def grid(self) -> Grid:
        return Grid(self.lo, self.res, round((self.hi - self.lo) / self.res) + 1)


@dataclass(frozen=True)
class _Read:
    """One metric of one namespace read raw, within a cycle's budget."""

    metric: str
    ns: str
    scope: q.Scope
    budget: CycleBudget


def _offered(status: int, content_type: str, expected: str, origin: Origin) -> None:
    what = origin.what
    if status == 501 or 400 <= status < 500:
        raise NotOffered(f"{what}: HTTP {status}")
    if status != 200:
        raise SourceError(f"{origin.at} answered {what} with HTTP {status}")
    if not content_type.startswith(expected):
        raise NotOffered(f"{what}: answered {content_type or 'no content type'}, not {expected}")


def _dropped(exc: SourceError) -> bool:
    """Whether a read failed because its connection was dropped (reset, closed mid-answer) once made: a
    server (or a proxy in front of it) that will not serve that path, where another may work."""
    cause = exc.__cause__
    while cause is not None:
        if isinstance(cause, httpx.ConnectError):
            return False  # not reached at all: no other path would be
        if isinstance(cause, httpx.NetworkError | httpx.RemoteProtocolError):
            return True
        cause = cause.__cause__
    return False


class UsageReads:
    """Reads usage series by the path set (or found, for auto), the same for every namespace and thread;
    auto finds the path again when the server stops offering the one it took. Each read's samples are
    counted against the cycle's budget (cycle(); one per read outside a cycle) before they are decoded."""

    def __init__(
        self,
        client: PromClient,
        path: ReadPath = "auto",
        max_samples_per_cycle: int = DEFAULT_MAX_SAMPLES_PER_CYCLE,
    ) -> None:
        self.client = client
        self.wanted: ReadPath = path
        self.max_samples_per_cycle = max_samples_per_cycle
        self._chosen: ReadPath | None = None if path == "auto" else path
        self._lock = threading.Lock()
        self._codec: RemoteReadCodec | None = None
        self._cycle: CycleBudget | None = None
        self._cycles = 0
        self._cycle_lock = threading.Lock()

    @property
    def chosen(self) -> ReadPath | None:
        """The path in use (None until auto has found one)."""
        return self._chosen

    @contextmanager
    def cycle(self) -> Iterator[CycleBudget]:
        """One cycle's sample budget (PODSIZER_PROMETHEUS_MAX_SAMPLES_PER_CYCLE) for every read within the
        block, from any thread; a block opened within another is part of its cycle."""
        with self._cycle_lock:
            if self._cycles == 0:
                self._cycle = CycleBudget(self.max_samples_per_cycle)
            self._cycles += 1
            budget = self._cycle
        assert budget is not None
        try:
            yield budget
        finally:
            with self._cycle_lock:
                self._cycles -= 1
                if self._cycles == 0:
                    self._cycle = None

    def _budget(self) -> CycleBudget:
        """The open cycle's budget, else one for this read alone."""
        return self._cycle or CycleBudget(self.max_samples_per_cycle)

    def settle(self, ns: str, scope: q.Scope, spec: GridSpec) -> ReadPath:
        """The path in use, found now if auto has not yet (a raw read of `spec`: keep it short)."""
        if self._chosen is None:
            with self._lock:
                if self._chosen is None:
                    self._find(ns, scope, spec, self._budget())
        return self._chosen or "query"

    def usage(self, ns: str, scope: q.Scope, spec: GridSpec) -> Usage:
        budget = self._budget()
        path = self._chosen
        if path is None:
            with self._lock:  # the first namespace finds the path; the others wait for it
                if self._chosen is None:
                    found = self._find(ns, scope, spec, budget)
                    if found is not None:
                        return found
                path = self._chosen or "query"
        try:
            return self._read(path, ns, scope, spec, budget)
        except NotOffered as exc:  # raised for auto only: the server no longer offers the path it took
            return self._again(path, exc, ns, scope, spec, budget)

    def _again(
        self, path: ReadPath, exc: NotOffered, ns: str, scope: q.Scope, spec: GridSpec, budget: CycleBudget
    ) -> Usage:
        url = self.client.base_url
        with self._lock:
            if self._chosen == path:
                log.warning(
                    "usage samples: %s is no longer offered by %s (%s): finding the way again", path, url, exc
                )
                self._chosen = None
            if self._chosen is None:
                found = self._find(ns, scope, spec, budget)
                if found is not None:
                    return found
            again = self._chosen or "query"
        try:
            return self._read(again, ns, scope, spec, budget)
        except NotOffered as gone:
            raise SourceError(f"{url} stopped offering {again} while it was read ({gone})") from gone

    def _find(self, ns: str, scope: q.Scope, spec: GridSpec, budget: CycleBudget) -> Usage | None:
        """The first raw path the server answers (its read of `spec`), else range queries (None)."""
        url = self.client.base_url
        for path in ("remote-read", "export"):
            try:
                found = self._read(path, ns, scope, spec, budget)
            except NotOffered as exc:
                log.info("usage samples: %s is not offered by %s (%s)", path, url, exc)
                continue
            except SourceError as exc:
                if not _dropped(exc):
                    raise
                log.warning(
                    "usage samples: %s from %s lost its connection (%s): trying the next way", path, url, exc
                )
                continue
            self._chosen = path
            log.info("usage samples: read by %s from %s", path, url)
            return found
        self._chosen = "query"
        log.info("usage samples: read by range queries from %s", url)
        return None

    def _read(self, path: ReadPath, ns: str, scope: q.Scope, spec: GridSpec, budget: CycleBudget) -> Usage:
        if path == "query":
            return self._query(ns, scope, spec, budget)
        rows = GridRows(spec.grid)
        cpu = MetricFold(rows, counter=True, window_s=spec.rate_s, wide_s=SLOW_SCRAPE_WINDOW_S)
        mem = MetricFold(rows)
        read = self._remote_read if path == "remote-read" else self._export
        lo = spec.lo - spec.res - max(spec.rate_s, SLOW_SCRAPE_WINDOW_S)  # the intervals ending at lo
        try:
            read(_Read(q.CPU_METRIC, ns, scope, budget), cpu, lo, spec.hi)
            read(_Read(q.MEM_METRIC, ns, scope, budget), mem, spec.lo - spec.res, spec.hi)
        except NotOffered as exc:
            if self.wanted == "auto":
                raise
            raise SourceError(
                f"{where('prometheus_read')} is {path}, but {self.client.base_url} does not offer it "
                f"({exc}); set it to auto or query"
            ) from exc
        for fold in (cpu, mem):
            self.client.rejections.add(NON_FINITE, fold.rejected.non_finite)
            self.client.rejections.add(IMPOSSIBLE_TIME, fold.rejected.impossible)
        grid, slow = rows.usage()
        return Usage(grid, slow)

    def _query(self, ns: str, scope: q.Scope, spec: GridSpec, budget: CycleBudget) -> Usage:
        c, span = self.client, (spec.lo, spec.hi, spec.res)
        w = q.Window(round(spec.hi - spec.lo), round(spec.res), spec.rate_s)

        def ranged(promql: str) -> RangeResult:
            found = c.query_range_split(promql, *span)
            origin = Origin(c.base_url, "/api/v1/query_range", f"range query {promql!r}")
            budget.charge(sum(ts.size for _, ts, _ in found), origin)  # parsed: no more than its bytes
            return found

        cpu, memory = ranged(q.cpu_rate(ns, w, scope)), ranged(q.memory_peak(ns, w, scope))
        grid = on_grid(cpu, memory, spec.lo, spec.res, spec.grid.n)
        slow = grid.sparse_rows()
        if not slow.any() or spec.rate_s >= SLOW_SCRAPE_WINDOW_S:
            return Usage(grid)
        wide = q.Window(w.seconds, w.resolution_s, SLOW_SCRAPE_WINDOW_S)
        grid.fill_cpu(ranged(q.cpu_rate(ns, wide, scope)))
        return Usage(grid, {grid.keys[i] for i in np.flatnonzero(slow).tolist()})

    def _folded(
        self, fetch: Callable[[int, int, bool], None], fold: MetricFold, lo: float, hi: float
    ) -> None:
        """fetch(a, b, final) over [lo, hi] (ms), asked again over halves while an answer is over the byte
        or series cap (each folds its answer, in time order; final: no later piece follows), then the fold
        finished."""
        lo_ms, hi_ms = round(lo * 1000), round(hi * 1000)

        def halves(a: int, b: int) -> tuple[tuple[int, int], tuple[int, int]] | None:
            mid = (a + b) // 2
            return ((a, mid), (mid + 1, b)) if b - a >= 2000 else None

        split_over_time(lambda a, b: fetch(a, b, b >= hi_ms), [(lo_ms, hi_ms)], halves)
        fold.finish()

    def _remote_read(self, read: _Read, fold: MetricFold, lo: float, hi: float) -> None:
        if self._codec is None:
            self._codec = RemoteReadCodec()
        codec = self._codec
        matchers = [Matcher("__name__", read.metric), Matcher("namespace", read.ns)]
        matchers += [Matcher("container", "", "!="), Matcher("container", "POD", "!=")]  # CONTAINER_MATCHERS
        if read.scope.label:
            matchers.append(Matcher(read.scope.label, read.scope.cluster))
        origin = Origin(
            self.client.base_url, "/api/v1/read", f"remote read of {read.metric} in namespace {read.ns}"
        )

        def piece(a: int, b: int, final: bool) -> None:
            status, ctype, body = self.client.raw_read(
                origin.path, codec.request(matchers, a, b), REQUEST_HEADERS, origin.what
            )
            _offered(status, ctype, CONTENT_TYPE, origin)
            try:
                answer = codec.answer(body, origin)
                del body
                counts = checked_counts(answer, a, b, origin)
            except (FrameError, ChunkError) as exc:
                raise SourceError(f"{origin.at} sent a malformed {origin.what}: {exc}") from exc
            read.budget.charge(int(counts.sum()), origin)  # declared, before any is decoded
            fold.begin(final)
            _decoded(answer, counts, fold, origin)

        self._folded(piece, fold, lo, hi)

    def _export(self, read: _Read, fold: MetricFold, lo: float, hi: float) -> None:
        match = q.container_selector(read.metric, read.ns, read.scope)
        origin = Origin(self.client.base_url, "/api/v1/export", f"export of {match}")

        def piece(a: int, b: int, final: bool) -> None:
            form = [("match[]", match), ("start", f"{a / 1000:.3f}"), ("end", f"{b / 1000:.3f}")]
            status, ctype, body = self.client.raw_form(origin.path, form, origin.what)
            _offered(status, ctype, "application/stream+json", origin)
            lines = measured(body, b - a, origin)
            fold.begin(final)
            for part, last in parsed(lines, origin):
                read.budget.charge(part.samples, origin)  # a batch of lines, before it is folded
                fold.add(fold.series(part.labels), part, last)

        self._folded(piece, fold, lo, hi)


def _decoded(answer: ChunkedAnswer, counts: IntArray, fold: MetricFold, origin: Origin) -> None:
    """The answer's chunks decoded batch by batch (xorchunks.batches: bounded whatever they declare), each
    batch folded before the next is decoded."""
    sids = fold.series(answer.labels, answer.identities)
    for lo, hi in batches(counts):
        try:
            decoded = decode_range(answer.data, answer.starts, counts, lo, hi)
        except ChunkError as exc:
            raise SourceError(f"{origin.at} sent a malformed {origin.what}: {exc}") from exc
        of = answer.series_of[lo:hi]  # grouped by series
        first = np.flatnonzero(np.diff(of, prepend=-1))
        present = of[first]
        offsets = decoded.offsets[np.append(first, hi - lo)]
        labels = [answer.labels[s] for s in present.tolist()]
        part = RawSeries(labels, offsets, decoded.timestamps_ms, decoded.values)
        fold.add(sids[present], part, last=hi == answer.chunks)
