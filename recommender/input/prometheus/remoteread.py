"""Prometheus' remote-read API (/api/v1/read) asked for streamed XOR chunks: the request built, the framed
answer cut into each series' labels and chunk bytes. The protobuf messages stay inside this module.

The answer is a run of frames: a uvarint length, a 4-byte CRC32C (not checked here: the transport is
checked by TCP and TLS, and the chunk decoder refuses a chunk cut short), and one ChunkedReadResponse. A
frame's series are counted from its bytes before it is parsed (caps.MAX_SERIES_PER_ANSWER), and the chunks
are kept as one run of bytes with a few numbers each, not an object per chunk.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Literal

import cramjam
import numpy as np

from recommender.input.prometheus.caps import (
    MAX_CHUNK_SAMPLES,
    MAX_CHUNKS_PER_ANSWER,
    MAX_SERIES_PER_ANSWER,
    MIN_SAMPLE_INTERVAL_MS,
    Origin,
    implausible,
    samples_allowed,
    too_many_chunks,
    too_many_series,
)
from recommender.input.prometheus.client import Labels, SeriesIdentity, series_identity
from recommender.input.prometheus.prompb import RemoteRead, remote_read_messages
from recommender.input.prometheus.xorchunks import declared
from recommender.model.timegrid import IntArray

STREAMED_XOR = 1  # ReadRequest.ResponseType STREAMED_XOR_CHUNKS
XOR_CHUNK = 1  # Chunk.Encoding XOR
CONTENT_TYPE = "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse"
REQUEST_HEADERS = {
    "Content-Encoding": "snappy",
    "Content-Type": "application/x-protobuf",
    "X-Prometheus-Remote-Read-Version": "0.1.0",
}
_OPS = {"=": 0, "!=": 1, "=~": 2, "!~": 3}
MAX_FRAME_BYTES = 16 * 1024 * 1024
"""A frame's bytes at most (parsed whole): Prometheus sends 1 MiB (read-max-bytes-in-frame)."""


class FrameError(ValueError):
    """An answer that is not a run of well-formed frames (names what is wrong)."""


@dataclass(frozen=True)
class Matcher:
    """One label matcher of a remote-read query."""

    name: str
    value: str
    op: Literal["=", "!=", "=~", "!~"] = "="


@dataclass(frozen=True)
class ChunkedAnswer:
    """The series of one streamed answer and their XOR chunks, not decoded: chunk k (of series
    series_of[k], chunks grouped by series in time order) is data[starts[k]:starts[k + 1]] and says it spans
    [min_ms[k], max_ms[k]]. A series sent in pieces (a long one cut across frames) is one series."""

    labels: list[Labels]
    series_of: IntArray
    min_ms: IntArray
    max_ms: IntArray
    data: bytes | bytearray
    starts: IntArray
    other_chunks: int = 0
    """Chunks of another encoding (native histograms), left out."""
    identities: list[SeriesIdentity] | None = None
    """Each series' series_identity (None: not computed)."""

    @property
    def chunks(self) -> int:
        return int(self.series_of.size)


