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
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import orjson

from podsizer.settings.names import where
from podsizer.settings.source import ReadPath
from recommender.input.prometheus import queries as q
from recommender.input.prometheus.client import NON_FINITE, PromClient, split_over_time
from recommender.input.prometheus.rawgrid import Grid, RawSeries, cleaned, grid_usage, joined
from recommender.input.prometheus.remoteread import (
    CONTENT_TYPE,
    REQUEST_HEADERS,
    ChunkedSeries,
    FrameError,
    Matcher,
    RemoteReadCodec,
)
from recommender.input.prometheus.series import ContainerKey, GridUsage, on_grid
from recommender.input.prometheus.xorchunks import ChunkError, decode_chunks
from recommender.model import FloatArray, SourceError
from recommender.model.timegrid import IntArray

log = logging.getLogger("podsizer")
_T = TypeVar("_T")

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


def _offered(status: int, content_type: str, expected: str, what: str) -> None:
    if status == 501 or 400 <= status < 500:
        raise NotOffered(f"{what}: HTTP {status}")
    if status != 200:
        raise SourceError(f"{what} failed with HTTP {status}")
    if not content_type.startswith(expected):
        raise NotOffered(f"{what}: answered {content_type or 'no content type'}, not {expected}")


class UsageReads:
    """Reads usage series by the path set (or found, for auto), the same for every namespace and thread."""

    def __init__(self, client: PromClient, path: ReadPath = "auto") -> None:
        self.client = client
        self.wanted: ReadPath = path
        self._chosen: ReadPath | None = None if path == "auto" else path
        self._lock = threading.Lock()
        self._codec: RemoteReadCodec | None = None

    @property
    def chosen(self) -> ReadPath | None:
        """The path in use (None until auto has found one)."""
        return self._chosen

    def settle(self, ns: str, scope: q.Scope, spec: GridSpec) -> ReadPath:
        """The path in use, found now if auto has not yet (a raw read of `spec`: keep it short)."""
        if self._chosen is None:
            with self._lock:
                if self._chosen is None:
                    self._find(ns, scope, spec)
        return self._chosen or "query"

    def usage(self, ns: str, scope: q.Scope, spec: GridSpec) -> Usage:
        path = self._chosen
        if path is None:
            with self._lock:  # the first namespace finds the path; the others wait for it
                if self._chosen is None:
                    found = self._find(ns, scope, spec)
                    if found is not None:
                        return found
                path = self._chosen or "query"
        return self._read(path, ns, scope, spec)

    def _find(self, ns: str, scope: q.Scope, spec: GridSpec) -> Usage | None:
        """The first raw path the server answers (its read of `spec`), else range queries (None)."""
        for path in ("remote-read", "export"):
            try:
                found = self._read(path, ns, scope, spec)
            except NotOffered as exc:
                log.info("usage samples: %s is not offered by %s (%s)", path, self.client.base_url, exc)
                continue
            self._chosen = path
            log.info("usage samples: read by %s from %s", path, self.client.base_url)
            return found
        self._chosen = "query"
        log.info("usage samples: read by range queries from %s", self.client.base_url)
        return None

    def _read(self, path: ReadPath, ns: str, scope: q.Scope, spec: GridSpec) -> Usage:
        if path == "query":
            return self._query(ns, scope, spec)
        lo = spec.lo - spec.res - max(spec.rate_s, SLOW_SCRAPE_WINDOW_S)  # the intervals ending at lo
        try:
            if path == "remote-read":
                cpu_parts = self._split(
                    lambda a, b: self._remote_read(q.CPU_METRIC, ns, scope, a, b), lo, spec.hi
                )
                mem_parts = self._split(
                    lambda a, b: self._remote_read(q.MEM_METRIC, ns, scope, a, b), spec.lo - spec.res, spec.hi
                )
                decoded = self._decoded([*cpu_parts, *mem_parts], f"remote read in namespace {ns}")
                cpu, mem = joined(decoded[: len(cpu_parts)]), joined(decoded[len(cpu_parts) :])
            else:
                cpu = joined(
                    self._split(lambda a, b: self._export(q.CPU_METRIC, ns, scope, a, b), lo, spec.hi)
                )
                mem = joined(
                    self._split(
                        lambda a, b: self._export(q.MEM_METRIC, ns, scope, a, b), spec.lo - spec.res, spec.hi
                    )
                )
        except NotOffered as exc:
            if self.wanted == "auto":
                raise
            raise SourceError(
                f"{where('prometheus_read')} is {path}, but {self.client.base_url} does not offer it "
                f"({exc}); set it to auto or query"
            ) from exc
        return self._on_grid(cpu, mem, spec)

    def _on_grid(self, cpu_raw: RawSeries, mem_raw: RawSeries, spec: GridSpec) -> Usage:
        cpu_raw, bad_cpu = cleaned(cpu_raw)
        mem_raw, bad_mem = cleaned(mem_raw)
        self.client.rejections.add(NON_FINITE, bad_cpu + bad_mem)
        grid, slow = grid_usage(cpu_raw, mem_raw, spec.grid, spec.rate_s, SLOW_SCRAPE_WINDOW_S)
        return Usage(grid, slow)

    def _query(self, ns: str, scope: q.Scope, spec: GridSpec) -> Usage:
        c, span = self.client, (spec.lo, spec.hi, spec.res)
        w = q.Window(round(spec.hi - spec.lo), round(spec.res), spec.rate_s)
        grid = on_grid(
            c.query_range_split(q.cpu_rate(ns, w, scope), *span),
            c.query_range_split(q.memory_peak(ns, w, scope), *span),
            spec.lo,
            spec.res,
            spec.grid.n,
        )
        slow = grid.sparse_rows()
        if not slow.any() or spec.rate_s >= SLOW_SCRAPE_WINDOW_S:
            return Usage(grid)
        wide = q.Window(w.seconds, w.resolution_s, SLOW_SCRAPE_WINDOW_S)
        grid.fill_cpu(c.query_range_split(q.cpu_rate(ns, wide, scope), *span))
        return Usage(grid, {grid.keys[i] for i in np.flatnonzero(slow).tolist()})

    def _split(self, fetch: Callable[[int, int], _T], lo: float, hi: float) -> list[_T]:
        """fetch over [lo, hi] (ms), asked again over halves while an answer is over the byte cap: the
        answers of consecutive pieces, in time order."""

        def halves(a: int, b: int) -> tuple[tuple[int, int], tuple[int, int]] | None:
            mid = (a + b) // 2
            return ((a, mid), (mid + 1, b)) if b - a >= 2000 else None

        return split_over_time(fetch, [(round(lo * 1000), round(hi * 1000))], halves)

    def _remote_read(self, metric: str, ns: str, scope: q.Scope, a: int, b: int) -> list[ChunkedSeries]:
        """The series of one remote read, their chunks not decoded yet (_decoded: many answers at once)."""
        if self._codec is None:
            self._codec = RemoteReadCodec()
        matchers = [Matcher("__name__", metric), Matcher("namespace", ns)]
        matchers += [Matcher("container", "", "!="), Matcher("container", "POD", "!=")]  # CONTAINER_MATCHERS
        if scope.label:
            matchers.append(Matcher(scope.label, scope.cluster))
        what = f"remote read of {metric} in namespace {ns}"
        status, ctype, body = self.client.raw_read(
            "/api/v1/read", self._codec.request(matchers, a, b), REQUEST_HEADERS, what
        )
        _offered(status, ctype, CONTENT_TYPE, what)
        try:
            return list(self._codec.series(body))
        except FrameError as exc:
            raise SourceError(f"Prometheus at {self.client.base_url} sent a malformed {what}: {exc}") from exc

    def _decoded(self, answers: list[list[ChunkedSeries]], what: str) -> list[RawSeries]:
        """Every answer's chunks decoded in one pass (whole chunks come back: the samples outside a read's
        range fall off the grid, rawgrid, or stay unused)."""
        try:
            decoded = decode_chunks([c for found in answers for s in found for c in s.chunks])
        except ChunkError as exc:
            raise SourceError(f"Prometheus at {self.client.base_url} sent a malformed {what}: {exc}") from exc
        out, first = [], 0
        for found in answers:
            per_series = np.array([len(s.chunks) for s in found], dtype=np.int64)
            bounds = first + np.concatenate([[0], np.cumsum(per_series)]).astype(np.int64)
            first = int(bounds[-1])
            offsets = decoded.offsets[bounds]
            a, b = int(offsets[0]), int(offsets[-1])
            out.append(
                RawSeries(
                    [s.labels for s in found], offsets - a, decoded.timestamps_ms[a:b], decoded.values[a:b]
                )
            )
        return out

    def _export(self, metric: str, ns: str, scope: q.Scope, a: int, b: int) -> RawSeries:
        match = q.container_selector(metric, ns, scope)
        what = f"export of {match}"
        form = [("match[]", match), ("start", f"{a / 1000:.3f}"), ("end", f"{b / 1000:.3f}")]
        status, ctype, body = self.client.raw_form("/api/v1/export", form, what)
        _offered(status, ctype, "application/stream+json", what)
        try:
            return _export_lines(bytes(body))
        except (ValueError, KeyError, TypeError, orjson.JSONDecodeError) as exc:
            raise SourceError(f"{self.client.base_url} sent a malformed {what}: {exc}") from exc


