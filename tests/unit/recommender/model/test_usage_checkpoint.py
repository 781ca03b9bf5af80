"""Usage checkpoints (recommender.model.checkpoint): a round trip keeps every state exactly; a truncated,
corrupt, other-version or other-settings checkpoint is refused with an error naming why."""

from __future__ import annotations

import hashlib
import math
import struct
import tracemalloc
import zlib
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from bench.quality.prom import dataset
from bench.quality.traces import generate
from podsizer.api.identity import WorkloadRef
from recommender.checkpoints.filestore import FileCheckpointStore
from recommender.model.checkpoint import (
    FORMAT_VERSION,
    MAX_STATES,
    ChangedSettings,
    CheckpointError,
    CheckpointSettings,
    CorruptCheckpoint,
    IncompatibleVersion,
    TruncatedCheckpoint,
    _facts_json,
    _record,
    dumps,
    loads,
    read,
)
from recommender.model.histogram import Histogram
from recommender.model.state_build import build_states
from recommender.model.usage_state import StateKey, UsageState

SETTINGS = CheckpointSettings(half_life_s=86400.0, step_s=60.0)
NOW = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def states() -> dict[StateKey, UsageState]:
    return build_states(dataset(generate(), NOW))


@pytest.fixture(scope="module")
def blob(states: dict[StateKey, UsageState]) -> bytes:
    return dumps(states, SETTINGS)


def same_histogram(a: Histogram | None, b: Histogram | None) -> bool:
    if a is None or b is None:
        return a is b
    return np.array_equal(a.weights, b.weights) and (a.reference == b.reference or a.is_empty())


def fields(s: UsageState) -> tuple[object, ...]:
    return (
        s.cpu_peak,
        s.memory_peak,
        s.first_seen,
        s.last_seen,
        s.samples,
        s.days_mask,
        s.newest_day,
        s.ooms,
        s.newest_hour,
        s.facts,
    )


def reseal(data: bytes) -> bytes:
    """The checkpoint with its checksum recomputed (content changes that the checksum would catch)."""
    return data[:-16] + hashlib.blake2b(data[:-16], digest_size=16).digest()


def test_round_trip_keeps_every_state_exactly(states: dict[StateKey, UsageState], blob: bytes) -> None:
    back = loads(blob, SETTINGS)
    assert sorted(back) == sorted(states)
    for key, s in states.items():
        b = back[key]
        assert fields(b) == fields(s)
        np.testing.assert_array_equal(b.day_peaks, s.day_peaks)
        np.testing.assert_array_equal(b.day_peak_at, s.day_peak_at)
        np.testing.assert_array_equal(b.demand, s.demand)
        np.testing.assert_array_equal(b.day_cpu, s.day_cpu)  # each day's CPU points (recurrence)
        assert sorted(b.open_cpu) == sorted(s.open_cpu) and b.open_hours == s.open_hours
        assert all(same_histogram(s.open_cpu[d], b.open_cpu[d]) for d in s.open_cpu)
        for h1, h2 in ((s.cpu, b.cpu), (s.memory, b.memory), (s.gpu_activity, b.gpu_activity)):
            assert same_histogram(h1, h2)
        assert same_histogram(s.gpu_framebuffer, b.gpu_framebuffer)
        assert b.cpu.percentile(0.9) == s.cpu.percentile(0.9)
    assert any(s.ooms for s in back.values()) and any(s.gpu_activity for s in back.values())
    assert any(s.facts.requests for s in back.values()) and any(s.facts.labels for s in back.values())
    assert {k.template for k in back} - {""}  # templated states keep their template
    assert all(s.open_cpu for s in back.values() if s.samples)  # the newest day is still open
    assert np.isfinite(next(iter(back.values())).day_cpu[0, 1:7]).all()  # the days before it are closed


def test_meta_is_read_back(states: dict[StateKey, UsageState]) -> None:
    cp = read(dumps(states, SETTINGS, {"covered_until": 1.5e9, "built_at": 1.4e9}), SETTINGS)
    assert dict(cp.meta) == {"covered_until": 1.5e9, "built_at": 1.4e9}
    assert len(cp.states) == len(states)


def test_another_source_is_a_changed_setting(blob: bytes) -> None:
    with pytest.raises(ChangedSettings, match="url=http://other"):
        loads(blob, replace(SETTINGS, source="url=http://other"))


