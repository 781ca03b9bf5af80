"""The XOR chunk decoder reads back what upstream's appender writes (tests/support/remoteread.encode_xor, a
port of tsdb/chunkenc/xor.go), every chunk of an answer at once, and refuses chunks cut short."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from recommender.input.prometheus.xorchunks import (
    BATCH,
    BATCH_CELLS,
    BATCH_SAMPLES,
    ChunkError,
    batches,
    declared,
    decode_range,
)
from tests.support.remoteread import decode_chunks, encode_xor

STALE = 0x7FF0000000000002
T0 = 1_764_547_200_000  # 2025-12-01 in ms: a 6-byte varint, as real timestamps


def _bits(v: float | int) -> int:
    return v if isinstance(v, int) else int(struct.unpack(">Q", struct.pack(">d", v))[0])


values = st.one_of(
    st.floats(allow_nan=False),
    st.sampled_from([0.0, -0.0, 1.0, math.inf, -math.inf, 2.0**-1074, 1e308]),
    st.just(STALE),  # Prometheus' staleness marker: a NaN with its own bit pattern
    st.integers(0, 2**64 - 1),  # any bit pattern (other NaNs included)
)
deltas = st.one_of(
    st.just(60_000),
    st.integers(59_000, 61_000),  # scrape jitter: small delta-of-deltas
    st.integers(1, 2**21),  # each delta-of-delta bucket
    st.integers(2**21, 2**40),  # the 64-bit bucket
)


@st.composite
def chunks(draw: st.DrawFn) -> tuple[list[int], list[float | int]]:
    n = draw(st.integers(1, 130))
    steps = draw(st.lists(deltas, min_size=n - 1, max_size=n - 1))
    ts = [T0 + sum(steps[:i]) for i in range(n)]
    vs = draw(st.lists(values, min_size=n, max_size=n))
    if draw(st.booleans()):  # runs of equal values and of small changes: the kept-window branch
        vs = [vs[0] if i % 3 else vs[i] for i in range(n)]
    return ts, vs


@given(st.lists(chunks(), min_size=1, max_size=12))
def test_every_chunk_decodes_to_the_samples_written(
    written: list[tuple[list[int], list[float | int]]],
) -> None:
    decoded = decode_chunks([encode_xor(ts, vs) for ts, vs in written])
    assert decoded.offsets.tolist() == np.cumsum([0] + [len(ts) for ts, _ in written]).tolist()
    for k, (ts, vs) in enumerate(written):
        a, b = decoded.offsets[k], decoded.offsets[k + 1]
        assert decoded.timestamps_ms[a:b].tolist() == ts
        assert decoded.values[a:b].view(np.uint64).tolist() == [_bits(v) for v in vs]


def test_a_counter_and_a_gauge_of_a_week_at_one_minute_decode_exactly() -> None:
    rng = np.random.default_rng(7)
    ts = (T0 + 60_000 * np.arange(10_080) + rng.integers(-300, 300, 10_080)).tolist()
    counter = np.cumsum(rng.uniform(0, 120, 10_080)).tolist()
    gauge = np.round(rng.normal(2**30, 2**22, 10_080)).tolist()
    pieces = [(ts[i : i + 120], s[i : i + 120]) for s in (counter, gauge) for i in range(0, 10_080, 120)]
    decoded = decode_chunks([encode_xor(t, v) for t, v in pieces])
    assert decoded.timestamps_ms.tolist() == ts + ts
    assert decoded.values.tolist() == counter + gauge


def test_no_chunks_and_empty_chunks_decode_to_nothing() -> None:
    assert decode_chunks([]).timestamps_ms.size == 0
    empty = decode_chunks([b"\0\0", encode_xor([T0], [1.5]), b"\0\0"])
    assert empty.offsets.tolist() == [0, 0, 1, 1] and empty.values.tolist() == [1.5]


def test_a_chunk_cut_short_is_refused_with_what_is_wrong() -> None:
    whole = encode_xor([T0 + 60_000 * i for i in range(50)], [float(i) ** 1.5 for i in range(50)])
    with pytest.raises(ChunkError, match="ends inside a sample"):
        decode_chunks([whole[: len(whole) // 2]])
    with pytest.raises(ChunkError, match="2-byte sample count"):
        decode_chunks([b"\0"])
    with pytest.raises(ChunkError):
        decode_chunks([struct.pack(">H", 3)])  # three samples promised, none there


def test_batches_bound_what_one_decode_holds_whatever_the_chunks_declare() -> None:
    counts = np.array([120] * 3000 + [4096] * 100 + [0, 1] * 5 + [240] * 900 + [65_535], dtype=np.int64)
    found = batches(counts)
    assert [lo for lo, _ in found] == [0] + [hi for _, hi in found[:-1]] and found[-1][1] == counts.size
    for lo, hi in found:
        part = counts[lo:hi]
        alone = hi - lo == 1
        assert alone or (
            hi - lo <= BATCH and part.sum() <= BATCH_SAMPLES and (hi - lo) * part.max() <= BATCH_CELLS
        )
    assert max(hi - lo for lo, hi in found) == BATCH  # honest chunks: as many at once as ever


def test_each_batch_decodes_its_chunks_as_they_decode_alone() -> None:
    rng = np.random.default_rng(3)
    chunks = []
    for k in range(300):
        n = int(rng.integers(1, 400))
        ts = (T0 + 60_000 * k + np.cumsum(rng.integers(1, 30_000, n))).tolist()
        chunks.append(encode_xor(ts, np.cumsum(rng.uniform(0, 9, n)).tolist()))
    starts = np.concatenate([[0], np.cumsum([len(c) for c in chunks])]).astype(np.int64)
    data = b"".join(chunks)
    counts = declared(data, starts)
    for lo, hi in batches(counts):
        got = decode_range(data, starts, counts, lo, hi)
        want = decode_chunks(chunks[lo:hi])
        assert got.offsets.tolist() == want.offsets.tolist()
        assert got.timestamps_ms.tolist() == want.timestamps_ms.tolist()
        assert got.values.tolist() == want.values.tolist()
