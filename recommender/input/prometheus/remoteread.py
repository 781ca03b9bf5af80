"""Prometheus' remote-read API (/api/v1/read) asked for streamed XOR chunks: the request built, the framed
answer cut into each series' labels and chunk bytes. The protobuf messages stay inside this module.

The answer is a run of frames: a uvarint length, a 4-byte CRC32C (not checked here: the transport is
checked by TCP and TLS, and the chunk decoder refuses a chunk cut short), and one ChunkedReadResponse.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import cramjam

from recommender.input.prometheus.prompb import RemoteRead, remote_read_messages

STREAMED_XOR = 1  # ReadRequest.ResponseType STREAMED_XOR_CHUNKS
XOR_CHUNK = 1  # Chunk.Encoding XOR
CONTENT_TYPE = "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse"
REQUEST_HEADERS = {
    "Content-Encoding": "snappy",
    "Content-Type": "application/x-protobuf",
    "X-Prometheus-Remote-Read-Version": "0.1.0",
}
_OPS = {"=": 0, "!=": 1, "=~": 2, "!~": 3}


class FrameError(ValueError):
    """An answer that is not a run of well-formed frames (names what is wrong)."""


@dataclass(frozen=True)
class Matcher:
    """One label matcher of a remote-read query."""

    name: str
    value: str
    op: Literal["=", "!=", "=~", "!~"] = "="


@dataclass(frozen=True)
class ChunkedSeries:
    """One series of a chunked answer: its labels and its XOR chunks' bytes, in time order."""

    labels: dict[str, str]
    chunks: list[bytes]
    other_chunks: int = 0
    """Chunks of another encoding (native histograms), left out."""


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

    def series(self, body: bytes | bytearray) -> Iterator[ChunkedSeries]:
        """Every series of every frame; FrameError for a length past the end or a message that does not
        parse."""
        view = memoryview(body)
        pos = 0
        while pos < len(view):
            size, pos = _uvarint(view, pos)
            end = pos + 4 + size
            if end > len(view):
                raise FrameError(f"a frame of {size} bytes runs past the answer's end ({len(view)} bytes)")
            try:
                frame = self._messages.chunked_read_response.FromString(bytes(view[pos + 4 : end]))
            except Exception as exc:  # protobuf's DecodeError has no stable import path across versions
                raise FrameError(f"a frame that is not a ChunkedReadResponse: {exc}") from exc
            pos = end
            for s in frame.chunked_series:  # type: ignore[attr-defined]
                xor = [bytes(c.data) for c in s.chunks if c.type == XOR_CHUNK]
                yield ChunkedSeries(
                    {str(label.name): str(label.value) for label in s.labels}, xor, len(s.chunks) - len(xor)
                )


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