def test_checkpoint_is_compact(states: dict[StateKey, UsageState], blob: bytes) -> None:
    assert len(blob) / len(states) < 4096  # sparse buckets, a week of hourly demand, compressed


def test_save_and_load_a_file(tmp_path: Path, states: dict[StateKey, UsageState]) -> None:
    path = tmp_path / "usage.ckpt"
    blob = dumps(states, SETTINGS)
    FileCheckpointStore(path).write({None: blob})
    assert path.stat().st_size == len(blob)
    assert sorted(loads(FileCheckpointStore(path).read().blobs[None], SETTINGS)) == sorted(states)
    assert [p.name for p in tmp_path.iterdir()] == ["usage.ckpt"]  # no temporary file left


@pytest.mark.parametrize("keep", [0, 5, 13, 40, -17, -1])
def test_a_truncated_checkpoint_is_refused(blob: bytes, keep: int) -> None:
    with pytest.raises(TruncatedCheckpoint):
        loads(blob[:keep], SETTINGS)


def test_a_flipped_byte_is_refused_as_corrupt(blob: bytes) -> None:
    broken = bytearray(blob)
    broken[len(blob) // 2] ^= 0x40
    with pytest.raises(CorruptCheckpoint, match="checksum"):
        loads(bytes(broken), SETTINGS)


def test_another_file_is_refused_as_corrupt(blob: bytes) -> None:
    with pytest.raises(CorruptCheckpoint, match="magic"):
        loads(b"NOTMAGIC" + blob[8:], SETTINGS)


def test_trailing_bytes_are_refused_as_corrupt(blob: bytes) -> None:
    with pytest.raises(CorruptCheckpoint, match="after the checksum"):
        loads(blob + b"\x00", SETTINGS)


def counts_at(blob: bytes) -> int:
    """Where the state count starts: after the header, the settings and the meta."""
    head_len = struct.unpack_from("<I", blob, 10)[0]
    meta_len = struct.unpack_from("<I", blob, 14 + head_len)[0]
    return 14 + head_len + 4 + meta_len


def test_a_record_that_does_not_parse_is_refused_even_with_a_valid_checksum(blob: bytes) -> None:
    at = counts_at(blob)
    count = struct.unpack_from("<I", blob, at)[0]
    body = zlib.compress(b"\x05\x00[1,2" + b"\x00" * 50)
    forged = blob[:at] + struct.pack("<IQ", count, len(body)) + body + b"\x00" * 16
    with pytest.raises(CorruptCheckpoint, match=r"does not parse|runs past"):
        loads(reseal(forged), SETTINGS)


def test_a_body_with_fewer_states_than_stated_is_refused(blob: bytes) -> None:
    at = counts_at(blob)
    count = struct.unpack_from("<I", blob, at)[0]
    forged = blob[:at] + struct.pack("<I", count + 1) + blob[at + 4 :]
    with pytest.raises(CorruptCheckpoint):
        loads(reseal(forged), SETTINGS)


def test_another_format_version_is_refused(blob: bytes) -> None:
    forged = blob[:8] + struct.pack("<H", FORMAT_VERSION + 1) + blob[10:]
    with pytest.raises(IncompatibleVersion, match=f"version {FORMAT_VERSION + 1}"):
        loads(reseal(forged), SETTINGS)


@pytest.mark.parametrize(
    "other",
    [
        CheckpointSettings(half_life_s=3600.0, step_s=60.0),
        CheckpointSettings(half_life_s=None, step_s=60.0),
        CheckpointSettings(half_life_s=86400.0, step_s=300.0),
        CheckpointSettings(
            half_life_s=86400.0, step_s=60.0, buckets=("exp:first=0.01:ratio=1.05:count=100",)
        ),
    ],
)
def test_a_checkpoint_written_under_other_settings_is_refused(blob: bytes, other: CheckpointSettings) -> None:
    with pytest.raises(ChangedSettings, match="written under"):
        loads(blob, other)


def test_every_refusal_is_a_checkpoint_error() -> None:
    for kind in (TruncatedCheckpoint, CorruptCheckpoint, IncompatibleVersion, ChangedSettings):
        assert issubclass(kind, CheckpointError)


def test_equal_settings_written_as_int_or_float_are_the_same(blob: bytes) -> None:
    assert sorted(loads(blob, CheckpointSettings(half_life_s=86400, step_s=60))) == sorted(
        loads(blob, SETTINGS)
    )


def test_states_of_another_half_life_are_not_written(states: dict[StateKey, UsageState]) -> None:
    with pytest.raises(ValueError, match="half-life"):
        dumps(states, CheckpointSettings(half_life_s=3600.0, step_s=60.0))


def _bomb_after(prefix: bytes, zeros_mib: int) -> bytes:
    """`prefix` then `zeros_mib` MiB of zeros, compressed: a few hundred kB that inflate to far more."""
    packer = zlib.compressobj(9)
    chunk = b"\x00" * 2**20
    return b"".join(
        [packer.compress(prefix), *(packer.compress(chunk) for _ in range(zeros_mib)), packer.flush()]
    )


def _with_body(blob: bytes, count: int, body: bytes) -> bytes:
    at = counts_at(blob)
    return reseal(blob[:at] + struct.pack("<IQ", count, len(body)) + body + b"\x00" * 16)


@pytest.mark.parametrize(
    ("field", "why"),
    [("key", r"a state key of 65535 bytes"), ("facts", r"facts of 4294967295 bytes")],
)
def test_a_field_longer_than_its_limit_is_refused_before_it_is_inflated(
    states: dict[StateKey, UsageState], blob: bytes, field: str, why: str
) -> None:
    """A 100 MiB zlib bomb behind a record claiming a 64 KiB key or 4 GiB of facts: refused at the length,
    with a few MiB at most inflated (it inflated the whole bomb before)."""
    key, state = next(iter(sorted(states.items())))
    record = _record(key, state)
    facts = _facts_json(state.facts)
    if field == "key":
        prefix = struct.pack("<H", 65535)
    else:
        at = record.index(struct.pack("<I", len(facts)) + facts)  # daily points and open days follow
        prefix = record[:at] + struct.pack("<I", 2**32 - 1)
    forged = _with_body(blob, 1, _bomb_after(prefix, 100))
    assert len(forged) < 1_000_000
    tracemalloc.start()
    try:
        with pytest.raises(CorruptCheckpoint, match=why):
            loads(forged, SETTINGS)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, peak


def test_an_absurd_sample_is_written_as_no_value_so_the_checkpoint_reads_back() -> None:
    """A 1e300 sample overflows the float32 demand hour (and a 1e400 request is infinite): written as no
    value, not as infinity the reader refuses (a full re-read at every restart)."""
    state = UsageState.empty(SETTINGS.half_life_s)
    hour = 490_000
    state.set_demand(hour, np.array([1e300, 0.5]), np.array([2.0**30, 1e300]))
    state.day_peaks[0, 0] = math.inf
    state.facts.requests = {"cpu": math.inf, "memory": 2.0**30}
    key = StateKey(WorkloadRef("shop", "Deployment", "web"), "main", "t")
    (back,) = loads(dumps({key: state}, SETTINGS), SETTINGS).values()
    cpu, memory = back.demand_hours(hour, 2)
    assert math.isnan(cpu[0]) and cpu[1] == 0.5 and memory[0] == 2.0**30 and math.isnan(memory[1])
    assert math.isnan(back.day_peaks[0, 0])
    assert back.facts.requests == {"memory": 2.0**30}


def test_more_states_than_a_checkpoint_may_hold_are_refused_before_any_is_read(blob: bytes) -> None:
    """Each state takes 8-12 KiB once read whatever its record held (its fixed arrays), so a few bytes of
    zlib per minimal record would otherwise read as gigabytes: the declared count is bounded first."""
    key, state = StateKey(WorkloadRef("ns", "Deployment", "w"), "app"), UsageState.empty(86400.0)
    record = _record(key, state)
    body = zlib.compress(record * 5000, 1)  # read one by one, these alone would take 40+ MiB
    forged = _with_body(blob, MAX_STATES + 1, body)
    tracemalloc.start()
    try:
        with pytest.raises(CorruptCheckpoint, match=f"declares {MAX_STATES + 1} states, more than the"):
            loads(forged, SETTINGS)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 2**20, peak
