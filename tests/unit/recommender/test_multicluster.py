"""Many clusters in one run: identity, the per-cluster plan and loop (recommend and run), merged
reports, outputs naming the cluster, explain, and the stores keyed and filtered by cluster."""

from __future__ import annotations

import argparse
import copy
import csv
import io
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from podsizer.api.identity import WorkloadRef
from podsizer.api.resource import (
    ContainerPolicy,
    ContainerRecommendation,
    Recommendation,
    Window,
    of_cluster,
    recommendation_to_resource,
)
from podsizer.owners import Skipped
from podsizer.podspec import CurrentResources
from podsizer.settings import RecommenderSettings, SettingsError
from podsizer.subject import Subject
from recommender.clusters import ClusterSource, InCluster, bounds_in, cluster_sources, progress_in
from recommender.commands import add_recommend_arguments, load_settings, one_run
from recommender.explain import ambiguous, find, matches, not_found
from recommender.model import Progress, UsageSnapshot
from recommender.model.clusters import skipped_in, snapshot_in
from recommender.output.report import CSV_COLUMNS, Report, merge_reports, render
from recommender.output.store import CrdStore, JsonFileStore
from recommender.runner import MergedRun, Runner, merge_runs, run_in
from recommender.wiring import Wiring
from tests.support.custom_objects import fake_recommendations

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
Bounds = Mapping[WorkloadRef, tuple[ContainerPolicy, ...]]


def rec(cluster: str = "", name: str = "web", cpu: str = "100m") -> Recommendation:
    return Recommendation(
        target=WorkloadRef("shop", "Deployment", name, cluster),
        generated_at=T0,
        window=Window(T0 - timedelta(days=7), T0, 100),
        sizing_mode="static",
        containers=(ContainerRecommendation("main", {"cpu": cpu}, {}, 0.9, "p99"),),
    )


# --- identity ------------------------------------------------------------------------------------


def test_workload_ref_names_its_cluster_only_when_set_and_sorts_with_or_without() -> None:
    plain, east = WorkloadRef("shop", "Deployment", "web"), WorkloadRef("shop", "Deployment", "web", "east")
    assert (str(plain), str(east)) == ("shop/Deployment/web", "east:shop/Deployment/web")
    assert plain != east and east.in_cluster("") == plain and plain.in_cluster("east") == east
    assert plain.recommendation_name == east.recommendation_name == "deployment-web"
    refs = [WorkloadRef("b", "Deployment", "x", "west"), east, plain, WorkloadRef("a", "Deployment", "z")]
    assert sorted(refs) == [refs[3], refs[0], plain, east]  # namespace first, then kind, name, cluster


def test_recommendation_cluster_is_its_targets() -> None:
    assert rec("east").cluster == "east" and rec().cluster is None
    assert recommendation_to_resource(rec("east"))["status"]["cluster"] == "east"


def test_of_cluster_takes_its_own_then_unlabelled_never_anothers() -> None:
    east, west, plain, other = rec("east"), rec("west"), rec(""), rec("", name="db")
    assert of_cluster([east, west, plain, other], "east") == [east, other]  # east's web wins over plain
    assert of_cluster([west, plain], "east") == [plain]
    assert of_cluster([east, west, plain], "") == [plain]  # several clusters, no name: no guessing
    assert of_cluster([east, other], "") == [east, other]  # one cluster named: that one
    assert of_cluster([plain], "") == [plain]


# --- the snapshot and the plan -------------------------------------------------------------------


def test_snapshot_in_puts_every_workload_in_the_cluster_and_skipped_in_prefixes_once() -> None:
    web = WorkloadRef("shop", "Deployment", "web")
    bare = Skipped(Subject.of_pod("shop", "x"), "r")
    snap = UsageSnapshot(T0, T0, (), pod_labels={web: {"app": "web"}}, skipped=(bare,))
    east = snapshot_in(snap, "east")
    assert list(east.pod_labels) == [web.in_cluster("east")]
    assert east.skipped == snap.skipped  # scope filters read `namespace/...`; the run prefixes them
    assert snapshot_in(snap, "") is snap
    once = skipped_in(Skipped(Subject.of_pod("shop", "x"), "r"), "east")
    assert str(once.subject) == "east:shop/pod/x" and once.subject.cluster == "east"
    assert skipped_in(once, "east") == once