_VALUES, _TIMES = b',"values":[', b'],"timestamps":['
_NUMBER = b"0123456789.eE+-,InfNa"
"""What a run of numbers may hold: VictoriaMetrics writes +Inf, -Inf and NaN as bare words (not JSON)."""


def _export_line(line: bytes) -> tuple[dict[str, str], IntArray, FloatArray]:
    """One series of VictoriaMetrics' export. orjson reads it (into lists: measured faster than numpy's
    text parser, bench/bench_read_paths.py); a line with bare +Inf, -Inf or NaN words, which is not JSON,
    has its numbers read by numpy instead."""
    try:
        row = orjson.loads(line)
    except orjson.JSONDecodeError:
        return _export_words(line)
    t = np.array(row["timestamps"], dtype=np.int64)
    v = np.array([math.nan if x is None else x for x in row["values"]], dtype=np.float64)
    if t.size != v.size:
        raise ValueError(f"a series with {t.size} timestamps and {v.size} values")
    return {str(k): str(x) for k, x in row["metric"].items()}, t, v


def _export_words(line: bytes) -> tuple[dict[str, str], IntArray, FloatArray]:
    head, mid, end = line.find(_VALUES), line.find(_TIMES), line.rfind(b"]}")
    values, times = line[head + len(_VALUES) : mid], line[mid + len(_TIMES) : end]
    if not (0 < head < mid < end) or values.translate(None, _NUMBER) or times.translate(None, _NUMBER):
        raise ValueError(f"an export line that is neither JSON nor numbers: {line[:120]!r}")
    metric = orjson.loads(line[:head] + b"}")["metric"]
    v = np.fromstring(values, dtype=np.float64, sep=",") if values else np.empty(0)
    t = np.fromstring(times, dtype=np.int64, sep=",") if times else np.empty(0, np.int64)
    if (v.size, t.size) != (values.count(b",") + bool(values), times.count(b",") + bool(times)):
        raise ValueError(f"a run of numbers that does not parse whole: {line[head : head + 120]!r}")
    if t.size != v.size:
        raise ValueError(f"a series with {t.size} timestamps and {v.size} values")
    return {str(k): str(x) for k, x in metric.items()}, t, v


def _export_lines(body: bytes) -> RawSeries:
    """VictoriaMetrics' export: one JSON object a line with the series' labels, values and timestamps."""
    labels, ts, vs = [], [], []
    for line in body.splitlines():
        if not line.strip():
            continue
        found, t, v = _export_line(line)
        order = np.argsort(t, kind="stable")
        labels.append(found)
        ts.append(t[order])
        vs.append(v[order])
    sizes = np.array([t.size for t in ts], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    empty = np.empty(0)
    return RawSeries(
        labels,
        offsets,
        np.concatenate(ts) if ts else empty.astype(np.int64),
        np.concatenate(vs) if vs else empty,
    )
