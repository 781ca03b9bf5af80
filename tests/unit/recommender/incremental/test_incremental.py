"""IncrementalSource (recommender.incremental): cold start in chunks, delta cycles that read only new
samples, rebuilds and their reasons, checkpoints restored or discarded; results equal a full-window
rebuild within the histograms' resolution. The source is a stand-in that cuts one RawDataset (the quality
benchmark's traces) to what each call asks for; tests/integration/prometheus/test_incremental.py runs the
same against a real Prometheus."""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import cast

import numpy as np
import pytest
from prometheus_client import CollectorRegistry

from bench.quality.prom import dataset
from bench.quality.traces import generate
from podsizer.api.identity import WorkloadRef
from podsizer.owners import Skipped
from podsizer.subject import Subject
from recommender.checkpoints.base import BlobKey, ReadResult, WriteResult
from recommender.checkpoints.filestore import FileCheckpointStore
from recommender.incremental.source import IncrementalSource
from recommender.input.prometheus.source import PrometheusSource
from recommender.metrics import RecommenderMetrics
from recommender.model import ContainerUsage, Progress, UsageSnapshot
from recommender.model.aggregate import aggregate, snapshot
from recommender.model.checkpoint import dumps, read
from recommender.model.raw import RawDataset
from recommender.model.recency import DEFAULT, OFF, Recency
from recommender.model.samples import clip
from recommender.model.stream import cold_start

NOW = datetime(2026, 12, 1, tzinfo=UTC)
WEEK = timedelta(days=7)
T = NOW  # hour-aligned: the demand grids of both paths agree
T0 = T - timedelta(hours=5, minutes=17)
QS = ("p50", "p90", "p95", "p99", "max", "second_max")


@dataclass
class Call:
    start: datetime
    fresh_from: datetime
    end: datetime
    cluster_wide: bool
    identity_from: datetime | None = None  # None: the window's start


@dataclass
class Cut:
    """A PrometheusSource stand-in: each dataset() call gets `raw` cut as the real source would read it."""

    raw: RawDataset
    recency: Recency = DEFAULT
    name: str = "prometheus"
    resolution_s: int = 60
    rate_s: int = 120
    activity_step_s: int = 300
    cluster: str = ""
    cluster_label: str = ""
    client: object = None
    calls: list[Call] = field(default_factory=list)

    def namespaces_in(self, start: datetime, end: datetime) -> list[str]:
        return sorted({s.namespace for s in self.raw.containers})

    def cycle(self) -> AbstractContextManager[object]:
        return nullcontext()

    def cold_start_plan(
        self, start: datetime, end: datetime, batch: int, points: int | None
    ) -> tuple[Cut, int, int | None]:
        return self, batch, points  # the caller's plan, as for range queries

    def for_namespaces(self, namespaces: list[str]) -> Cut:
        keep = set(namespaces)
        raw = replace(
            self.raw,
            pods=tuple(p for p in self.raw.pods if p.namespace in keep),
            containers=tuple(s for s in self.raw.containers if s.namespace in keep),
            ooms=tuple(o for o in self.raw.ooms if o.namespace in keep),
        )
        return replace(self, raw=raw)  # the same list of calls

    def dataset(
        self,
        start: datetime,
        end: datetime,
        progress: Progress | None = None,
        *,
        fresh_from: datetime | None = None,
        cluster_wide: bool = True,
        identity_from: datetime | None = None,
    ) -> RawDataset:
        fresh = fresh_from or start
        self.calls.append(Call(start, fresh, end, cluster_wide, identity_from))
        part = clip(self.raw, fresh, end + timedelta(seconds=1))
        gpus = clip(self.raw, start, end + timedelta(seconds=1)).gpus if cluster_wide else ()
        # pods: those with series from identity_from on, as a series lookup over that interval finds them
        seen = clip(self.raw, identity_from or start, end + timedelta(seconds=1))
        alive = {(c.namespace, c.pod) for c in seen.containers} | {(g.namespace, g.pod) for g in seen.gpus}
        pods = tuple(p for p in self.raw.pods if (p.namespace, p.name) in alive)
        return replace(part, start=fresh, end=end, gpus=gpus, pods=pods)


