"""The loop: collect -> recommend -> store with fakes; failures counted, source outages backed off."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from prometheus_client import CollectorRegistry

from podsizer.api.identity import WorkloadRef
from podsizer.api.resource import ContainerPolicy, ContainerRecommendation, Recommendation, Window
from podsizer.owners import Skipped
from podsizer.subject import Subject
from recommender.metrics import RecommenderMetrics, serve_metrics
from recommender.model import Progress, SourceError, UsageSnapshot
from recommender.output.store import StoreError
from recommender.runner import Runner, backoff_delay

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
Bounds = Mapping[WorkloadRef, tuple[ContainerPolicy, ...]]
Failures = list[tuple[Recommendation, Exception]]


def rec(name: str) -> Recommendation:
    return Recommendation(
        target=WorkloadRef("shop", "Deployment", name),
        generated_at=T0,
        window=Window(T0 - timedelta(days=7), T0, 100),
        sizing_mode="static",
        containers=(ContainerRecommendation("main", {"cpu": "100m"}, {}, 0.9, "p99"),),
    )


class FakeSource:
    name = "fake"

    def __init__(self, fail: int = 0) -> None:
        self.fail = fail
        self.calls: list[tuple[datetime, datetime]] = []

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
        self.calls.append((start, end))
        if self.fail:
            self.fail -= 1
            raise SourceError("Prometheus at http://prom:9090 is unreachable")
        return UsageSnapshot(start, end, ())


class FakeStore:
    def __init__(self, bad: set[str] | None = None, down: bool = False) -> None:
        self.items: dict[WorkloadRef, Recommendation] = {}
        self.bad = bad or set()
        self.down = down
        self.puts = 0

    def list(self) -> list[Recommendation]:
        return list(self.items.values())

    def get(self, ref: WorkloadRef) -> Recommendation | None:
        return self.items.get(ref)

    def put(self, r: Recommendation) -> None:
        self.puts += 1
        if self.down:
            raise StoreError("store down")
        if r.target.name in self.bad:
            raise StoreError(f"{r.target}: rejected")
        self.items[r.target] = r

    def put_many(self, recs: Sequence[Recommendation]) -> Failures:
        failed: Failures = []
        for r in recs:
            try:
                self.put(r)
            except StoreError as exc:
                failed.append((r, exc))
        return failed

    def bounds(self) -> Bounds:
        if self.down:
            raise StoreError("store down")
        return {WorkloadRef("shop", "Deployment", "web"): (ContainerPolicy("*", {"cpu": 0.2}),)}


@dataclass(frozen=True)
class Output:
    recommendations: tuple[Recommendation, ...]
    skipped: tuple[Skipped, ...] = ()


class FakeRecommend:
    def __init__(self, names: Sequence[str], skipped: Sequence[Skipped] = ()) -> None:
        self.names = names
        self.skipped = tuple(skipped)
        self.bounds: list[Bounds] = []

    def __call__(self, snapshot: UsageSnapshot, bounds: Bounds, now: datetime) -> Output:
        self.bounds.append(bounds)
        return Output(tuple(rec(n) for n in self.names), self.skipped)


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    value = registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def make(
    source: FakeSource, store: FakeStore, recommend: FakeRecommend, **kw: object
) -> tuple[Runner, CollectorRegistry]:
    registry = CollectorRegistry()
    runner = Runner(
        source,
        store,
        recommend,
        window_days=7,
        interval_seconds=3600,
        backoff_initial_seconds=5,
        backoff_max_seconds=60,
        clock=lambda: T0,
        jitter=lambda: 0.0,
        metrics=RecommenderMetrics(registry),
        **kw,  # type: ignore[arg-type]
    )
    return runner, registry


def test_run_once_collects_the_window_up_to_now_and_stores_every_recommendation() -> None:
    source, store, recommend = FakeSource(), FakeStore(), FakeRecommend(["web", "api"])
    runner, registry = make(source, store, recommend)
    result = runner.run_once()
    assert source.calls == [(T0 - timedelta(days=7), T0)]
    assert result.ok and result.written == 2 and result.errors == ()
    assert set(store.items) == {rec("web").target, rec("api").target}
    assert recommend.bounds == [store.bounds()]
    assert sample(registry, "podsizer_recommender_workloads_processed_total", outcome="recommended") == 2
    assert sample(registry, "podsizer_recommender_last_success_timestamp_seconds") == T0.timestamp()
    assert sample(registry, "podsizer_recommender_loop_duration_seconds_count", outcome="ok") == 1


def test_one_failing_workload_is_counted_and_the_others_are_written() -> None:
    skipped = [
        Skipped(Subject.of_workload(rec("broken").target), "sizing failed: ValueError: boom", failed=True),
        Skipped(Subject.of_namespace("x"), "no samples"),
    ]
    source, store, recommend = (
        FakeSource(),
        FakeStore(bad={"api"}),
        FakeRecommend(["web", "api", "db"], skipped),
    )
    runner, registry = make(source, store, recommend)
    result = runner.run_once()
    assert result.ok
    assert result.written == 2
    assert {e.kind for e in result.errors} == {"store", "sizing"}
    assert set(store.items) == {rec("web").target, rec("db").target}
    assert sample(registry, "podsizer_recommender_errors_total", kind="store") == 1
    assert sample(registry, "podsizer_recommender_errors_total", kind="sizing") == 1
    assert sample(registry, "podsizer_recommender_workloads_processed_total", outcome="failed") == 2
    assert sample(registry, "podsizer_recommender_workloads_processed_total", outcome="skipped") == 1


def test_source_error_keeps_the_store_untouched_and_asks_for_a_retry() -> None:
    source, store, recommend = FakeSource(fail=1), FakeStore(), FakeRecommend(["web"])
    store.items[rec("old").target] = rec("old")
    runner, registry = make(source, store, recommend)
    result = runner.run_once()
    assert not result.ok and result.retry
    assert result.errors[0].kind == "source" and "unreachable" in result.errors[0].message
    assert store.puts == 0 and list(store.items) == [rec("old").target]
    assert recommend.bounds == []
    assert sample(registry, "podsizer_recommender_errors_total", kind="source") == 1
    assert registry.get_sample_value("podsizer_recommender_last_success_timestamp_seconds") == 0.0


def test_an_unexpected_source_exception_is_handled_like_a_source_error() -> None:
    class Crashing(FakeSource):
        def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
            raise KeyError("label")

    runner, _ = make(Crashing(), FakeStore(), FakeRecommend(["web"]))
    result = runner.run_once()
    assert result.retry and result.errors[0].kind == "source"


def test_unreadable_store_writes_nothing_and_retries() -> None:
    store = FakeStore(down=True)
    runner, _ = make(FakeSource(), store, FakeRecommend(["web"]))
    result = runner.run_once()
    assert result.retry and not result.ok and store.puts == 0
    assert result.errors[0].kind == "store"


def test_backoff_is_exponential_capped_and_jittered() -> None:
    assert [backoff_delay(n, 5, 60, 0.0) for n in (1, 2, 3, 4, 5, 6)] == [2.5, 5, 10, 20, 30, 30]
    assert [backoff_delay(n, 5, 60, 0.999999) for n in (1, 5, 9)] == pytest.approx([5, 60, 60], rel=1e-5)


def test_the_loop_backs_off_while_the_source_is_down_then_returns_to_the_interval() -> None:
    source, store = FakeSource(fail=3), FakeStore()
    runner, _ = make(source, store, FakeRecommend(["web"]), monotonic=lambda: 0.0)
    stop = threading.Event()
    delays: list[float] = []

    def wait(seconds: float) -> bool:
        delays.append(seconds)
        return len(delays) >= 5

    runner.run_forever(stop, wait)
    assert delays == [2.5, 5.0, 10.0, 3600.0, 3600.0]
    assert len(source.calls) == 5
    assert store.puts == 2


def test_a_replica_that_is_not_the_leader_neither_collects_nor_writes() -> None:
    class Flag:
        leader = False

        def is_leader(self) -> bool:
            return self.leader

        def start(self) -> None: ...

        def stop(self) -> None: ...

    flag = Flag()
    source, store = FakeSource(), FakeStore()
    runner, registry = make(source, store, FakeRecommend(["web"]), leadership=flag, leader_poll_seconds=1.0)
    delays: list[float] = []

    def wait(seconds: float) -> bool:
        delays.append(seconds)
        if len(delays) == 3:
            flag.leader = True
        return len(delays) >= 4

    runner.run_forever(threading.Event(), wait)
    assert delays[:3] == [1.0, 1.0, 1.0]
    assert len(source.calls) == 1 and store.puts == 1
    assert sample(registry, "podsizer_recommender_leader") == 1


def test_losing_leadership_during_a_run_writes_nothing() -> None:
    class Once:
        calls = 0

        def is_leader(self) -> bool:
            self.calls += 1
            return False

        def start(self) -> None: ...

        def stop(self) -> None: ...

    store = FakeStore()
    runner, _ = make(FakeSource(), store, FakeRecommend(["web"]), leadership=Once())
    result = runner.run_once()
    assert store.puts == 0 and not result.wrote_store and not result.retry


def test_losing_leadership_calls_the_hook_once_per_loss() -> None:
    class Flips:
        answers = [True, False, False, True, False]

        def is_leader(self) -> bool:
            return self.answers.pop(0)

        def start(self) -> None: ...

        def stop(self) -> None: ...

    lost: list[int] = []
    runner, _ = make(FakeSource(), FakeStore(), FakeRecommend(["web"]), leadership=Flips(),
                     on_leadership_lost=lambda: lost.append(1))  # fmt: skip
    seen = [runner._is_leader() for _ in range(5)]
    assert seen == [True, False, False, True, False]
    assert len(lost) == 2  # after the first and the fourth answer


def test_metrics_are_served_over_http_and_the_server_stops() -> None:
    registry = CollectorRegistry()
    metrics = RecommenderMetrics(registry)
    metrics.errors.labels(kind="source").inc()
    server = serve_metrics(registry, 0, "127.0.0.1")
    try:
        body = httpx.get(f"http://127.0.0.1:{server.port}/metrics", timeout=5).text
    finally:
        server.stop()
    assert 'podsizer_recommender_errors_total{kind="source"} 1.0' in body
    assert "podsizer_recommender_loop_duration_seconds_bucket" in body
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{server.port}/metrics", timeout=2)
