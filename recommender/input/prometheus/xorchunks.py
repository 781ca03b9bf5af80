"""Prometheus XOR (Gorilla) chunks decoded into arrays, every chunk of an answer at once: the cheapest read
a Prometheus server gives (remote read's streamed chunks: its stored bytes, no evaluation) made cheap here.

The layout is upstream's tsdb/chunkenc/xor.go: a big-endian uint16 sample count; the first timestamp (ms)
as a zig-zag varint and its value as 64 raw bits; the second timestamp's delta as a uvarint; then each
further timestamp as a delta-of-delta in a 0 / 10+14 / 110+17 / 1110+20 / 1111+64 bit bucket, and every
value after the first as the XOR with the one before (0: the same value; 10: the bits inside the previous
window of leading/trailing zeros; 11, 5 bits of leading zeros, 6 bits of length (0 means 64): a new window).

A chunk's samples depend on each other, so the decoder walks sample i of every chunk of a batch in one step
of numpy operations (the chunks sorted by length, so the ones still going are always a prefix): about 130
steps for a batch of any number of chunks, instead of a Python loop per sample. Batches are consecutive
chunks of at most BATCH chunks, BATCH_SAMPLES samples and BATCH_CELLS chunks x longest chunk, so what one
batch decodes is bounded whatever the chunks declare (caps.py checks the declarations first).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from recommender.model.timegrid import IntArray

Words = npt.NDArray[np.uint64]

_U = np.uint64
_LEADING_ONES = np.array([0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 4], dtype=_U)
"""Leading one bits of a 4-bit nibble: the delta-of-delta bucket."""
_CONTROL_BITS = np.array([1, 2, 3, 4, 4], dtype=_U)
_DOD_BITS = np.array([0, 14, 17, 20, 64], dtype=_U)
_VARINT_BYTES = 8
"""Longest varint read (56 bits): millisecond timestamps until the year 3000 take 6."""


class ChunkError(ValueError):
    """A chunk that is not a well-formed XOR chunk (names what is wrong)."""


@dataclass(frozen=True)
class Decoded:
    """The samples of every chunk, in the chunks' order: chunk k's are [offsets[k], offsets[k + 1])."""

    offsets: IntArray
    timestamps_ms: IntArray
    values: npt.NDArray[np.float64]


def _peek(words: Words, pos: Words) -> Words:
    """The 64 bits starting at each bit position (most significant first)."""
    w = (pos >> _U(6)).view(np.int64)  # an index array of the platform's int: taken without a conversion
    shift: Words = pos & _U(63)
    high: Words = words.take(w) << shift
    low: Words = words.take(w + 1) >> (_U(64) - shift)
    return high | low


def _varint(words: Words, pos: Words) -> tuple[IntArray, Words]:
    """(value, bits read) of the unsigned varint at each (byte-aligned) bit position."""
    window = _peek(words, pos)
    shifts = _U(56) - _U(8) * np.arange(_VARINT_BYTES, dtype=_U)
    octets = ((window[:, None] >> shifts) & _U(0xFF)).astype(np.int64)
    ends = octets < 0x80
    if not ends.any(axis=1).all():
        raise ChunkError(f"a varint longer than {_VARINT_BYTES} bytes")
    length = ends.argmax(axis=1) + 1
    used = np.arange(_VARINT_BYTES) < length[:, None]
    value = ((octets & 0x7F) << (7 * np.arange(_VARINT_BYTES))) * used
    return value.sum(axis=1), (8 * length).astype(_U)


_DOD_HALF = np.array([0, 1 << 13, 1 << 16, 1 << 19, np.iinfo(np.int64).max], dtype=np.int64)
_DOD_FULL = np.array([0, 1 << 14, 1 << 17, 1 << 20, 0], dtype=np.int64)
_VALUE_HEADER = np.array([1, 1, 2, 13], dtype=_U)
_SIGNIFICANT = np.array([64, *range(1, 64)], dtype=_U)
"""A new window's 6-bit length field: 0 stands for 64."""
"""Bits before a value's significant bits, by its first two: 0x the same value, 10 the window kept, 11 a new
one."""


@dataclass
class _Walk:
    """The decoding state of the chunks still going (a prefix of the sorted chunks)."""

    pos: Words
    t: IntArray
    delta: IntArray
    bits: Words
    leading: Words
    trailing: Words

    def keep(self, n: int) -> None:
        for name in ("pos", "t", "delta", "bits", "leading", "trailing"):
            setattr(self, name, getattr(self, name)[:n])

    def value(self, words: Words, head: Words) -> None:
        """One XOR-encoded value of each chunk (upstream's xorRead); `head`: the 64 bits at self.pos."""
        top = (head >> _U(62)).view(np.int64)  # 0 or 1: the same value; 2: the window kept; 3: a new one
        window = top == 3
        leading = (head >> _U(57)) & _U(31)
        size = _SIGNIFICANT.take(((head >> _U(51)) & _U(63)).view(np.int64))
        self.leading = np.where(window, leading, self.leading)
        self.trailing = np.where(window, _U(64) - leading - size, self.trailing)
        significant = _U(64) - self.leading - self.trailing
        header = _VALUE_HEADER.take(top)
        xor = (_peek(words, self.pos + header) >> (_U(64) - significant)) << self.trailing
        changed = top >= 2
        self.bits ^= np.where(changed, xor, _U(0))
        self.pos += header + np.where(changed, significant, _U(0))

    def sample(self, words: Words) -> None:
        """One delta-of-delta timestamp (upstream's xorIterator.Next) and one value of each chunk, from one
        64-bit window where they fit in it (a timestamp's bucket and bits take at most 24)."""
        window = _peek(words, self.pos)
        bucket = _LEADING_ONES.take((window >> _U(60)).view(np.int64)).view(np.int64)
        control, size = _CONTROL_BITS.take(bucket), _DOD_BITS.take(bucket)
        raw = ((window << control) >> (_U(64) - size)).view(np.int64)
        wide = np.flatnonzero(bucket == 4)  # a 64-bit delta-of-delta: past the window
        if wide.size:
            raw[wide] = _peek(words, self.pos[wide] + _U(4)).view(np.int64)
        dod = raw - (raw > _DOD_HALF.take(bucket)) * _DOD_FULL.take(bucket)
        self.delta += dod
        self.t += self.delta
        used = control + size
        self.pos += used
        head = window << used
        if wide.size:
            head[wide] = _peek(words, self.pos[wide])
        self.value(words, head)


