"""VictoriaMetrics' export answer (/api/v1/export: one JSON line per series with its labels, values and
timestamps) read within the decoded-size caps: every line measured before any is parsed, a long line's
numbers read by numpy (no Python object per number), the samples handed on in batches.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import orjson

from recommender.input.prometheus.caps import (
    MAX_SERIES_PER_ANSWER,
    Origin,
    implausible,
    samples_allowed,
    too_many_series,
)
from recommender.input.prometheus.client import Labels
from recommender.input.prometheus.rawgrid import RawSeries
from recommender.model import FloatArray, SourceError
from recommender.model.timegrid import IntArray

_VALUES, _TIMES, _END = b',"values":[', b'],"timestamps":[', b"]}"
_NUMBER = b"0123456789.eE+-,InfNa"
"""What a run of numbers may hold: VictoriaMetrics writes +Inf, -Inf and NaN as bare words (not JSON)."""
LABEL_BYTES = 64 * 1024
"""A line's bytes besides its numbers, at most (a series' labels)."""
SAMPLE_BYTES = 64
"""A sample's bytes in a line, at most: a 13-digit timestamp and a 24-character value, with their commas."""
LEAST_SAMPLE_BYTES = 4
"""A sample's bytes in a line, at the least ("1,2,"): a shorter line cannot hold too many."""
ORJSON_BYTES = 4 * 1024 * 1024
"""Lines up to this long are read by orjson (measured faster, bench/bench_read_paths.py), into lists of
some 60 bytes a sample; longer ones by numpy, 16 bytes a sample."""
BATCH_SAMPLES = 1 << 20
"""Samples parsed before they are handed on (the lines of a batch, whole)."""
PARSE_ERRORS = (ValueError, KeyError, TypeError, IndexError, AttributeError, OverflowError)
"""What a malformed line raises while read (orjson's JSONDecodeError is a ValueError)."""


@dataclass(frozen=True)
class Lines:
    """An answer's non-empty lines, body[starts[i]:ends[i]], each within what a series of the range holds."""

    body: bytes | bytearray
    starts: list[int]
    ends: list[int]


def measured(body: bytes | bytearray, range_ms: int, origin: Origin) -> Lines:
    """The answer's lines within the caps, before any is parsed: OverAnswerCap past MAX_SERIES_PER_ANSWER
    lines, Implausible for a line longer, or holding more samples, than one series over `range_ms` can (one
    a second; counted only in a line long enough to hold more)."""
    if body.count(b"\n") >= MAX_SERIES_PER_ANSWER:  # counted whole only where it may be over
        lines = sum(1 for line in body.split(b"\n") if line.strip())
        if lines > MAX_SERIES_PER_ANSWER:
            raise too_many_series(origin, lines)
    allowed = samples_allowed(range_ms)
    most = LABEL_BYTES + allowed * SAMPLE_BYTES
    starts, ends = [], []
    pos = 0
    while pos < len(body):
        end = body.find(b"\n", pos)
        end = len(body) if end < 0 else end
        if end - pos > 64 or body[pos:end].strip():  # blank lines between series are skipped
            if end - pos > most:
                raise implausible(origin, f"a line of {end - pos:,} bytes", _held(allowed, most), bomb=False)
            count = _samples_in(body, pos, end) if end - pos > LEAST_SAMPLE_BYTES * allowed else 0
            if count > allowed:
                raise implausible(origin, f"a series of {count:,} samples", _held(allowed, most), bomb=False)
            starts.append(pos)
            ends.append(end)
        pos = end + 1
    return Lines(body, starts, ends)


def _held(allowed: int, most: int) -> str:
    return f"one series of the range holds at most {allowed:,} (one a second) in at most {most:,} bytes"


def _samples_in(body: bytes | bytearray, a: int, b: int) -> int:
    """The timestamps of the line body[a:b] as VictoriaMetrics lays it out (its run's commas), else at most
    half its commas (values and timestamps both)."""
    mid, end = body.find(_TIMES, a, b), body.rfind(_END, a, b)
    if 0 <= mid < end:
        first = mid + len(_TIMES)
        return 0 if first == end else body.count(b",", first, end) + 1
    return (body.count(b",", a, b) + 2) // 2