class FakeMulti:
    """A multi-cluster source: `clusters()` answers `found`; each cluster's collect is logged in `events`."""

    name = "fake"
    cluster_label = "cluster"

    def __init__(self, found: Sequence[str], events: list[str], cluster: str = "") -> None:
        self.found, self.events, self.cluster = list(found), events, cluster

    def clusters(self, start: datetime, end: datetime) -> list[str]:
        self.events.append("discover")
        return self.found

    def for_cluster(self, cluster: str) -> FakeMulti:
        return FakeMulti(self.found, self.events, cluster)

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
        self.events.append(f"collect {self.cluster}")
        if progress is not None:
            progress(1, 1, "namespace shop")
        return UsageSnapshot(start, end, (), source=self.cluster)


@dataclass
class Wrapped:
    inner: Any
    name: str = "wrapped"

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
        return self.inner.collect(start, end, progress)  # type: ignore[no-any-return]


def settings(**kw: object) -> RecommenderSettings:
    return RecommenderSettings(**kw)  # type: ignore[arg-type]


def test_all_sizes_every_cluster_found_and_a_missing_named_one_is_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    src = FakeMulti(["east", "west"], [])
    got = cluster_sources(src, settings(cluster_label="cluster"), T0, T0)
    assert [(c.name, c.source.cluster) for c in got] == [("east", "east"), ("west", "west")]  # type: ignore[attr-defined]
    with caplog.at_level(logging.WARNING):
        got = cluster_sources(src, settings(cluster_label="cluster", clusters="west,north"), T0, T0)
    assert [c.name for c in got] == ["west"]
    assert "cluster north" in caplog.text and "clusters found: east, west" in caplog.text


def test_without_a_label_the_one_cluster_is_cluster_name() -> None:
    events: list[str] = []
    src = FakeMulti(["east"], events)
    (only,) = cluster_sources(src, settings(cluster_name="east"), T0, T0)
    assert (only.name, only.source.cluster, events) == ("east", "east", [])  # type: ignore[attr-defined]
    demo = Wrapped(None)
    (plain,) = cluster_sources(demo, settings(), T0, T0)
    assert plain == ClusterSource("", demo)
    (named,) = cluster_sources(demo, settings(cluster_name="east"), T0, T0)
    assert isinstance(named.source, InCluster) and named.source.cluster == "east"


def test_a_wrapped_multi_cluster_source_is_rewrapped_per_cluster() -> None:
    outer = Wrapped(Wrapped(FakeMulti(["east", "west"], [])))
    got = cluster_sources(outer, settings(cluster_label="cluster"), T0, T0)
    assert [c.source.inner.inner.cluster for c in got] == ["east", "west"]  # type: ignore[attr-defined]
    assert outer.inner.inner.cluster == ""  # the original is untouched


def test_cluster_settings_that_cannot_work_name_the_setting() -> None:
    with pytest.raises(SettingsError, match="PODSIZER_CLUSTER_LABEL"):
        cluster_sources(Wrapped(None), settings(cluster_label="cluster"), T0, T0)
    with pytest.raises(SettingsError, match="PODSIZER_CLUSTERS"):
        cluster_sources(FakeMulti([], []), settings(clusters="east"), T0, T0)


def test_clusters_setting_takes_names_or_all() -> None:
    assert settings(clusters="all").clusters == () and settings(clusters="ALL").clusters == ()
    assert settings(clusters="east, west").clusters == ("east", "west")


def test_bounds_of_a_cluster_are_its_own_then_the_unlabelled_ones() -> None:
    web, p1, p2 = WorkloadRef("shop", "Deployment", "web"), (ContainerPolicy("*"),), (ContainerPolicy("a"),)
    bounds = {web: p1, web.in_cluster("east"): p2, web.in_cluster("west"): p1}
    assert bounds_in(bounds, "east") == {web.in_cluster("east"): p2}
    assert bounds_in({web: p1}, "east") == {web.in_cluster("east"): p1}
    assert bounds_in(bounds, "") == {web: p1}


def test_progress_names_the_cluster() -> None:
    seen: list[str] = []
    progress = progress_in(lambda done, total, what: seen.append(what), "east")
    assert progress is not None
    progress(1, 2, "namespace shop")
    assert seen == ["cluster east: namespace shop"]


# --- one run over several clusters ---------------------------------------------------------------


@dataclass(frozen=True)
class Sized:
    recommendations: tuple[Recommendation, ...]
    skipped: tuple[Skipped, ...] = ()