@pytest.fixture(scope="module")
def raw() -> RawDataset:
    return dataset(generate(), NOW)


def incremental(cut: Cut, **kw: object) -> IncrementalSource:
    """An IncrementalSource over `cut`; cold starts in day chunks unless `chunk` says otherwise (fast)."""
    kw.setdefault("chunk", timedelta(days=1))
    return IncrementalSource(cast(PrometheusSource, cut), window=WEEK, **kw)  # type: ignore[arg-type]


def full(raw: RawDataset, end: datetime, recency: Recency = DEFAULT) -> UsageSnapshot:
    return aggregate(
        replace(clip(raw, end - WEEK, end + timedelta(seconds=1)), end=end), source="x", recency=recency
    )


def by_key(snap: UsageSnapshot) -> dict[tuple[WorkloadRef, str], ContainerUsage]:
    return {(u.workload, u.container): u for u in snap.containers}


def worst_error(a: UsageSnapshot, b: UsageSnapshot) -> float:
    """The largest relative difference of any percentile or peak of any container (same containers)."""
    ka, kb = by_key(a), by_key(b)
    assert set(ka) == set(kb)
    worst = 0.0
    for k, u in ka.items():
        for res in ("cpu_cores", "memory_bytes"):
            for q in QS:
                x, y = getattr(getattr(u, res), q), getattr(getattr(kb[k], res), q)
                if x:
                    worst = max(worst, abs(y - x) / abs(x))
    return worst


def history(u: ContainerUsage) -> tuple[object, ...]:
    return (u.samples, u.first_seen, u.last_seen, u.pods, u.runs, u.oom_kill_memory_bytes,
            dict(u.current_requests), dict(u.current_limits), u.init_container)  # fmt: skip


def test_a_delta_cycle_equals_a_full_window_rebuild_within_two_percent(raw: RawDataset) -> None:
    source = incremental(Cut(raw))
    source.collect(T0 - WEEK, T0)
    got = source.collect(T - WEEK, T)
    exact = full(raw, T)
    assert len(exact.containers) > 20
    assert worst_error(exact, got) <= 0.02
    assert {k: history(u) for k, u in by_key(got).items()} == {
        k: history(u) for k, u in by_key(exact).items()
    }
    assert got.pod_labels == exact.pod_labels
    assert [(d.workload, d.cpu_cores.start, len(d.cpu_cores)) for d in got.demand] == [
        (d.workload, d.cpu_cores.start, len(d.cpu_cores)) for d in exact.demand
    ]
    for mine, theirs in zip(got.demand, exact.demand, strict=True):
        np.testing.assert_allclose(mine.memory_bytes.values, theirs.memory_bytes.values, rtol=1e-6)
    assert len(got.gpus) == len(exact.gpus) > 0


def test_a_delta_cycle_reads_from_the_hour_of_the_models_newest_sample(raw: RawDataset) -> None:
    cut = Cut(raw)
    source = incremental(cut)
    source.collect(T0 - WEEK, T0)
    cut.calls.clear()
    source.collect(T - WEEK, T)
    hour = T0.replace(minute=0)
    assert cut.calls == [Call(T - WEEK, hour, T, True, hour)]  # pods too: only the interval's
    assert source.last_cycle is not None and source.last_cycle.kind == "delta"


def test_a_cold_start_reads_each_namespace_batch_in_chunks_that_tile_the_window(raw: RawDataset) -> None:
    two = replace(
        raw, containers=(*raw.containers, *(replace(c, namespace="other") for c in raw.containers[:3]))
    )
    cut = Cut(two)
    source = incremental(cut, chunk=timedelta(hours=12), namespace_batch=1)
    source.collect(T0 - WEEK, T0)
    chunks, last = cut.calls[:-1], cut.calls[-1]
    assert len(chunks) == 2 * 15  # two batches of one namespace; 7 days of 12 h chunks, two partial
    for batch in (chunks[:15], chunks[15:]):
        spans = [(c.fresh_from, c.end) for c in batch]
        assert spans[0][0] == T0 - WEEK and spans[-1][1] == T0
        assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
        assert all(end - start <= timedelta(hours=12) for start, end in spans)
        assert not any(c.cluster_wide for c in batch)
    # then the window's pods, GPUs, autoscalers and nodes, re-reading the last hour
    assert last == Call(T0 - WEEK, T0.replace(minute=0), T0, True, T0 - WEEK)
    assert source.last_cycle is not None and source.last_cycle.kind == "cold"