def parsed(lines: Lines, origin: Origin) -> Iterator[tuple[RawSeries, bool]]:
    """The lines' samples, each line's sorted by time, in batches of whole lines of about BATCH_SAMPLES
    (the batch, and whether it is the answer's last); SourceError naming the server and the path for a line
    that does not parse."""
    labels: list[Labels] = []
    ts: list[IntArray] = []
    vs: list[FloatArray] = []
    held = 0
    view = memoryview(lines.body)
    for k, (a, b) in enumerate(zip(lines.starts, lines.ends, strict=True)):
        try:
            found, t, v = export_line(view[a:b])
        except PARSE_ERRORS as exc:
            raise SourceError(f"{origin.at} sent a malformed {origin.what}: {exc}") from exc
        order = np.argsort(t, kind="stable")
        labels.append(found)
        ts.append(t[order])
        vs.append(v[order])
        held += t.size
        last = k == len(lines.starts) - 1
        if held >= BATCH_SAMPLES or last:
            yield _raw(labels, ts, vs), last
            labels, ts, vs, held = [], [], [], 0


def _raw(labels: list[Labels], ts: list[IntArray], vs: list[FloatArray]) -> RawSeries:
    offsets = np.zeros(len(ts) + 1, dtype=np.int64)
    np.cumsum([t.size for t in ts], out=offsets[1:])
    return RawSeries(labels, offsets, np.concatenate(ts), np.concatenate(vs))


def export_line(line: bytes | memoryview) -> tuple[Labels, IntArray, FloatArray]:
    """One series of VictoriaMetrics' export. orjson reads a line of up to ORJSON_BYTES (into lists:
    measured faster than numpy's text parser); a longer one, and a line with bare +Inf, -Inf or NaN words
    (not JSON), has its numbers read by numpy."""
    if len(line) > ORJSON_BYTES:
        return _export_words(bytes(line))
    try:
        row = orjson.loads(line)
    except orjson.JSONDecodeError:
        return _export_words(bytes(line))
    if not isinstance(row, dict) or not isinstance(row.get("metric"), dict):
        raise ValueError(f"an export line that is not a series: {bytes(line[:120])!r}")
    t = np.array(row["timestamps"], dtype=np.int64)
    v = np.array([math.nan if x is None else x for x in row["values"]], dtype=np.float64)
    if t.ndim != 1 or v.ndim != 1 or t.size != v.size:
        raise ValueError(f"a series with {t.size} timestamps and {v.size} values")
    return {str(k): str(x) for k, x in row["metric"].items()}, t, v


def _export_words(line: bytes) -> tuple[Labels, IntArray, FloatArray]:
    head, mid, end = line.find(_VALUES), line.find(_TIMES), line.rfind(_END)
    values, times = line[head + len(_VALUES) : mid], line[mid + len(_TIMES) : end]
    if not (0 < head < mid < end) or values.translate(None, _NUMBER) or times.translate(None, _NUMBER):
        raise ValueError(f"an export line that is neither JSON nor numbers: {line[:120]!r}")
    metric = orjson.loads(line[:head] + b"}")["metric"]
    if not isinstance(metric, dict):
        raise ValueError(f"an export line whose metric is not an object: {line[:120]!r}")
    v = np.fromstring(values, dtype=np.float64, sep=",") if values else np.empty(0)
    t = np.fromstring(times, dtype=np.int64, sep=",") if times else np.empty(0, np.int64)
    if (v.size, t.size) != (values.count(b",") + bool(values), times.count(b",") + bool(times)):
        raise ValueError(f"a run of numbers that does not parse whole: {line[head : head + 120]!r}")
    if t.size != v.size:
        raise ValueError(f"a series with {t.size} timestamps and {v.size} values")
    return {str(k): str(x) for k, x in metric.items()}, t, v