class RemoteReadCodec:
    """Builds requests and reads answers with one pool of prompb messages (built once per client)."""

    def __init__(self) -> None:
        self._messages: RemoteRead = remote_read_messages()

    def request(self, matchers: Sequence[Matcher], start_ms: int, end_ms: int) -> bytes:
        """A snappy-compressed ReadRequest of one query over [start_ms, end_ms], streamed XOR chunks only."""
        req = self._messages.read_request()
        query = req.queries.add()  # type: ignore[attr-defined]
        query.start_timestamp_ms, query.end_timestamp_ms = start_ms, end_ms
        for m in matchers:
            added = query.matchers.add()
            added.type, added.name, added.value = _OPS[m.op], m.name, m.value
        req.accepted_response_types.append(STREAMED_XOR)  # type: ignore[attr-defined]
        return bytes(cramjam.snappy.compress_raw(req.SerializeToString()))

    def answer(self, body: bytes | bytearray, origin: Origin) -> ChunkedAnswer:
        """Every series of every frame; FrameError for a length past the end or a message that does not
        parse. Before a frame is parsed, its bytes (at most MAX_FRAME_BYTES: Implausible) and its series (at
        most MAX_SERIES_PER_ANSWER in the answer: OverAnswerCap) are counted; after it, the answer's chunks
        (at most MAX_CHUNKS_PER_ANSWER: OverAnswerCap)."""
        view = memoryview(body)
        found = _Found()
        pos = 0
        while pos < len(view):
            size, pos = _uvarint(view, pos)
            end = pos + 4 + size
            if end > len(view):
                raise FrameError(f"a frame of {size} bytes runs past the answer's end ({len(view)} bytes)")
            if size > MAX_FRAME_BYTES:
                held = f"a frame holds at most {MAX_FRAME_BYTES:,} (Prometheus sends 1,048,576)"
                raise implausible(origin, f"a frame of {size:,} bytes", held, bomb=False)
            frame = view[pos + 4 : end]
            found.entries += _series_in(frame)
            if found.entries > MAX_SERIES_PER_ANSWER:
                raise too_many_series(origin, found.entries)
            try:
                parsed = self._messages.chunked_read_response.FromString(bytes(frame))
            except Exception as exc:  # protobuf's DecodeError has no stable import path across versions
                raise FrameError(f"a frame that is not a ChunkedReadResponse: {exc}") from exc
            pos = end
            for s in parsed.chunked_series:  # type: ignore[attr-defined]
                found.add(s)
            if len(found.sizes) + found.other > MAX_CHUNKS_PER_ANSWER:
                raise too_many_chunks(origin, len(found.sizes) + found.other)
        return found.answer()


class _Found:
    """An answer's series and chunks as they are parsed (columns, not an object per chunk)."""

    def __init__(self) -> None:
        self.entries = 0
        self.labels: list[Labels] = []
        self.identities: list[SeriesIdentity] = []
        self.index: dict[SeriesIdentity, int] = {}
        self.series_of, self.min_ms, self.max_ms, self.sizes = array("q"), array("q"), array("q"), array("q")
        self.data = bytearray()
        self.other = 0

    def add(self, s: object) -> None:
        labels = {str(label.name): str(label.value) for label in s.labels}  # type: ignore[attr-defined]
        identity = series_identity(labels)
        sid = self.index.setdefault(identity, len(self.labels))
        if sid == len(self.labels):
            self.labels.append(labels)
            self.identities.append(identity)
        data, sizes, mins, maxs = self.data, self.sizes, self.min_ms, self.max_ms
        before = len(sizes)
        for c in s.chunks:  # type: ignore[attr-defined]
            if c.type != XOR_CHUNK:
                self.other += 1
                continue
            chunk = c.data
            data += chunk
            sizes.append(len(chunk))
            mins.append(c.min_time_ms)
            maxs.append(c.max_time_ms)
        self.series_of.extend(repeat(sid, len(sizes) - before))

    def answer(self) -> ChunkedAnswer:
        series_of = np.frombuffer(self.series_of, dtype=np.int64)
        sizes = np.frombuffer(self.sizes, dtype=np.int64)
        starts = np.zeros(sizes.size + 1, dtype=np.int64)
        np.cumsum(sizes, out=starts[1:])
        min_ms, max_ms = np.frombuffer(self.min_ms, np.int64), np.frombuffer(self.max_ms, np.int64)
        data: bytes | bytearray = self.data
        if (np.diff(series_of) < 0).any():  # a series sent again after another: its chunks brought together
            order = np.argsort(series_of, kind="stable")
            data = b"".join(data[starts[k] : starts[k + 1]] for k in order.tolist())
            sizes, series_of, min_ms, max_ms = sizes[order], series_of[order], min_ms[order], max_ms[order]
            np.cumsum(sizes, out=starts[1:])
        return ChunkedAnswer(
            self.labels, series_of, min_ms, max_ms, data, starts, self.other, self.identities
        )


