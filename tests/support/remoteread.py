"""A remote-read peer for tests: XOR chunks written as upstream's appender writes them (tsdb/chunkenc/xor.go),
framed as Prometheus streams them, and requests read back into their matchers."""

from __future__ import annotations

import struct
from collections.abc import Sequence

import cramjam
import numpy as np

from recommender.input.prometheus.prompb import remote_read_messages
from recommender.input.prometheus.xorchunks import Decoded, batches, declared, decode_range

_OPS = {0: "=", 1: "!=", 2: "=~", 3: "!~"}


class _Bits:
    def __init__(self) -> None:
        self.value, self.size = 0, 0

    def write(self, bits: int, n: int) -> None:
        self.value = (self.value << n) | (bits & ((1 << n) - 1))
        self.size += n

    def varint(self, x: int, *, signed: bool) -> None:
        u = ((x << 1) ^ (x >> 63)) & (2**64 - 1) if signed else x
        while True:
            b = u & 0x7F
            u >>= 7
            self.write(b | (0x80 if u else 0), 8)
            if not u:
                return

    def bytes(self) -> bytes:
        pad = -self.size % 8
        return (self.value << pad).to_bytes((self.size + pad) // 8, "big")


def _float_bits(v: float) -> int:
    return int(struct.unpack(">Q", struct.pack(">d", v))[0])


def _clz(x: int) -> int:
    return 64 - x.bit_length()


def _ctz(x: int) -> int:
    return (x & -x).bit_length() - 1


def _fits(dod: int, n: int) -> bool:
    return -((1 << (n - 1)) - 1) <= dod <= 1 << (n - 1)


def encode_xor(timestamps_ms: Sequence[int], values: Sequence[float] | Sequence[int]) -> bytes:
    """One XOR chunk of the samples (values as floats, or as raw 64-bit patterns when ints)."""
    out = _Bits()
    prev_t, prev_delta, prev_v, leading, trailing = 0, 0, 0, 0xFF, 0
    for i, (t, value) in enumerate(zip(timestamps_ms, values, strict=True)):
        v = value if isinstance(value, int) else _float_bits(float(value))
        if i == 0:
            out.varint(int(t), signed=True)
            out.write(v, 64)
        else:
            delta = int(t) - prev_t
            if i == 1:
                out.varint(delta, signed=False)
            else:
                dod = delta - prev_delta
                for size, control, width in ((0, 0b0, 1), (14, 0b10, 2), (17, 0b110, 3), (20, 0b1110, 4)):
                    if (size == 0 and dod == 0) or (size and _fits(dod, size)):
                        out.write(control, width)
                        if size:
                            out.write(dod, size)
                        break
                else:
                    out.write(0b1111, 4)
                    out.write(dod, 64)
            prev_delta = delta
            leading, trailing = _xor(out, v ^ prev_v, leading, trailing)
        prev_t, prev_v = int(t), v
    return struct.pack(">H", len(timestamps_ms)) + out.bytes()


def steady_chunk(t0_ms: int, samples: int, interval_ms: int, value: float = 1.0) -> bytes:
    """A chunk of `samples` samples `interval_ms` apart of one value, as encode_xor writes it but at once
    for any length: 2 bits a sample after the second (the cheapest a chunk gets: an idle container's, or a
    decompression bomb's)."""
    out = _Bits()
    out.varint(t0_ms, signed=True)
    out.write(_float_bits(value), 64)
    if samples > 1:
        out.varint(interval_ms, signed=False)
        out.write(0, 1)
    bits = out.size + 2 * max(0, samples - 2)
    padded = -(-bits // 8) * 8
    return struct.pack(">H", samples) + (out.value << (padded - out.size)).to_bytes(padded // 8, "big")


def decode_chunks(chunks: Sequence[bytes]) -> Decoded:
    """Every chunk's (timestamp ms, value) samples, decoded batch by batch as the product decodes an
    answer's (xorchunks.batches, decode_range), concatenated: the decoder's whole output, for tests."""
    starts = np.zeros(len(chunks) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in chunks], out=starts[1:])
    data = b"".join(chunks)
    counts = declared(data, starts)
    parts = [decode_range(data, starts, counts, lo, hi) for lo, hi in batches(counts)]
    offsets = np.zeros(len(chunks) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    empty = np.empty(0, dtype=np.int64)
    return Decoded(
        offsets,
        np.concatenate([p.timestamps_ms for p in parts]) if parts else empty,
        np.concatenate([p.values for p in parts]) if parts else empty.astype(np.float64),
    )


def _xor(out: _Bits, delta: int, leading: int, trailing: int) -> tuple[int, int]:
    if delta == 0:
        out.write(0, 1)
        return leading, trailing
    out.write(1, 1)
    new_leading, new_trailing = min(_clz(delta), 31), _ctz(delta)
    if leading != 0xFF and new_leading >= leading and new_trailing >= trailing:
        out.write(0, 1)
        out.write(delta >> trailing, 64 - leading - trailing)
        return leading, trailing
    out.write(1, 1)
    out.write(new_leading, 5)
    significant = 64 - new_leading - new_trailing
    out.write(significant, 6)  # 64 is written as 0
    out.write(delta >> new_trailing, significant)
    return new_leading, new_trailing


Series = tuple[dict[str, str], Sequence[int], Sequence[float] | Sequence[int]]


def chunked_answer(series: Sequence[Series], per_chunk: int = 120, per_frame: int = 2) -> bytes:
    """The streamed answer to one query: `per_frame` series a frame, each cut into chunks of `per_chunk`."""
    messages = remote_read_messages()
    frames = b""
    for lo in range(0, len(series), per_frame):
        frame = messages.chunked_read_response()
        for labels, ts, vs in series[lo : lo + per_frame]:
            s = frame.chunked_series.add()  # type: ignore[attr-defined]
            for name, value in sorted(labels.items()):
                label = s.labels.add()
                label.name, label.value = name, value
            for a in range(0, len(ts), per_chunk):
                chunk = s.chunks.add()
                chunk.min_time_ms, chunk.max_time_ms = int(ts[a]), int(ts[min(a + per_chunk, len(ts)) - 1])
                chunk.type = 1
                chunk.data = encode_xor(ts[a : a + per_chunk], vs[a : a + per_chunk])
        body = frame.SerializeToString()
        frames += _uvarint(len(body)) + b"\0\0\0\0" + body
    return frames


def _uvarint(x: int) -> bytes:
    out = bytearray()
    while True:
        b = x & 0x7F
        x >>= 7
        out.append(b | (0x80 if x else 0))
        if not x:
            return bytes(out)


def read_request(body: bytes) -> tuple[list[tuple[str, str, str]], int, int, list[int]]:
    """A ReadRequest's one query: (name, op, value) matchers, start and end (ms), accepted response types."""
    messages = remote_read_messages()
    req = messages.read_request.FromString(bytes(cramjam.snappy.decompress_raw(body)))
    (query,) = req.queries  # type: ignore[attr-defined]
    matchers = [(m.name, _OPS[m.type], m.value) for m in query.matchers]
    types = list(req.accepted_response_types)  # type: ignore[attr-defined]
    return matchers, query.start_timestamp_ms, query.end_timestamp_ms, types


def selector(matchers: list[tuple[str, str, str]]) -> str:
    """The matchers as a PromQL selector text: metric{name op "value", ...}."""
    metric = "".join(v for n, op, v in matchers if (n, op) == ("__name__", "="))
    rest = [f'{n}{op}"{v}"' for n, op, v in matchers if (n, op) != ("__name__", "=")]
    return metric + "{" + ",".join(rest) + "}"


def grid_ms(start_s: float, end_s: float, step_s: float) -> np.ndarray:
    return np.arange(round(start_s * 1000), round(end_s * 1000) + 1, round(step_s * 1000), dtype=np.int64)
