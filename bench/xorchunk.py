"""Decodes a Prometheus XOR (Gorilla) chunk into arrays, in pure Python, to time what a chunked read costs.

The layout is upstream's tsdb/chunkenc/xor.go: a big-endian uint16 sample count; the first timestamp (ms)
as a zig-zag varint and its value as 64 raw bits; the second timestamp's delta as a uvarint; then each
further timestamp as a delta-of-delta in a 0 / 10+14 / 110+17 / 1110+20 / 1111+64 bit bucket, and every
value after the first as the XOR with the previous one (0: the same value; 10: the bits inside the previous
leading/trailing zero window; 11, 5 bits of leading zeros, 6 bits of length: a new window).
"""

from __future__ import annotations

import struct

import numpy as np

from recommender.model import FloatArray


class _Bits:
    """An MSB-first bit reader over one chunk held as a Python int."""

    def __init__(self, data: bytes) -> None:
        self.word, self.left = int.from_bytes(data, "big"), 8 * len(data)

    def read(self, n: int) -> int:
        self.left -= n
        if self.left < 0:
            raise ValueError("XOR chunk ends inside a sample")
        return (self.word >> self.left) & ((1 << n) - 1)

    def varint(self, *, signed: bool) -> int:
        value, shift = 0, 0
        while True:
            b = self.read(8)
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        return (value >> 1) ^ -(value & 1) if signed else value


def _signed(bits: int, size: int) -> int:
    return bits - (1 << size) if bits > (1 << (size - 1)) else bits


def _delta_of_delta(r: _Bits) -> int:
    if not r.read(1):
        return 0
    for size in (14, 17, 20):
        if not r.read(1):
            return _signed(r.read(size), size)
    return _signed(r.read(64), 64)


def _float(bits: int) -> float:
    return float(struct.unpack(">d", bits.to_bytes(8, "big"))[0])


def decode_xor(data: bytes) -> tuple[FloatArray, FloatArray]:
    """(timestamps in seconds, values) of one XOR chunk."""
    n = struct.unpack_from(">H", data)[0]
    ts, vs = np.empty(n, dtype=np.float64), np.empty(n, dtype=np.float64)
    if n == 0:
        return ts, vs
    r = _Bits(data[2:])
    t = r.varint(signed=True)
    v = r.read(64)
    ts[0], vs[0] = t, _float(v)
    delta, leading, trailing = 0, 0, 0
    for i in range(1, n):
        delta = r.varint(signed=False) if i == 1 else delta + _delta_of_delta(r)
        t += delta
        if r.read(1):
            if r.read(1):
                leading, size = r.read(5), r.read(6) or 64
                trailing = 64 - leading - size
            v ^= r.read(64 - leading - trailing) << trailing
        ts[i], vs[i] = t, _float(v)
    return ts / 1000.0, vs
