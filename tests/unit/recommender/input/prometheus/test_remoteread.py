"""A streamed remote-read answer cut into series and chunk bytes (a series sent in pieces is one series, its
series counted before a frame is parsed), and the chunks' declared sample counts checked against what their
bytes, their own span and the range asked can hold, before anything is decoded."""

from __future__ import annotations

import numpy as np
import pytest

from recommender.input.prometheus import caps, remoteread
from recommender.input.prometheus.caps import MAX_CHUNK_SAMPLES, Implausible, Origin, OverAnswerCap
from recommender.input.prometheus.remoteread import RemoteReadCodec, checked_counts
from tests.support.remoteread import _uvarint, chunked_answer, decode_chunks, steady_chunk

ORIGIN = Origin("http://prom:9090", "/api/v1/read", "remote read of m in namespace ns")
T0 = 1_764_547_200_000
POD = {"__name__": "m", "namespace": "ns", "pod": "p", "container": "c"}


def _series(pod: str, n: int, every_ms: int = 15_000) -> tuple[dict[str, str], list[int], list[float]]:
    return {**POD, "pod": pod}, [T0 + every_ms * i for i in range(n)], [float(i) for i in range(n)]


def test_a_series_sent_in_pieces_is_one_series_with_its_chunks_in_order() -> None:
    a, b = _series("a", 300), _series("b", 50)
    head = (a[0], a[1][:150], a[2][:150])
    rest = (a[0], a[1][150:], a[2][150:])
    body = chunked_answer([head, b, rest], per_chunk=60, per_frame=1)  # a's rest after b, a frame its own
    answer = RemoteReadCodec().answer(body, ORIGIN)
    assert [lab["pod"] for lab in answer.labels] == ["a", "b"]
    assert answer.series_of.tolist() == [0] * 6 + [1]
    chunks = [answer.data[answer.starts[k] : answer.starts[k + 1]] for k in range(answer.chunks)]
    decoded = decode_chunks(chunks)
    assert decoded.timestamps_ms[: decoded.offsets[6]].tolist() == a[1]
    assert answer.min_ms.tolist()[:6] == [T0 + 15_000 * i for i in (0, 60, 120, 150, 210, 270)]


def test_an_answers_series_are_counted_before_a_frame_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remoteread, "MAX_SERIES_PER_ANSWER", 3)
    monkeypatch.setattr(caps, "MAX_SERIES_PER_ANSWER", 3)
    whole = chunked_answer([_series(str(i), 5) for i in range(3)], per_frame=3)
    assert len(RemoteReadCodec().answer(whole, ORIGIN).labels) == 3
    garbage = b"\x0a\x03\xff\xff\xff" * 4  # four field-1 entries whose bytes no parser reads
    body = whole + _uvarint(len(garbage)) + b"\0\0\0\0" + garbage
    with pytest.raises(OverAnswerCap, match=r"http://prom:9090/api/v1/read .* more than 3 series \(7 seen\)"):
        RemoteReadCodec().answer(body, ORIGIN)


def _answer(*chunks: tuple[str, int, int, bytes]) -> remoteread.ChunkedAnswer:
    """An answer of (pod, min ms, max ms, chunk bytes), in order."""
    from recommender.input.prometheus.prompb import remote_read_messages

    frame = remote_read_messages().chunked_read_response()
    for pod, lo, hi, data in chunks:
        s = frame.chunked_series.add()  # type: ignore[attr-defined]
        for name, value in {**POD, "pod": pod}.items():
            label = s.labels.add()
            label.name, label.value = name, value
        c = s.chunks.add()
        c.min_time_ms, c.max_time_ms, c.type, c.data = lo, hi, 1, data
    body = frame.SerializeToString()
    return RemoteReadCodec().answer(_uvarint(len(body)) + b"\0\0\0\0" + body, ORIGIN)


def _steady(pod: str, t0: int, samples: int, every_ms: int) -> tuple[str, int, int, bytes]:
    return pod, t0, t0 + (samples - 1) * every_ms, steady_chunk(t0, samples, every_ms)


HOUR = 3_600_000