def _series_in(frame: memoryview) -> int:
    """The ChunkedSeries entries (field 1) of a ChunkedReadResponse, counted from its wire bytes; FrameError
    for a field that is not a varint or a length within the frame."""
    count, pos = 0, 0
    while pos < len(frame):
        tag, pos = _uvarint(frame, pos)
        wire = tag & 7
        if wire == 0:
            _, pos = _uvarint(frame, pos)
        elif wire == 2:
            size, pos = _uvarint(frame, pos)
            pos += size
        else:
            raise FrameError(f"a ChunkedReadResponse field of wire type {wire}")
        count += tag >> 3 == 1
    if pos > len(frame):
        raise FrameError("a ChunkedReadResponse field runs past its frame")
    return count


def checked_counts(answer: ChunkedAnswer, a: int, b: int, origin: Origin) -> IntArray:
    """The samples each chunk declares (its first two bytes), refused as a bomb (caps.Implausible) where
    they are more than MAX_CHUNK_SAMPLES, than the chunk's bytes can hold (2 bits a sample at the least),
    than its own time span holds at one a second, or than a series' chunks hold over the range [a, b] ms
    asked (its first and last chunk may reach past it, being whole); a chunk outside the range is refused.
    ChunkError for a chunk shorter than its count."""
    counts = declared(answer.data, answer.starts)
    if not counts.size:
        return counts
    sizes = np.diff(answer.starts)
    packed = np.where(counts > 1, 1 + 2 * (counts - 2), 0)  # bits after the second sample's varint
    least = 2 + 9 * (counts > 0) + (counts > 1) + (packed + 7) // 8
    spans = (answer.max_ms - answer.min_ms) // MIN_SAMPLE_INTERVAL_MS + 1
    for bad, found, allowed in (
        (counts > MAX_CHUNK_SAMPLES, "samples", f"a chunk holds at most {MAX_CHUNK_SAMPLES:,}"),
        (sizes < least, "samples in {size:,} bytes", "one takes 2 bits at the least"),
        (counts > spans, "samples over {span:,} s", "a chunk holds at most one a second of its own span"),
    ):
        if bad.any():
            k = int(np.argmax(bad))
            what = f"a chunk declaring {counts[k]:,} " + found.format(size=int(sizes[k]), span=int(spans[k]))
            raise implausible(origin, what, allowed, bomb=True)
    outside = (answer.min_ms > b) | (answer.max_ms < a)
    if outside.any():
        k = int(np.argmax(outside))
        what = f"a chunk of [{answer.min_ms[k]}, {answer.max_ms[k]}] ms"
        raise implausible(origin, what, f"the range asked is [{a}, {b}] ms", bomb=False)
    _check_series(answer, counts, samples_allowed(b - a), origin)
    return counts


def _check_series(answer: ChunkedAnswer, counts: IntArray, allowed: int, origin: Origin) -> None:
    """Each series' chunks besides its first and last (which may reach past the range) declare at most
    `allowed` samples."""
    heads = np.flatnonzero(np.diff(answer.series_of, prepend=-1))
    tails = np.append(heads[1:], counts.size) - 1
    totals = np.add.reduceat(counts, heads)
    inner = totals - counts[heads] - np.where(tails > heads, counts[tails], 0)
    if (inner > allowed).any():
        k = int(np.argmax(inner > allowed))
        found = f"a series whose chunks declare {int(totals[k]):,} samples"
        held = f"a series holds at most {allowed:,} over the range asked (one a second), besides its ends"
        raise implausible(origin, found, held, bomb=True)


def _uvarint(view: memoryview, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= len(view) or shift > 63:
            raise FrameError("a frame length that is not a varint")
        b = view[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, pos