def test_a_streamed_cold_start_reads_as_the_whole_dataset_at_once(raw: RawDataset) -> None:
    """`podsizer recommend`'s read (recommender.model.stream: namespace batches in time chunks, one chunk
    in memory) and one RawDataset folded at once (aggregate: the demo, file and DCGM sources) give the
    same usage, per-replica steady state included, within the histograms' resolution."""
    cut = Cut(raw)
    cold = cold_start(cut, T - WEEK, T, recency=DEFAULT, chunk_s=6 * 3600.0, namespace_batch=1)
    assert len(cut.calls) == 28  # 6 h chunks of the one namespace
    window = replace(clip(raw, T - WEEK, T + timedelta(seconds=1)), start=T - WEEK, end=T)
    idents = replace(window, pods=tuple(cold.known.pods.values()), containers=(), ooms=())
    streamed = snapshot(cold.model, idents, source="x", window=(T - WEEK, T), skipped=cold.skipped.values())
    exact = full(raw, T)
    assert len(exact.containers) > 20
    assert worst_error(exact, streamed) <= 0.02
    for k, u in by_key(streamed).items():
        theirs = by_key(exact)[k]
        assert u.per_replica_cpu_cores == pytest.approx(theirs.per_replica_cpu_cores, rel=0.02, abs=1e-4)
        assert u.per_replica_memory_bytes == pytest.approx(theirs.per_replica_memory_bytes, rel=0.02)
        assert history(u) == history(theirs)
    assert streamed.pod_labels == exact.pod_labels
    assert {str(x.subject) for x in streamed.skipped} == {str(x.subject) for x in exact.skipped}


@dataclass
class FailingOnce(Cut):
    """A Cut whose one chunk of one namespace is refused, as PrometheusSource lists an answer over the cap."""

    fail: tuple[str, datetime] = ("", NOW)  # (namespace, a time in the chunk refused); Cut's replace keeps it

    def dataset(self, start: datetime, end: datetime, *args: object, **kw: object) -> RawDataset:
        raw = super().dataset(start, end, *args, **kw)  # type: ignore[arg-type]
        namespace, at = self.fail
        if start <= at < end and any(s.namespace == namespace for s in raw.containers):
            why = Skipped(Subject.of_namespace(namespace), "answer over the cap")
            raw = replace(
                raw, containers=tuple(s for s in raw.containers if s.namespace != namespace), skipped=(why,)
            )
        return raw


def test_a_namespace_a_chunk_of_which_failed_is_left_out_whole(raw: RawDataset) -> None:
    other = replace(  # the traces again in a second namespace
        raw,
        pods=(*raw.pods, *(replace(p, namespace="other") for p in raw.pods)),
        owners=(*raw.owners, *(replace(o, namespace="other") for o in raw.owners)),
        containers=(*raw.containers, *(replace(c, namespace="other") for c in raw.containers)),
    )
    namespaces = sorted({s.namespace for s in other.containers})
    cut = FailingOnce(other, fail=(namespaces[0], T - timedelta(days=3)))
    cold = cold_start(cut, T - WEEK, T, recency=DEFAULT, chunk_s=86400.0, namespace_batch=1)
    left = {k.workload.namespace for k in cold.model.states}
    assert namespaces[0] not in left and set(namespaces[1:]) <= left
    assert Subject.of_namespace(namespaces[0]) in cold.skipped