def test_honest_chunks_pass_with_their_declared_counts() -> None:
    early, late = _steady("a", T0 - 1_800_000, 240, 15_000), _steady("a", T0 + 1_800_000, 240, 15_000)
    answer = _answer(early, late, _steady("b", T0, 1, 1))
    assert checked_counts(answer, T0, T0 + HOUR, ORIGIN).tolist() == [240, 240, 1]


@pytest.mark.parametrize(
    ("chunk", "says"),
    [
        (_steady("a", T0, 65_535, 1_000), "declaring 65,535 samples, but a chunk holds at most 4,096"),
        (("a", T0, T0 + HOUR, steady_chunk(T0, 4000, 1000)[:400]), r"4,000 samples in 400 bytes"),
        (("a", T0, T0 + 60_000, steady_chunk(T0, 4000, 15)), r"4,000 samples over 61 s"),
    ],
)
def test_a_chunk_that_declares_more_than_it_can_hold_is_refused_as_a_bomb(
    chunk: tuple[str, int, int, bytes], says: str
) -> None:
    with pytest.raises(Implausible, match=says) as refused:
        checked_counts(_answer(chunk), T0, T0 + 30 * 24 * HOUR, ORIGIN)
    text = str(refused.value)
    assert text.startswith("Prometheus at http://prom:9090/api/v1/read answered remote read of m in")
    assert "looks like a decompression bomb" in text and "raise" not in text


def test_a_series_declaring_more_than_one_sample_a_second_over_the_range_is_refused_as_a_bomb() -> None:
    """Its chunks each plausible, the series is not (chunks stacked on the same span): besides its first and
    last chunk (whole chunks reach past the range) a series holds at most one sample a second of the range."""
    spread = [_steady("a", T0 + k * 4_096_000, MAX_CHUNK_SAMPLES, 1000) for k in range(5)]
    fits = checked_counts(_answer(*spread), T0 + 4_095_000, T0 + 4 * 4_096_000, ORIGIN)
    assert fits.sum() == 5 * MAX_CHUNK_SAMPLES  # 3 inner chunks over 3 x 4,096 s
    stacked = [_steady("a", T0, MAX_CHUNK_SAMPLES, 1000)] * 5
    with pytest.raises(Implausible, match=r"a series whose chunks declare 20,480 samples.*a decompression"):
        checked_counts(_answer(*stacked), T0, T0 + 4_096_000, ORIGIN)


def test_a_chunk_outside_the_range_asked_is_refused() -> None:
    with pytest.raises(Implausible, match=r"a chunk of \[.*\] ms, but the range asked is") as refused:
        checked_counts(_answer(_steady("a", T0 + 2 * HOUR, 10, 15_000)), T0, T0 + HOUR, ORIGIN)
    assert "bomb" not in str(refused.value)


def test_no_chunks_are_no_counts() -> None:
    assert checked_counts(RemoteReadCodec().answer(b"", ORIGIN), T0, T0 + HOUR, ORIGIN).size == 0
    assert np.array_equal(RemoteReadCodec().answer(b"", ORIGIN).starts, [0])


def test_a_frame_or_an_answer_past_what_honest_ones_hold_is_refused_before_it_is_parsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A frame is parsed whole (some 10 bytes of objects a byte of tiny chunks): at most MAX_FRAME_BYTES; and
    the chunks kept until decoded at most MAX_CHUNKS_PER_ANSWER (asked again over halves)."""
    body = chunked_answer([_series(str(i), 50) for i in range(4)], per_chunk=10, per_frame=2)
    monkeypatch.setattr(remoteread, "MAX_FRAME_BYTES", 200)
    with pytest.raises(Implausible, match=r"with a frame of \d+ bytes, but a frame holds at most 200"):
        RemoteReadCodec().answer(body, ORIGIN)
    monkeypatch.setattr(remoteread, "MAX_FRAME_BYTES", 1 << 20)
    monkeypatch.setattr(remoteread, "MAX_CHUNKS_PER_ANSWER", 15)
    monkeypatch.setattr(caps, "MAX_CHUNKS_PER_ANSWER", 15)
    with pytest.raises(OverAnswerCap, match=r"more than 15 chunks \(20 seen\)"):
        RemoteReadCodec().answer(body, ORIGIN)
