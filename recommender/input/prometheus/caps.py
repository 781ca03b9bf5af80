"""The decoded-size caps of every raw and range read, checked before the memory is taken: what honest data
can hold, the cycle's sample budget, and the errors that name the server, the API path and the cap.

Honest data: at most one sample per series per second of the read's range (cAdvisor's stats change every
10-15 s; a one-second scrape is already far past any real one), XOR chunks of at most MAX_CHUNK_SAMPLES
(Prometheus cuts at 120 samples, at 240 at the latest; the format allows 65,535), at most
MAX_SERIES_PER_ANSWER series in one answer, and at most a range query's steps of points per series. An
answer past what its own bytes or time range allow is refused as a decompression bomb or a broken server,
never with advice to raise a cap; the cycle's budget (PODSIZER_PROMETHEUS_MAX_SAMPLES_PER_CYCLE) is the one
cap honest data may reach.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from podsizer.settings.names import where
from podsizer.settings.source import DEFAULT_MAX_SAMPLES_PER_CYCLE
from recommender.input.prometheus.client import AnswerTooLarge, RangeResult, SampleRejections
from recommender.model import SourceError

MIN_SAMPLE_INTERVAL_MS = 1000
"""At most one sample per series per second."""
MAX_CHUNK_SAMPLES = 4096
"""Samples one XOR chunk may declare: Prometheus writes at most twice its samples per chunk (120 by default,
so 240; the setting raised eight times still fits); the format's 65,535 only serve a bomb."""
MAX_SERIES_PER_ANSWER = 50_000
"""Series of one answer (one metric of one namespace over one time range): a busier answer is asked again
over halves of its time range (churn spreads over time), else the namespace is skipped."""
MAX_CHUNKS_PER_ANSWER = 2_000_000
"""Chunks of one remote-read answer (24 bytes each besides their own, kept until decoded): an honest chunk
takes some 50 bytes on the wire, so 64 MiB hold 1.3 M."""
SLOW_PARSE_POINTS = 1_000_000
"""Points of a range answer parsed into Python objects at most (some 150 MB): the layout client.parse_matrix
does not read (native histograms, a server's own) is parsed whole by orjson."""
MIN_TIMESTAMP_MS = 0
MAX_TIMESTAMP_MS = 32_503_680_000_000
"""3000-01-01T00:00:00Z: a sample outside [1970, 3000) is impossible (counted, left out)."""
IMPOSSIBLE_TIME = "impossible-timestamp"
"""The rejection reason of a sample before 1970, from the year 3000 on, or not after its series' previous
one in the same answer."""


def samples_allowed(range_ms: int) -> int:
    """The most samples one series may hold over a read of `range_ms`: one a second, both ends included."""
    return max(0, range_ms) // MIN_SAMPLE_INTERVAL_MS + 1


@dataclass(frozen=True)
class Origin:
    """Where an answer came from, for its errors: the server, the API path and what was asked."""

    url: str
    path: str
    what: str

    @property
    def at(self) -> str:
        return f"Prometheus at {self.url}{self.path}"


class Implausible(SourceError):
    """An answer holding more than honest data can (a decompression bomb or a broken server): refused whole,
    before its samples are decoded."""


class OverAnswerCap(AnswerTooLarge):
    """An answer past what one answer may hold (MAX_SERIES_PER_ANSWER series, MAX_CHUNKS_PER_ANSWER chunks,
    SLOW_PARSE_POINTS points parsed slowly): asked again over halves of its time range, else the namespace
    is skipped."""


class PointsPastSteps(Exception):
    """A series of a range answer with more points than the range has steps (client.parse_matrix)."""

    def __init__(self, points: int) -> None:
        super().__init__(f"a series of {points:,} points")
        self.points = points


class OverCycleBudget(SourceError):
    """The cycle has read PODSIZER_PROMETHEUS_MAX_SAMPLES_PER_CYCLE samples: the cycle fails."""