@pytest.mark.parametrize(
    ("second_end", "reason"),
    [
        (T0 + WEEK + timedelta(hours=2), "gap of 170.0 h"),
        (T0 - timedelta(hours=3), "before the model's newest sample"),
    ],
)
def test_a_gap_or_an_earlier_window_end_rebuilds_saying_why(
    raw: RawDataset, second_end: datetime, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    metrics = RecommenderMetrics(CollectorRegistry())
    cut = Cut(raw)
    source = incremental(cut, metrics=metrics)
    source.collect(T0 - WEEK, T0)
    with caplog.at_level(logging.INFO, logger="podsizer.incremental"):
        source.collect(second_end - WEEK, second_end)
    assert source.last_cycle is not None and source.last_cycle.kind == "cold"
    assert reason in source.last_cycle.reason
    assert any(reason in r.getMessage() for r in caplog.records)
    label = "gap" if "gap" in reason else "backtest"
    assert (
        metrics.registry.get_sample_value(
            "podsizer_recommender_usage_cycles_total", {"kind": "cold", "reason": label}
        )
        == 1.0
    )


def test_without_decay_the_model_is_rebuilt_once_a_window(raw: RawDataset) -> None:
    source = incremental(Cut(raw, recency=OFF))
    source.collect(T0 - WEEK, T0)
    source.collect(T - WEEK, T)
    assert source.last_cycle is not None and source.last_cycle.kind == "delta"
    later = T0 + WEEK + timedelta(hours=1)  # within a window of the newest sample, a window after the build
    source.collect(later - WEEK, later)
    assert source.last_cycle is not None
    assert source.last_cycle.reason == "no decay: the model is rebuilt once a window"


def test_states_of_workloads_gone_longer_than_the_window_are_dropped(raw: RawDataset) -> None:
    source = incremental(Cut(raw))
    source.collect(T - WEEK, T)
    assert source.model is not None
    before = set(source.model.states)
    later = T + WEEK - timedelta(minutes=30)  # the traces end at T: no new samples, no gap
    source.collect(later - WEEK, later)
    assert source.last_cycle is not None and source.last_cycle.kind == "delta"
    start = (later - WEEK).timestamp()
    gone = before - set(source.model.states)
    assert len(gone) == source.last_cycle.forgotten > 0
    assert all(s.last_seen >= start for s in source.model.states.values())


# ---- checkpoints ----------------------------------------------------------------------------------


def test_a_restart_restores_the_checkpoint_and_reads_only_new_samples(
    raw: RawDataset, tmp_path: Path
) -> None:
    store = FileCheckpointStore(tmp_path / "usage.ckpt")
    first = incremental(Cut(raw), store=store)
    first.collect(T0 - WEEK, T0)
    first.flush()  # written in the background
    assert first.last_cycle is not None and first.checkpoint_bytes == (tmp_path / "usage.ckpt").stat().st_size
    cut = Cut(raw)
    again = incremental(cut, store=FileCheckpointStore(tmp_path / "usage.ckpt"))
    got = again.collect(T - WEEK, T)
    assert again.last_cycle is not None and again.last_cycle.kind == "restored"
    # the samples since the checkpoint; the pods of the window once (not in the checkpoint)
    assert cut.calls == [Call(T - WEEK, T0.replace(minute=0), T, True, T - WEEK)]
    kept = first.collect(T - WEEK, T)  # the process that never stopped
    assert {k: u for k, u in by_key(got).items()} == by_key(kept)


def corrupt(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (corrupt, "CorruptCheckpoint: checksum mismatch"),
        (lambda p: p.write_bytes(p.read_bytes()[:100]), "TruncatedCheckpoint"),
        (lambda p: p.write_bytes(b"not a checkpoint at all"), "CorruptCheckpoint: not a podsizer"),
    ],
)
def test_a_damaged_checkpoint_is_discarded_with_a_log_line_and_rebuilt(
    raw: RawDataset, tmp_path: Path, damage: object, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "usage.ckpt"
    writer = incremental(Cut(raw), store=FileCheckpointStore(path))
    writer.collect(T0 - WEEK, T0)
    writer.flush()
    damage(path)  # type: ignore[operator]
    metrics = RecommenderMetrics(CollectorRegistry())
    again = incremental(Cut(raw), store=FileCheckpointStore(path), metrics=metrics)
    with caplog.at_level(logging.WARNING, logger="podsizer.incremental"):
        got = again.collect(T - WEEK, T)
    assert again.last_cycle is not None and again.last_cycle.kind == "cold"
    assert any("discarded" in r.getMessage() and why in r.getMessage() for r in caplog.records)
    assert (
        metrics.registry.get_sample_value(
            "podsizer_recommender_checkpoint_errors_total", {"kind": "discarded"}
        )
        == 1
    )
    assert worst_error(full(raw, T), got) <= 0.02  # rebuilt: the same figures


@pytest.mark.parametrize(
    ("meta", "value"), [("covered_until", 1e300), ("built_at", -1e18), ("covered_until", 5.0)]
)
def test_a_checkpoint_with_an_out_of_range_time_is_discarded_and_the_cycle_runs(
    raw: RawDataset, tmp_path: Path, meta: str, value: float, caplog: pytest.LogCaptureFixture
) -> None:
    """One out-of-range time in the meta made every cycle fail with a traceback until the file was removed:
    now that checkpoint is discarded (named) and the model rebuilt."""
    path = tmp_path / "usage.ckpt"
    writer = incremental(Cut(raw), store=FileCheckpointStore(path))
    writer.collect(T0 - WEEK, T0)
    writer.flush()
    written = read(path.read_bytes(), writer.settings)
    path.write_bytes(dumps(written.states, writer.settings, {**written.meta, meta: value}))
    again = incremental(Cut(raw), store=FileCheckpointStore(path))
    with caplog.at_level(logging.WARNING, logger="podsizer.incremental"):
        got = again.collect(T - WEEK, T)
    assert again.last_cycle is not None and again.last_cycle.kind == "cold"
    assert any(f"{meta} {value!r} is not a time" in r.getMessage() for r in caplog.records)
    assert worst_error(full(raw, T), got) <= 0.02


def test_workloads_only_in_a_checkpoint_never_become_recommendations(raw: RawDataset, tmp_path: Path) -> None:
    """200 forged states of workloads the source has no pod of, in an otherwise good checkpoint: the snapshot
    sizes only the source's workloads, and the forged states leave the model (and the next checkpoint)."""
    path = tmp_path / "usage.ckpt"
    writer = incremental(Cut(raw), store=FileCheckpointStore(path))
    writer.collect(T0 - WEEK, T0)
    writer.flush()
    written = read(path.read_bytes(), writer.settings)
    (key, state), *_ = sorted(written.states.items())
    forged = {
        replace(key, workload=WorkloadRef("shop", "Deployment", f"forged-{i}")): state for i in range(200)
    }
    path.write_bytes(dumps({**written.states, **forged}, writer.settings, written.meta))
    again = incremental(Cut(raw), store=FileCheckpointStore(path))
    got = again.collect(T - WEEK, T)
    assert again.last_cycle is not None and again.last_cycle.kind == "restored"
    assert not {c.workload.name for c in got.containers if c.workload.name.startswith("forged-")}
    assert {c.workload for c in got.containers} == {c.workload for c in full(raw, T).containers}
    assert again.model is not None and not set(forged) & set(again.model.states)


def test_a_checkpoint_written_under_another_half_life_is_rebuilt(
    raw: RawDataset, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "usage.ckpt"
    writer = incremental(Cut(raw), store=FileCheckpointStore(path))
    writer.collect(T0 - WEEK, T0)
    writer.flush()
    again = incremental(Cut(raw, recency=Recency(half_life_s=3600.0)), store=FileCheckpointStore(path))
    with caplog.at_level(logging.WARNING, logger="podsizer.incremental"):
        again.collect(T - WEEK, T)
    assert again.last_cycle is not None and again.last_cycle.kind == "cold"
    assert any("ChangedSettings" in r.getMessage() for r in caplog.records)


@dataclass
class PerWorkload:
    """A per-workload CheckpointStore in memory (the CRD store's shape)."""

    blobs: dict[BlobKey, bytes] = field(default_factory=dict)
    unreadable: tuple[str, ...] = ()
    name: str = "memory"
    per_workload: bool = True
    writes: int = 0

    def read(self) -> ReadResult:
        return ReadResult(dict(self.blobs), self.unreadable)

    def write(self, blobs: Mapping[BlobKey, bytes]) -> WriteResult:
        self.writes += 1
        self.blobs = dict(blobs)
        return WriteResult(written=len(blobs), bytes=sum(map(len, blobs.values())))


def written(source: IncrementalSource) -> IncrementalSource:
    source.flush()
    return source


def collected(source: IncrementalSource, end: datetime) -> IncrementalSource:
    """One cycle to `end`, its checkpoint written."""
    source.collect(end - WEEK, end)
    return written(source)


def test_a_per_workload_store_gets_one_blob_per_workload_and_restores_them(raw: RawDataset) -> None:
    store = PerWorkload()
    first = incremental(Cut(raw), store=store)
    first.collect(T0 - WEEK, T0)
    written(first)
    assert first.model is not None
    assert set(store.blobs) == {k.workload for k in first.model.states}
    again = incremental(Cut(raw), store=store)
    again.collect(T - WEEK, T)
    assert again.last_cycle is not None and again.last_cycle.kind == "restored"


def test_objects_of_two_cycles_restore_reading_the_older_workloads_from_their_time(
    raw: RawDataset, caplog: pytest.LogCaptureFixture
) -> None:
    store = PerWorkload()
    source = incremental(Cut(raw), store=store)
    source.collect(T0 - WEEK, T0)
    old = dict(written(source).store.blobs)  # type: ignore[union-attr]
    middle = T0 + timedelta(hours=2)
    source.collect(middle - WEEK, middle)
    written(source)
    lagging = next(iter(old))
    store.blobs[lagging] = old[lagging]  # that object's write of the second cycle was lost
    cut = Cut(raw)
    again = incremental(cut, store=store)
    with caplog.at_level(logging.INFO, logger="podsizer.incremental"):
        got = again.collect(T - WEEK, T)
    assert again.last_cycle is not None and again.last_cycle.kind == "restored"
    assert any("older than the rest" in r.getMessage() for r in caplog.records)
    assert [c.fresh_from for c in cut.calls] == [T0.replace(minute=0)]  # from the lagging object's hour
    kept = source.collect(T - WEEK, T)  # the process that lost nothing
    assert worst_error(kept, got) < 1e-5  # float32 sums in another order
    assert {k: history(u) for k, u in by_key(got).items()} == {k: history(u) for k, u in by_key(kept).items()}


def test_an_unreadable_object_means_a_rebuild(raw: RawDataset) -> None:
    store = PerWorkload()
    collected(incremental(Cut(raw), store=store), T0)
    store.unreadable = ("quality/usagecheckpoint/deployment-web: data is not base64",)
    again = incremental(Cut(raw), store=store)
    again.collect(T - WEEK, T)
    assert again.last_cycle is not None and again.last_cycle.kind == "cold"


def test_a_source_that_only_reads_the_checkpoint_never_writes_it(raw: RawDataset) -> None:
    store = PerWorkload()
    collected(incremental(Cut(raw), store=store), T0)
    before = dict(store.blobs)
    reader = incremental(Cut(raw), store=store, save=False)
    reader.collect(T - WEEK, T)
    reader.flush()
    assert reader.last_cycle is not None and reader.last_cycle.kind == "restored"
    assert store.blobs == before and store.writes == 1


def test_forget_makes_the_next_cycle_restore_what_the_store_holds(raw: RawDataset) -> None:
    store = PerWorkload()
    source = incremental(Cut(raw), store=store)
    source.collect(T0 - WEEK, T0)
    written(source).forget()
    assert source.model is None
    source.collect(T - WEEK, T)
    assert source.last_cycle is not None and source.last_cycle.kind == "restored"


def test_the_chunk_must_be_whole_hours(raw: RawDataset) -> None:
    with pytest.raises(ValueError, match="whole number of hours"):
        incremental(Cut(raw), chunk=timedelta(minutes=90))


def test_no_model_and_no_checkpoint_is_a_cold_start_with_that_reason(raw: RawDataset, tmp_path: Path) -> None:
    source = incremental(Cut(raw), store=FileCheckpointStore(tmp_path / "none-yet.ckpt"))
    source.collect(T - WEEK, T)
    assert source.last_cycle is not None
    assert (source.last_cycle.kind, source.last_cycle.reason) == ("cold", "no usage model yet")
    assert not math.isnan(source.model.covered_until)  # type: ignore[union-attr]