def _sizing(events: list[str]) -> Any:
    def size(snapshot: UsageSnapshot, policy: object, prices: object, now: datetime, bounds: Bounds) -> Sized:
        cluster = snapshot.source
        events.append(f"size {cluster}")
        return Sized((rec(cluster),), (Skipped(Subject.of_pod("shop", "x"), "bare pod"),))

    return size


def _settings(monkeypatch: pytest.MonkeyPatch, *argv: str) -> RecommenderSettings:
    for name in list(__import__("os").environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)
    parser = argparse.ArgumentParser()
    add_recommend_arguments(parser)
    return load_settings(parser.parse_args(["--source", "file", *argv]))


def test_one_run_collects_and_sizes_each_cluster_in_turn_then_merges(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    wiring = Wiring(
        source=lambda s, now: FakeMulti(["east", "west"], events),
        prices=lambda s: None,  # type: ignore[arg-type,return-value]
        sizing=_sizing(events),
        clock=lambda: T0,
    )
    result = one_run(_settings(monkeypatch, "--cluster-label", "cluster"), wiring, None, progress=False)
    assert events == ["discover", "collect east", "size east", "collect west", "size west"]
    assert [r.target for r in result.run.recommendations] == [rec("east").target, rec("west").target]
    assert [str(s.subject) for s in result.report.skipped] == ["east:shop/pod/x", "west:shop/pod/x"]
    assert result.report.recommendations == result.run.recommendations


def test_merge_runs_and_reports_keep_each_clusters_parts() -> None:
    a, b = run_in(Sized((rec("east"),)), "east"), run_in(Sized((rec("west"),)), "west")
    assert merge_runs([a]) is a
    merged = merge_runs([a, b])
    assert isinstance(merged, MergedRun) and len(merged.recommendations) == 2 and merged.costs is None
    web = CurrentResources.of("main", {"cpu": 0.5}, {}, False)
    reports = [Report.of(r, None, Report(()).policy) for r in (a, b)]
    reports = [replace(r, current={r.recommendations[0].target: (web,)}) for r in reports]
    both = merge_reports(reports)
    assert [str(r.target) for r in both.recommendations] == [
        "east:shop/Deployment/web",
        "west:shop/Deployment/web",
    ]
    assert len(both.current) == 2 and both.plan(both.recommendations[1]) is not None


def test_the_runner_sizes_each_cluster_with_its_bounds_and_writes_all() -> None:
    events: list[str] = []
    web = WorkloadRef("shop", "Deployment", "web")
    store = BoundsStore({web.in_cluster("west"): (ContainerPolicy("*", {"cpu": 0.2}),)})
    seen: list[Bounds] = []

    def recommend(snapshot: UsageSnapshot, bounds: Bounds, now: datetime) -> Sized:
        seen.append(bounds)
        events.append(f"size {snapshot.source}")
        return Sized((rec(snapshot.source),))

    src = FakeMulti(["east", "west"], events)
    runner = Runner(src, store, recommend, clock=lambda: T0, clusters=lambda s, e: [
        ClusterSource(c, src.for_cluster(c)) for c in ("east", "west")
    ])  # fmt: skip
    result = runner.run_once()
    assert result.ok and result.written == 2
    assert events == ["collect east", "size east", "collect west", "size west"]
    assert seen == [{}, {web.in_cluster("west"): (ContainerPolicy("*", {"cpu": 0.2}),)}]
    assert sorted(store.written) == ["east:shop/Deployment/web", "west:shop/Deployment/web"]


def test_a_failing_cluster_fails_the_run_and_writes_nothing() -> None:
    from recommender.model import SourceError

    class Down(FakeMulti):
        def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
            raise SourceError("west is down")

    store = BoundsStore({})
    up = FakeMulti(["east"], [])
    parts = [ClusterSource("east", up.for_cluster("east")), ClusterSource("west", Down([], [], "west"))]
    runner = Runner(
        up, store, lambda s, b, n: Sized((rec(s.source),)), clock=lambda: T0, clusters=lambda s, e: parts
    )
    result = runner.run_once()
    assert not result.ok and result.retry and store.written == []
    assert result.errors[0].message == "west is down"


Failures = list[tuple[Recommendation, Exception]]


class BoundsStore:
    """A store with fixed bounds that records what it is asked to write."""

    def __init__(self, bounds: Bounds) -> None:
        self._bounds = bounds
        self.written: list[str] = []

    def put(self, r: Recommendation) -> None:
        self.written.append(str(r.target))

    def list(self) -> list[Recommendation]:
        return []

    def get(self, ref: WorkloadRef) -> Recommendation | None:
        return None

    def bounds(self) -> Bounds:
        return self._bounds

    def put_many(self, recs: Sequence[Recommendation]) -> Failures:
        for r in recs:
            self.put(r)
        return []


# --- outputs -------------------------------------------------------------------------------------


def _report(*clusters: str) -> Report:
    recs = tuple(rec(c) for c in clusters)
    web = CurrentResources.of("main", {"cpu": 0.5}, {}, False)
    return Report(
        recs,
        skipped=(Skipped(Subject.of_pod("shop", "x").in_cluster("east"), "bare pod"),),
        current={r.target: (web,) for r in recs},
    )


def test_the_wide_table_has_a_cluster_column_only_with_clusters() -> None:
    assert render(_report("east", "west"), "table", 200, wide=True).splitlines()[0].startswith("CLUSTER ")
    assert "CLUSTER" not in render(_report(""), "table", 200, wide=True).splitlines()[0]


def test_the_compact_table_names_the_cluster_with_the_workload() -> None:
    out = render(_report("east", "west"), "table", 120)
    assert "east:shop/Deployment/web  [static]" in out and "west:shop/Deployment/web  [static]" in out
    assert "\nshop/Deployment/web  [static]" in render(_report(""), "table", 120)


def test_json_csv_html_and_markdown_carry_the_cluster() -> None:
    report = _report("east", "west")
    doc = json.loads(render(report, "json"))
    assert [i["status"]["cluster"] for i in doc["items"]] == ["east", "west"]
    rows = list(csv.DictReader(io.StringIO(render(report, "csv"))))
    assert CSV_COLUMNS[-1] == "cluster" and [r["cluster"] for r in rows] == ["east", "west"]
    assert [r["cluster"] for r in csv.DictReader(io.StringIO(render(_report(""), "csv")))] == [""]
    for fmt in ("html", "markdown"):
        text = render(report, fmt)
        assert "east:shop/Deployment/web" in text and "west:shop/Deployment/web" in text


def test_explain_takes_a_cluster_prefix_or_flag_and_refuses_an_ambiguous_name() -> None:
    recs = [rec("east"), rec("west")]
    assert find(recs, "east:shop/Deployment/web") == recs[0]
    assert find(recs, "shop/deployment/web", "west") == recs[1]
    assert find(recs, "west:shop/web") == recs[1]
    assert len(matches(recs, "shop/Deployment/web")) == 2 and find(recs, "shop/Deployment/web") is None
    text = ambiguous(recs, "shop/Deployment/web")
    assert "(east, west)" in text and "--cluster east" in text
    assert find([rec("")], "shop/Deployment/web") is not None
    report = _report("east")
    assert "skipped: east:shop/pod/x" in not_found(report, "east:shop/x")
    assert "skipped" not in not_found(report, "west:shop/x")


# --- stores --------------------------------------------------------------------------------------


def test_the_json_store_keeps_two_clusters_web_apart(tmp_path: Path) -> None:
    store = JsonFileStore(tmp_path / "recs.json")
    assert store.put_many([rec("east", cpu="100m"), rec("west", cpu="200m"), rec("")]) == []
    assert store.put_many([rec("east", cpu="300m")]) == []
    got = {r.target.cluster: r.containers[0].requests["cpu"] for r in store.list()}
    assert got == {"": "100m", "east": "300m", "west": "200m"}


def test_the_crd_store_writes_only_its_clusters_and_logs_the_rest_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    api = fake_recommendations()
    store = CrdStore(custom_objects=api, cluster_name="east")
    with caplog.at_level(logging.INFO):
        assert store.put_many([rec("east"), rec("west"), rec("west", name="db")]) == []
    assert [(o["status"]["cluster"], o["metadata"]["name"]) for o in api.objects.values()] == [
        ("east", "deployment-web")
    ]
    assert [r.getMessage() for r in caplog.records if "other clusters" in r.getMessage()] == [
        "2 recommendations of other clusters not written (this cluster: east)"
    ]


def test_a_crd_store_without_a_name_takes_one_cluster_and_refuses_several() -> None:
    api = fake_recommendations()
    store = CrdStore(custom_objects=api)
    assert store.put_many([rec("east")]) == [] and len(api.objects) == 1
    with pytest.raises(SettingsError, match="PODSIZER_CLUSTER_NAME"):
        store.put_many([rec("east"), rec("west")])
    assert len(api.objects) == 1 and copy.deepcopy(api.objects)  # nothing more written