def implausible(origin: Origin, found: str, allowed: str, *, bomb: bool) -> Implausible:
    """The error for an answer past what honest data holds; `bomb`: its bytes or time range cannot hold what
    it declares (says so, and advises nothing to raise)."""
    verdict = (
        "this looks like a decompression bomb (or a broken server): refused before decoding"
        if bomb
        else "refused: no honest server sends that"
    )
    return Implausible(f"{origin.at} answered {origin.what} with {found}, but {allowed}; {verdict}")


def too_many_series(origin: Origin, series: int) -> OverAnswerCap:
    return OverAnswerCap(
        f"{origin.at} answered {origin.what} with more than {MAX_SERIES_PER_ANSWER:,} series ({series:,} "
        "seen), the most one answer may hold"
    )


def too_many_chunks(origin: Origin, chunks: int) -> OverAnswerCap:
    return OverAnswerCap(
        f"{origin.at} answered {origin.what} with more than {MAX_CHUNKS_PER_ANSWER:,} chunks ({chunks:,} "
        "seen), the most one answer may hold"
    )


def check_series(body: bytes | bytearray, origin: Origin) -> None:
    """A range answer's series counted (their "metric" keys) before it is parsed: OverAnswerCap past
    MAX_SERIES_PER_ANSWER."""
    series = body.count(b'"metric":')
    if series > MAX_SERIES_PER_ANSWER:
        raise too_many_series(origin, series)


def check_slow_parse(body: bytes | bytearray, origin: Origin) -> None:
    """A range answer about to be parsed whole by orjson: OverAnswerCap past SLOW_PARSE_POINTS points."""
    points = body.count(b"],[") + body.count(b'"metric":')
    if points > SLOW_PARSE_POINTS:
        raise OverAnswerCap(
            f"{origin.at} answered {origin.what} with about {points:,} points in a layout read only as "
            f"JSON objects (native histograms, or a server's own), more than the {SLOW_PARSE_POINTS:,} one "
            "such answer may hold"
        )


def steps_in(start: float, end: float, step: float) -> int:
    """The points a range query of [start, end] at `step` answers per series (one more: a server that
    aligns the range to the step)."""
    return int((end - start) / step + 1e-6) + 2


def possible(result: RangeResult, rejections: SampleRejections) -> RangeResult:
    """Range-query series without their points at impossible times (before 1970, from the year 3000 on, not
    after the point before): counted in `rejections`."""
    out: RangeResult = []
    for labels, ts, vs in result:
        ms = ts * 1000.0
        keep = (ms >= MIN_TIMESTAMP_MS) & (ms < MAX_TIMESTAMP_MS)
        keep[1:] &= ts[1:] > np.maximum.accumulate(np.where(keep, ts, -np.inf))[:-1]
        dropped = int(keep.size - np.count_nonzero(keep))
        rejections.add(IMPOSSIBLE_TIME, dropped)
        out.append((labels, ts, vs) if not dropped else (labels, ts[keep], vs[keep]))
    return out


class CycleBudget:
    """The samples one cycle (one collect of the source) may decode, shared by the threads that read it."""

    def __init__(self, cap: int = DEFAULT_MAX_SAMPLES_PER_CYCLE) -> None:
        self.cap = cap
        self._used = 0
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        with self._lock:
            return self._used

    def charge(self, samples: int, origin: Origin) -> None:
        """Takes `samples` from the budget before they are decoded; OverCycleBudget, naming the setting,
        when the cycle would pass it (nothing is taken then)."""
        with self._lock:
            if self._used + samples > self.cap:
                used = self._used
            else:
                self._used += samples
                return
        raise OverCycleBudget(
            f"{origin.at}: {origin.what} holds {samples:,} samples, and this cycle has read {used:,} of "
            f"the {self.cap:,} that {where('prometheus_max_samples_per_cycle')} allows; raise it for a "
            "cluster this large, or size fewer namespaces at once"
        )
