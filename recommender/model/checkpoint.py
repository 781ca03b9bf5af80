"""A compact, versioned serialisation of many UsageStates; a checkpoint is either whole and valid or refused.

Layout (little-endian):
    magic b"PSZUSAGE" | version u16 | settings length u32 | settings (canonical JSON) | meta length u32 |
    meta (JSON: what the state covers, not compared) | states u32 | body length u64 | body (zlib of the
    state records) | blake2b-128 of everything before it
A state record: key (u16 length + JSON [cluster, namespace, kind, name, container, template]) |
cpu_peak, memory_peak, first_seen, last_seen f64 | samples i64 | newest_day i64 | days_mask u64 | OOM kills
(u16 count, then at, bytes f64 each) | the cpu, memory, gpu activity and gpu framebuffer histograms,
each: present u8, then reference f64 | buckets u16 | bucket indices u16[] | weights f32[] (sparse) |
daily top samples f64[2 PEAK_TOP x PEAK_DAYS], then their times f64[2 PEAK_TOP x PEAK_DAYS] |
newest_hour i64 | hourly demand, samples and CPU counter resets f32[HOURLY_ROWS x DEMAND_HOURS] | facts
(u32 length + JSON) | daily CPU points f32[DAY_ROWS x PEAK_DAYS] | open days (u8 count, then each: day
i64, hours seen u32, its undecayed CPU histogram as above). Version 4 (daily top three with times, hourly
resets) replaced version 3 (daily top two): a version 3 checkpoint is refused as any other version, and
the recommender reads the window again.

Loading refuses (CheckpointError, whose subclass names why) a truncated, corrupt (bad magic, checksum or
content), other-version or other-settings checkpoint, and returns nothing partial: the caller logs the reason
and rebuilds from the source. Decompression is bounded: no field longer than its limit (MAX_KEY_BYTES,
MAX_OOMS_READ, a histogram's bucket count, MAX_FACTS_BYTES) is ever inflated, so at most one field lies
uncompressed in memory, and no more than MAX_STATES states are read. Writing never stores a non-finite value:
an infinite peak or demand hour (a float32 overflow of an absurd sample) is written as NaN (no value), an
infinite request or limit is left out, a weight is held under float32's largest.

Trust: the checksum detects damage, not forgery (it is not keyed). Who can write a checkpoint decides
what the recommender starts from, so only the recommender may: the file's permissions, or, in a cluster,
RBAC that grants write on usagecheckpoints.podsizer.io to the recommender's ServiceAccount alone
(docs/install.md "Usage checkpoints"); and whatever a checkpoint holds is sized by the same rules as
fresh samples, and only for workloads the source still reports.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
import zlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from podsizer.api.identity import WorkloadRef
from recommender.model import FloatArray
from recommender.model.histogram import (
    ACTIVITY_BUCKETS,
    CPU_BUCKETS,
    FRAMEBUFFER_BUCKETS,
    MEMORY_BUCKETS,
    BucketScheme,
    Histogram,
)
from recommender.model.usage_state import (
    DAY_ROWS,
    DEMAND_HOURS,
    HOURLY_ROWS,
    PEAK_DAYS,
    PEAK_TOP,
    Facts,
    OomEvent,
    StateKey,
    UsageState,
)

MAGIC = b"PSZUSAGE"
FORMAT_VERSION = 4
_HEAD = struct.Struct("<8sHI")  # magic, version, settings length
_U32 = struct.Struct("<I")
_I64 = struct.Struct("<q")
_COUNTS = struct.Struct("<IQ")  # states, body length
_SCALARS = struct.Struct("<ddddqqQ")
_DIGEST = 16
MAX_KEY_BYTES = 4096  # the JSON key of a state: names Kubernetes limits to a few hundred characters
MAX_OOMS_READ = 1024  # a state keeps MAX_OOMS; more is not a checkpoint of ours
MAX_FACTS_BYTES = 1 << 20  # pod labels (and annotations) are within the apiserver's 256 KiB
MAX_STATES = 200_000
"""The most states a checkpoint may declare: 20x the 10,000 containers a cluster is benchmarked at, with
their templates. A state takes 8-12 KiB once read whatever it held (its fixed arrays), so the count, not
the compressed size, bounds what reading costs: a checkpoint declaring more is refused before any state
is read."""
MAX_BYTES = MAX_STATES * 4096
"""The most bytes a checkpoint may take (a state's record takes 1.5 to 3 KiB compressed): a file store reads
no more."""
_F4_MAX = float(np.finfo(np.float32).max)
SCHEMES = (CPU_BUCKETS, MEMORY_BUCKETS, ACTIVITY_BUCKETS, FRAMEBUFFER_BUCKETS)
"""The histograms of a state in record order: cpu, memory, gpu activity, gpu framebuffer."""


class CheckpointError(ValueError):
    """A checkpoint that must not be trusted; the subclass and message say why."""


class TruncatedCheckpoint(CheckpointError):
    """Shorter than its header says."""


class CorruptCheckpoint(CheckpointError):
    """Not a usage checkpoint, a checksum mismatch, or content that does not parse."""


class IncompatibleVersion(CheckpointError):
    """Written in another format version."""


class ChangedSettings(CheckpointError):
    """Written under settings that give other histograms (half-life, step, buckets) or from another
    source (its URL, cluster, scope)."""


@dataclass(frozen=True)
class CheckpointSettings:
    """The settings a state depends on: a checkpoint written under others is refused."""

    half_life_s: float | None
    step_s: float
    buckets: tuple[str, ...] = tuple(s.describe() for s in SCHEMES)
    source: str = ""
    """What the state was read from and how (recommender.incremental's fingerprint); "" in tests."""
    layout: str = f"peak_days={PEAK_DAYS}x{PEAK_TOP}:hourly={HOURLY_ROWS}x{DEMAND_HOURS}:day_cpu={DAY_ROWS}"

    def encode(self) -> bytes:
        """Canonical JSON (sorted keys)."""
        fields = asdict(self)
        fields["half_life_s"] = float(self.half_life_s) if self.half_life_s else None  # 0 and None: no decay
        fields["step_s"] = float(self.step_s)
        return json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()


def _hist_bytes(h: Histogram | None) -> bytes:
    if h is None or h.is_empty():
        return b"\x00"
    idx, w = h.nonzero()
    return (
        struct.pack("<BdH", 1, h.reference, idx.size)
        + idx.astype("<u2").tobytes()
        + np.minimum(w, _F4_MAX).astype("<f4").tobytes()
    )


def _finite(values: npt.NDArray[np.floating[Any]], dtype: str) -> bytes:
    """The array as `dtype`, an infinite value (or one beyond float32) written as NaN: no value."""
    out = values.astype(dtype)
    return np.where(np.isinf(out), np.nan, out).astype(dtype).tobytes()


def _record(key: StateKey, s: UsageState) -> bytes:
    w = key.workload
    name = json.dumps([w.cluster, w.namespace, w.kind, w.name, key.container, key.template]).encode()
    ooms = [struct.pack("<H", len(s.ooms))] + [struct.pack("<dd", o.at, o.memory_bytes) for o in s.ooms]
    scalars = _SCALARS.pack(
        s.cpu_peak, s.memory_peak, s.first_seen, s.last_seen, s.samples, s.newest_day, s.days_mask
    )
    hists = (s.cpu, s.memory, s.gpu_activity, s.gpu_framebuffer)
    facts = _facts_json(s.facts)
    tail = [
        _finite(s.day_peaks, "<f8"),
        _finite(s.day_peak_at, "<f8"),
        _I64.pack(s.newest_hour),
        _finite(s.demand, "<f4"),
        _U32.pack(len(facts)),
        facts,
        s.day_cpu.astype("<f4").tobytes(),
        struct.pack("<B", len(s.open_cpu)),
        *(
            struct.pack("<qI", day, s.open_hours.get(day, 0)) + _hist_bytes(s.open_cpu[day])
            for day in sorted(s.open_cpu)
        ),
    ]
    return b"".join([struct.pack("<H", len(name)), name, scalars, *ooms, *map(_hist_bytes, hists), *tail])


def _facts_json(f: Facts) -> bytes:
    return json.dumps(
        {
            "requests": {k: v for k, v in f.requests.items() if math.isfinite(v)},
            "limits": {k: v for k, v in f.limits.items() if math.isfinite(v)},
            "labels": f.labels,
            **({"annotations": f.annotations} if f.annotations else {}),
            "init": f.init_container,
            "newest_pod_at": f.newest_pod_at if math.isfinite(f.newest_pod_at) else None,
            "pods": f.pods,
            "jobs": f.jobs,
            "recent_pods": sorted(f.recent_pods),
            "recent_jobs": sorted(f.recent_jobs),
            "rejected": [[r, rule, n] for (r, rule), n in sorted(f.rejected.items())],
            "pod_requests": [
                [pod, {k: v for k, v in r.items() if math.isfinite(v)}] for pod, r in f.pod_requests.items()
            ],
        },
        sort_keys=True,
        separators=(",", ":"),
    ).encode()


def _facts(data: bytes) -> Facts:
    d = json.loads(data)
    newest = d["newest_pod_at"]
    return Facts(
        requests={str(k): float(v) for k, v in d["requests"].items()},
        limits={str(k): float(v) for k, v in d["limits"].items()},
        labels={str(k): str(v) for k, v in d["labels"].items()},
        annotations={str(k): str(v) for k, v in d.get("annotations", {}).items()},
        init_container=bool(d["init"]),
        newest_pod_at=-math.inf if newest is None else float(newest),
        pods=int(d["pods"]),
        jobs=int(d["jobs"]),
        recent_pods=frozenset(map(str, d["recent_pods"])),
        recent_jobs=frozenset(map(str, d["recent_jobs"])),
        rejected={(str(r), str(rule)): int(n) for r, rule, n in d["rejected"]},
        pod_requests={str(p): {str(k): float(v) for k, v in r.items()} for p, r in d.get("pod_requests", [])},
    )


def dumps(
    states: Mapping[StateKey, UsageState],
    settings: CheckpointSettings,
    meta: Mapping[str, float] | None = None,
) -> bytes:
    """The checkpoint of `states` (ValueError unless every one's half-life is the settings'); `meta`: what
    the state covers (numbers by name, read back by `loads`, never compared)."""
    half = settings.half_life_s or None
    if any((s.half_life_s or None) != half for s in states.values()):
        raise ValueError(f"every state must decay with the settings' half-life {half}")
    packer = zlib.compressobj(6)
    body = b"".join([*(packer.compress(_record(k, states[k])) for k in sorted(states)), packer.flush()])
    head = settings.encode()
    about = json.dumps(dict(meta or {}), sort_keys=True).encode()
    data = b"".join(
        [
            _HEAD.pack(MAGIC, FORMAT_VERSION, len(head)),
            head,
            _U32.pack(len(about)),
            about,
            _COUNTS.pack(len(states), len(body)),
            body,
        ]
    )
    return data + hashlib.blake2b(data, digest_size=_DIGEST).digest()


class _Reader:
    """Reads the compressed record body front to back, decompressing as it goes (a checkpoint of 100,000
    states never lies uncompressed in memory at once); running past its end is corruption."""

    CHUNK = 1 << 16

    def __init__(self, compressed: memoryview) -> None:
        self.source, self.fed = compressed, 0
        self.inflate = zlib.decompressobj()
        self.buffer, self.at = b"", 0

    def _fill(self, n: int) -> None:
        """At least n unread bytes in the buffer, or as many as the body has."""
        parts = [self.buffer[self.at :]]
        have = len(parts[0])
        while have < n and (self.fed < len(self.source) or self.inflate.unconsumed_tail):
            chunk = self.inflate.unconsumed_tail or bytes(self.source[self.fed : self.fed + self.CHUNK])
            if not self.inflate.unconsumed_tail:
                self.fed += len(chunk)
            more = self.inflate.decompress(chunk, max(n - have, self.CHUNK))
            parts.append(more)
            have += len(more)
        self.buffer, self.at = b"".join(parts), 0

    def take(self, n: int) -> bytes:
        if self.at + n > len(self.buffer):
            self._fill(n)
            if n > len(self.buffer):
                raise CorruptCheckpoint("a state record runs past the end of the body")
        out = self.buffer[self.at : self.at + n]
        self.at += n
        return out

    def at_end(self) -> bool:
        """Nothing left: no unread byte, no compressed input, nothing after the compressed stream."""
        self._fill(1)
        return not self.buffer and self.inflate.eof and not self.inflate.unused_data

    def unpack(self, fmt: struct.Struct) -> tuple[float | int, ...]:
        return fmt.unpack(self.take(fmt.size))


_U8, _U16, _HIST, _OOM = struct.Struct("<B"), struct.Struct("<H"), struct.Struct("<dH"), struct.Struct("<dd")
_OPEN = struct.Struct("<qI")


def _read_hist(r: _Reader, scheme: BucketScheme, half_life_s: float | None) -> Histogram | None:
    if r.unpack(_U8)[0] == 0:
        return None
    reference, n = r.unpack(_HIST)
    if int(n) > scheme.count:
        raise CorruptCheckpoint(f"a histogram of {n} buckets, more than its scheme's {scheme.count}")
    idx = np.frombuffer(r.take(2 * int(n)), dtype="<u2").astype(np.intp)
    w = np.frombuffer(r.take(4 * int(n)), dtype="<f4").astype(np.float32)
    if not math.isfinite(reference) or (
        idx.size and (idx.max() >= scheme.count or (np.diff(idx) <= 0).any())
    ):
        raise CorruptCheckpoint("a histogram's reference time or bucket indices are out of range")
    if not (np.isfinite(w).all() and (w > 0).all()):
        raise CorruptCheckpoint("a histogram has a non-finite or non-positive weight")
    weights = np.zeros(scheme.count, dtype=np.float32)
    weights[idx] = w
    return Histogram(scheme, half_life_s, weights, float(reference))


def _read_state(r: _Reader, half_life_s: float | None) -> tuple[StateKey, UsageState]:
    (length,) = r.unpack(_U16)
    if int(length) > MAX_KEY_BYTES:
        raise CorruptCheckpoint(f"a state key of {length} bytes (at most {MAX_KEY_BYTES})")
    cluster, namespace, kind, name, container, template = json.loads(r.take(int(length)))
    key = StateKey(WorkloadRef(namespace, kind, name, cluster), container, template)
    cpu_peak, mem_peak, first, last, samples, day, mask = r.unpack(_SCALARS)
    (n_ooms,) = r.unpack(_U16)
    if int(n_ooms) > MAX_OOMS_READ:
        raise CorruptCheckpoint(f"{n_ooms} OOM kills in one state (at most {MAX_OOMS_READ})")
    ooms = tuple(OomEvent(*map(float, r.unpack(_OOM))) for _ in range(int(n_ooms)))
    cpu, mem, act, fb = (_read_hist(r, scheme, half_life_s) for scheme in SCHEMES)
    state = UsageState.empty(half_life_s)
    state.cpu, state.memory = cpu or state.cpu, mem or state.memory
    state.gpu_activity, state.gpu_framebuffer = act, fb
    state.cpu_peak, state.memory_peak, state.first_seen, state.last_seen = cpu_peak, mem_peak, first, last
    state.samples, state.newest_day, state.days_mask, state.ooms = int(samples), int(day), int(mask), ooms
    state.day_peaks = _floats(r, (2 * PEAK_TOP, PEAK_DAYS), "<f8")
    state.day_peak_at = _floats(r, (2 * PEAK_TOP, PEAK_DAYS), "<f8")
    (state.newest_hour,) = map(int, r.unpack(_I64))
    state.demand = _floats(r, (HOURLY_ROWS, DEMAND_HOURS), "<f4").astype(np.float32)
    (facts_len,) = r.unpack(_U32)
    if int(facts_len) > MAX_FACTS_BYTES:
        raise CorruptCheckpoint(f"facts of {facts_len} bytes (at most {MAX_FACTS_BYTES})")
    state.facts = _facts(r.take(int(facts_len)))
    state.day_cpu = _floats(r, (DAY_ROWS, PEAK_DAYS), "<f4").astype(np.float32)
    (n_open,) = r.unpack(_U8)
    for _ in range(int(n_open)):
        day, hours = r.unpack(_OPEN)
        hist = _read_hist(r, CPU_BUCKETS, None)
        if hist is not None:
            state.open_cpu[int(day)], state.open_hours[int(day)] = hist, int(hours)
    return key, state


def _floats(r: _Reader, shape: tuple[int, int], dtype: str) -> FloatArray:
    """A little-endian float array of `shape` (f4 or f8), in float64; infinity is corruption."""
    size = np.dtype(dtype).itemsize
    out = np.frombuffer(r.take(size * shape[0] * shape[1]), dtype=dtype).astype(np.float64).reshape(shape)
    if np.isinf(out).any():
        raise CorruptCheckpoint("daily peaks or demand hold an infinite value")
    return out


def _checked_body(data: bytes, expected: CheckpointSettings) -> tuple[int, memoryview, dict[str, float]]:
    """(states, compressed body, meta) once length, magic, version, checksum and settings are right."""
    if len(data) < _HEAD.size:
        raise TruncatedCheckpoint(f"{len(data)} bytes, shorter than the {_HEAD.size}-byte header")
    magic, version, head_len = _HEAD.unpack_from(data)
    if magic != MAGIC:
        raise CorruptCheckpoint("not a podsizer usage checkpoint (bad magic)")
    if version != FORMAT_VERSION:
        raise IncompatibleVersion(f"format version {version}, this build reads version {FORMAT_VERSION}")
    at = _HEAD.size + head_len
    if len(data) < at + _U32.size:
        raise TruncatedCheckpoint("ends inside the header")
    (meta_len,) = _U32.unpack_from(data, at)
    meta_at, at = at + _U32.size, at + _U32.size + meta_len
    if len(data) < at + _COUNTS.size:
        raise TruncatedCheckpoint("ends inside the header")
    count, body_len = _COUNTS.unpack_from(data, at)
    if count > MAX_STATES:
        raise CorruptCheckpoint(f"declares {count} states, more than the {MAX_STATES} a checkpoint may hold")
    end = at + _COUNTS.size + body_len
    if len(data) < end + _DIGEST:
        raise TruncatedCheckpoint(f"{len(data)} bytes, the header says {end + _DIGEST}")
    if len(data) > end + _DIGEST:
        raise CorruptCheckpoint(f"{len(data) - end - _DIGEST} bytes after the checksum")
    if hashlib.blake2b(data[:end], digest_size=_DIGEST).digest() != data[end:]:
        raise CorruptCheckpoint("checksum mismatch")
    written = data[_HEAD.size : _HEAD.size + head_len]
    if written != expected.encode():
        raise ChangedSettings(f"written under {written.decode(errors='replace')}, now {expected}")
    try:
        meta = json.loads(data[meta_at:at])
        if not isinstance(meta, dict):
            raise ValueError("meta is not an object")
        return int(count), memoryview(data)[at + _COUNTS.size : end], meta
    except (zlib.error, ValueError) as exc:
        raise CorruptCheckpoint(f"header or body does not decode: {exc}") from exc


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint read back: its states and meta."""

    states: dict[StateKey, UsageState]
    meta: Mapping[str, float]


def loads(data: bytes, expected: CheckpointSettings) -> dict[StateKey, UsageState]:
    """Every state of a checkpoint written under `expected`; CheckpointError (which one says why) else."""
    return read(data, expected).states


def read(data: bytes, expected: CheckpointSettings) -> Checkpoint:
    """The states and meta of a checkpoint written under `expected`; CheckpointError (which one says why)
    else."""
    count, body, meta = _checked_body(data, expected)
    r = _Reader(body)
    out: dict[StateKey, UsageState] = {}
    try:
        for _ in range(count):
            key, state = _read_state(r, expected.half_life_s)
            out[key] = state
        whole = r.at_end()
    except (ValueError, TypeError, struct.error, zlib.error) as exc:
        if isinstance(exc, CheckpointError):
            raise
        raise CorruptCheckpoint(f"a state record does not parse: {exc}") from exc
    if not whole or len(out) != count:
        raise CorruptCheckpoint("the body holds other than the stated number of states")
    if not all(isinstance(v, int | float) for v in meta.values()):
        raise CorruptCheckpoint("meta holds a value that is not a number")
    return Checkpoint(out, meta)