BATCH = 2048
"""Chunks walked at once: their bytes stay in the CPU's cache (a 120-sample chunk is a few hundred bytes)."""
BATCH_CELLS = 1 << 19
"""Chunks x longest chunk of one batch: its (chunk, sample) matrices stay 4 MiB each."""
BATCH_SAMPLES = 1 << 18
"""Samples one batch decodes at most (one chunk at least): what is folded at a time (2048 chunks of 120
samples fill it)."""


def declared(data: bytes | bytearray, starts: IntArray) -> IntArray:
    """The sample count each chunk declares (its first two bytes, big-endian); chunk k is
    data[starts[k]:starts[k + 1]]. ChunkError for a chunk shorter than its count."""
    if starts.size < 2:
        return np.zeros(0, dtype=np.int64)
    if (np.diff(starts) < 2).any():
        raise ChunkError("a chunk shorter than its 2-byte sample count")
    octets = np.frombuffer(data, dtype=np.uint8)
    head = starts[:-1]
    counts: IntArray = (octets[head].astype(np.int64) << 8) | octets[head + 1]
    return counts


def batches(counts: IntArray) -> list[tuple[int, int]]:
    """Consecutive chunk ranges [lo, hi) of at most BATCH chunks, BATCH_SAMPLES samples and BATCH_CELLS chunks
    x longest chunk (one chunk at least), covering every chunk in order."""
    out, lo, k = [], 0, counts.size
    while lo < k:
        window = counts[lo : lo + BATCH]
        cells = np.arange(1, window.size + 1) * np.maximum(np.maximum.accumulate(window), 1)
        fits = (cells <= BATCH_CELLS) & (np.cumsum(window) <= BATCH_SAMPLES)  # True, then only False
        hi = lo + max(1, int(np.count_nonzero(fits)))
        out.append((lo, hi))
        lo = hi
    return out


def decode_range(data: bytes | bytearray, starts: IntArray, counts: IntArray, lo: int, hi: int) -> Decoded:
    """The samples of chunks lo..hi-1 (one batch: see batches); offsets count from the batch's first."""
    body = bytes(data[int(starts[lo]) : int(starts[hi])])
    part = counts[lo:hi]
    offsets = np.zeros(hi - lo + 1, dtype=np.int64)
    np.cumsum(part, out=offsets[1:])
    t, v = _decode_batch(body, np.diff(starts[lo : hi + 1]), part)
    return Decoded(offsets, t, v.view(np.float64))


def _decode_batch(body: bytes, sizes: IntArray, counts: IntArray) -> tuple[IntArray, Words]:
    """The samples of a few chunks (`body`: their bytes, one after the other), concatenated in their
    order."""
    order = np.argsort(-counts, kind="stable")
    starts = np.zeros(sizes.size, dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    ends = ((starts + sizes)[order] * 8).astype(_U)
    words = np.frombuffer(body + bytes(24 - len(body) % 8), dtype=">u8").astype(_U)
    going = counts[order]
    longest = int(going.max(initial=0))
    times = np.zeros((sizes.size, longest), dtype=np.int64)  # row j: the j-th chunk (sorted) by sample
    values = np.zeros((sizes.size, longest), dtype=_U)
    n = int(np.count_nonzero(going))
    pos = ((starts[order][:n] + 2) * 8).astype(_U)
    first, length = _varint(words, pos)
    pos += length
    t0 = (first >> 1) ^ -(first & 1)  # zig-zag
    walk = _Walk(pos + _U(64), t0, np.zeros(n, np.int64), _peek(words, pos), *_zeros(n))
    descending = -going
    for i in range(longest):
        n = int(np.searchsorted(descending, -i, side="left"))  # the chunks with more than i samples
        walk.keep(n)
        if i == 1:
            walk.delta, length = _varint(words, walk.pos)
            walk.t += walk.delta
            walk.pos += length
            walk.value(words, _peek(words, walk.pos))
        elif i > 1:
            walk.sample(words)
        if (walk.pos > ends[:n]).any():
            raise ChunkError("a chunk ends inside a sample")
        times[:n, i] = walk.t
        values[:n, i] = walk.bits
    back = np.argsort(order)  # each chunk's row, in the chunks' order
    taken = np.arange(longest)[None, :] < counts[:, None]
    return times[back][taken], values[back][taken]


def _zeros(n: int) -> tuple[Words, Words]:
    return np.zeros(n, dtype=_U), np.zeros(n, dtype=_U)
