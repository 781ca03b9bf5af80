"""Scoping (namespace globs, selector, kinds, allow-empty exit codes) and --as-of, through the commands with
an injected Wiring over the real demo and file sources."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from podsizer.api.identity import WorkloadRef
from podsizer.owners import Skipped
from podsizer.scope import Scope
from podsizer.selector import parse
from podsizer.settings import RecommenderSettings, SettingsError, load, run_reporting_errors
from podsizer.sizing_policy import SizingPolicy
from podsizer.subject import Subject
from recommender.commands import add_recommend_arguments, add_run_arguments, one_run, run_loop, run_recommend
from recommender.explain import add_explain_arguments, run_explain
from recommender.input.demo_cluster import DemoSource, build_demo_dataset
from recommender.input.file import dump_dataset
from recommender.model import NO_SERIES, MetricsSource, UsageSnapshot
from recommender.model.aggregate import aggregate
from recommender.runner import Bounds, RunOutput
from recommender.scope import apply_scope
from recommender.sizing.cost import PriceTable
from recommender.wiring import Wiring, build_prices, build_source, size

NOW = datetime(2026, 12, 2, 14, 0, tzinfo=UTC)
STOREFRONT = WorkloadRef("shop", "Deployment", "storefront")
FLUENT_BIT = WorkloadRef("platform", "DaemonSet", "fluent-bit")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)
    yield


@dataclass
class Pipeline:
    """The real source wiring (demo unless --source says otherwise) at a fixed clock; the real sizing,
    recording every snapshot it is given."""

    snapshots: list[UsageSnapshot] = field(default_factory=list)

    def wiring(self) -> Wiring:
        def sizing(
            snapshot: UsageSnapshot, policy: SizingPolicy, prices: PriceTable, now: datetime, bounds: Bounds
        ) -> RunOutput:
            self.snapshots.append(snapshot)
            return size(snapshot, policy, prices, now, bounds)

        return Wiring(source=build_source, prices=build_prices, sizing=sizing, clock=lambda: NOW)

    def run(self, command: str, *argv: str) -> int:
        parser = argparse.ArgumentParser(prog=f"podsizer {command}")
        wiring = self.wiring()
        if command == "recommend":
            add_recommend_arguments(parser)
            return run_reporting_errors(command, lambda a: run_recommend(a, wiring), parser.parse_args(argv))
        if command == "explain":
            add_explain_arguments(parser)
            return run_reporting_errors(command, lambda a: run_explain(a, wiring), parser.parse_args(argv))
        add_run_arguments(parser)
        return run_reporting_errors(command, lambda a: run_loop(a, wiring), parser.parse_args(argv))

    def recommend(self, *argv: str) -> int:
        return self.run("recommend", "--source", "demo", "--window-days", "1", "--no-progress", *argv)

    def workloads(self) -> set[WorkloadRef]:
        return set(self.snapshots[-1].workloads())


@pytest.fixture
def pipeline() -> Pipeline:
    return Pipeline()


def _demo_snapshot() -> UsageSnapshot:
    return DemoSource(NOW, days=1).collect(NOW - timedelta(days=1), NOW)


# --- the snapshot carries pod labels; the scope cuts it ---------------------------------------------


def test_the_snapshot_carries_each_workloads_pod_labels() -> None:
    snap = _demo_snapshot()
    assert snap.pod_labels[STOREFRONT]["app"] == "storefront"
    assert snap.pod_labels[FLUENT_BIT]["app.kubernetes.io/name"] == "fluent-bit"


def test_apply_scope_keeps_only_the_workloads_in_scope_everywhere() -> None:
    snap = _demo_snapshot()
    scoped = apply_scope(snap, Scope(namespaces=("sh*",), selector=parse("app in (search,storefront)")))
    assert set(scoped.workloads()) == {STOREFRONT, WorkloadRef("shop", "Deployment", "search")}
    assert {a.workload for a in scoped.autoscalers} == {WorkloadRef("shop", "Deployment", "search")}
    assert {d.workload for d in scoped.demand} == set(scoped.workloads())
    assert set(scoped.pod_labels) == set(scoped.workloads())
    assert scoped.unmatched_scope == ()


def test_a_namespace_the_source_skipped_for_an_error_is_not_reported_as_unmatched() -> None:
    snap = _demo_snapshot()
    failed = dataclasses.replace(
        snap,
        containers=tuple(c for c in snap.containers if c.workload.namespace != "shop"),
        gpus=tuple(g for g in snap.gpus if g.workload.namespace != "shop"),
        pod_labels={w: v for w, v in snap.pod_labels.items() if w.namespace != "shop"},
        skipped=(*snap.skipped, Skipped(Subject.of_namespace("shop"), "answer too large")),
    )
    assert apply_scope(failed, Scope(namespaces=("shop",))).unmatched_scope == ()
    unmatched = ("namespace 'shop' matched no workload",)
    unseen = dataclasses.replace(failed, skipped=snap.skipped)
    assert apply_scope(unseen, Scope(namespaces=("shop",))).unmatched_scope == unmatched
    quiet = Skipped(Subject.of_namespace("shop"), NO_SERIES)
    empty = dataclasses.replace(failed, skipped=(*snap.skipped, quiet))
    assert apply_scope(empty, Scope(namespaces=("shop",))).unmatched_scope == unmatched


def test_the_snapshot_carries_each_workloads_podsizer_annotations_with_its_labels() -> None:
    raw = build_demo_dataset(NOW, days=1)
    marked = {"podsizer.io/gpu": "resize", "example.com/team": "a"}
    pods = [dataclasses.replace(p, annotations=marked) if "storefront-" in p.name else p for p in raw.pods]
    full = aggregate(dataclasses.replace(raw, pods=tuple(pods)), source="t")
    snap = apply_scope(full, Scope(namespaces=("shop",)))
    assert snap.pod_annotations[STOREFRONT] == {"podsizer.io/gpu": "resize"}  # only the keys podsizer reads
    assert snap.pod_meta(STOREFRONT).labels["app"] == "storefront"
    assert set(snap.pod_annotations) == {STOREFRONT}


@pytest.mark.parametrize("cluster", ["", "east"])
def test_a_skipped_subject_is_scoped_by_its_namespace_and_kind_in_any_cluster(cluster: str) -> None:
    """The subject was once a string parsed back into parts, and `east:shop/Deployment/web/...`
    read as namespace "east:shop": --namespaces shop dropped a cluster-labelled workload's skip and kept
    the same skip of a single-cluster one."""
    web = WorkloadRef("shop", "Deployment", "web", cluster)
    skips = (
        Skipped(Subject.of_workload(web, "sidecar"), "no finite cpu samples"),
        Skipped(Subject.of_pod("shop", "bare").in_cluster(cluster), "pod has no controller"),
        Skipped(Subject.of_gpu("node-1", "GPU-1").in_cluster(cluster), "GPU not attached to a pod"),
    )
    assert str(skips[0].subject) == ("east:" if cluster else "") + "shop/Deployment/web/container/sidecar"
    snap = dataclasses.replace(_demo_snapshot(), skipped=skips)
    kept = apply_scope(snap, Scope(namespaces=("shop",))).skipped
    assert kept == skips[:2]
    assert apply_scope(snap, Scope(namespaces=("ml",))).skipped == ()
    assert apply_scope(snap, Scope(kinds=("StatefulSet",))).skipped == skips[1:]  # a pod or GPU has no kind
    assert apply_scope(snap, Scope(exclude_namespaces=("kube-*",))).skipped == skips


def test_apply_scope_with_the_default_scope_is_the_same_snapshot() -> None:
    snap = _demo_snapshot()
    assert apply_scope(snap, Scope()) is snap


# --- the commands ------------------------------------------------------------------------------------


def test_a_namespace_glob_and_an_exclusion_pick_their_namespaces(pipeline: Pipeline) -> None:
    assert pipeline.recommend("--namespaces", "*", "--exclude-namespaces", "ml,leg*", "-o", "json") == 0
    assert {w.namespace for w in pipeline.workloads()} == {"shop", "platform", "analytics"}


def test_kinds_and_selector_pick_their_workloads(pipeline: Pipeline) -> None:
    assert pipeline.recommend("--kinds", "daemonset,statefulset", "--selector", "app!=postgres") == 0
    assert {w.kind for w in pipeline.workloads()} == {"DaemonSet", "StatefulSet"}
    assert {w.name for w in pipeline.workloads()} == {"fluent-bit", "llm-pretrain", "bert-finetune"}


def test_a_mistyped_namespace_is_a_warning_and_exit_3(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    assert pipeline.recommend("--namespaces", "shop,shpo", "-o", "json") == 3
    out, err = capsys.readouterr()
    assert json.loads(out)["items"]  # the report of what did match is still printed
    assert "podsizer recommend: namespace 'shpo' matched no workload (exit status 3; --allow-empty" in err


def test_allow_empty_keeps_the_warning_and_exits_0(
    pipeline: Pipeline, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    assert pipeline.recommend("--namespaces", "shpo", "--allow-empty") == 0
    assert "scope: namespace 'shpo' matched no workload" in caplog.text
    assert "exit status 3" not in capsys.readouterr().err


def test_a_selector_matching_nothing_is_exit_3(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    assert pipeline.recommend("--selector", "app=nothing") == 3
    assert "label selector 'app=nothing' matched no workload" in capsys.readouterr().err


def test_a_kind_matching_nothing_is_exit_3(pipeline: Pipeline, capsys: pytest.CaptureFixture[str]) -> None:
    assert pipeline.recommend("--namespaces", "shop", "--kinds", "Deployment,DaemonSet") == 3
    assert "kind DaemonSet matched no workload in scope" in capsys.readouterr().err


def test_explain_exits_3_when_part_of_the_scope_matched_nothing(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ("--source", "demo", "--window-days", "1", "--no-progress", "--namespaces", "shop,nope")
    assert pipeline.run("explain", "shop/Deployment/storefront", *argv) == 3
    out, err = capsys.readouterr()
    assert "storefront" in out
    assert "podsizer explain: namespace 'nope' matched no workload" in err


def test_a_malformed_selector_is_a_settings_error_naming_it(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    assert pipeline.recommend("--selector", "env in (prod") == 2
    assert "PODSIZER_SELECTOR (--selector): expected ')'" in capsys.readouterr().err


def test_an_unknown_kind_is_a_settings_error_naming_it() -> None:
    with pytest.raises(SettingsError, match=r"PODSIZER_KINDS \(--kinds\): .*unknown workload kind 'Pods'"):
        load(RecommenderSettings, env={"PODSIZER_KINDS": "Deployment,Pods"})


# --- as of -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-30T12:00:00Z", datetime(2026, 11, 30, 12, tzinfo=UTC)),
        ("2026-11-30T14:00:00+02:00", datetime(2026, 11, 30, 12, tzinfo=UTC)),
        ("1764504000", datetime(2025, 11, 30, 12, tzinfo=UTC)),
        ("", None),
    ],
)
def test_as_of_accepts_rfc3339_with_a_zone_and_unix_seconds(text: str, expected: datetime | None) -> None:
    assert load(RecommenderSettings, env={"PODSIZER_AS_OF": text}).as_of == expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("2026-11-30T12:00:00", "has no timezone"),
        ("2999-01-01T00:00:00Z", "is in the future"),
        ("yesterday", "not an RFC 3339 time or unix seconds"),
    ],
)
def test_a_bad_as_of_is_a_settings_error_naming_it(text: str, why: str) -> None:
    with pytest.raises(SettingsError, match=rf"PODSIZER_AS_OF \(--as-of\): .*{why}"):
        load(RecommenderSettings, env={"PODSIZER_AS_OF": text})


def test_demo_as_of_ends_the_window_there(pipeline: Pipeline, capsys: pytest.CaptureFixture[str]) -> None:
    as_of = NOW - timedelta(days=1)
    assert pipeline.recommend("--as-of", "2026-12-01T14:00:00Z", "-o", "json") == 0
    snap = pipeline.snapshots[-1]
    assert (snap.window_start, snap.window_end) == (as_of - timedelta(days=1), as_of)
    assert max(c.last_seen for c in snap.containers) < as_of
    out, err = capsys.readouterr()
    assert "podsizer recommend: window 2026-11-30T14:00:00Z to 2026-12-01T14:00:00Z (as of)" in err
    status = json.loads(out)["items"][0]["status"]
    assert status["window"]["end"] == "2026-12-01T14:00:00Z"
    assert status["window"]["start"] == "2026-11-30T14:00:00Z"


def test_a_backtest_is_not_written_over_the_clusters_recommendations(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    as_of = ("--as-of", "2026-12-01T14:00:00Z")
    assert pipeline.recommend(*as_of, "--write", "--store", "crd") == 2
    err = capsys.readouterr().err
    assert "PODSIZER_AS_OF (--as-of)" in err and "--store json --store-file" in err
    assert pipeline.snapshots == [], "refused before any work"
    backtest = tmp_path / "backtest.json"
    assert pipeline.recommend(*as_of, "--write", "--store-file", str(backtest)) == 0
    assert json.loads(backtest.read_text())["items"]


def test_file_as_of_drops_the_samples_after_it(pipeline: Pipeline, tmp_path: Path) -> None:
    path = tmp_path / "cluster.json.gz"
    dump_dataset(build_demo_dataset(NOW, days=3), path)
    flags = ("--source", "file", "--source-file", str(path), "--window-days", "1", "--no-progress")
    assert pipeline.run("recommend", *flags) == 0
    latest = pipeline.snapshots[-1]
    assert pipeline.run("recommend", *flags, "--as-of", str(int((NOW - timedelta(days=1)).timestamp()))) == 0
    backtest = pipeline.snapshots[-1]
    assert backtest.window_end == NOW - timedelta(days=1)
    assert max(c.last_seen for c in backtest.containers) < NOW - timedelta(days=1)
    # feature-flags started 6 hours before the end of the data: not there yet a day earlier
    feature_flags = WorkloadRef("platform", "Deployment", "feature-flags")
    assert feature_flags in latest.workloads() and feature_flags not in backtest.workloads()


def test_one_run_uses_as_of_instead_of_the_clock() -> None:
    as_of = NOW - timedelta(hours=5)
    settings = RecommenderSettings.model_validate({"source": "demo", "window_days": 1, "as_of": as_of})
    seen: list[datetime] = []

    def source(s: RecommenderSettings, now: datetime) -> MetricsSource:
        seen.append(now)
        return build_source(s, now)

    wiring = Wiring(source=source, prices=build_prices, clock=lambda: NOW)
    result = one_run(settings, wiring, None, progress=False)
    assert seen == [as_of]
    assert {r.generated_at for r in result.run.recommendations} == {as_of}


def test_run_refuses_as_of(pipeline: Pipeline, capsys: pytest.CaptureFixture[str]) -> None:
    assert pipeline.run("run", "--once", "--source", "demo", "--as-of", "2026-12-01T00:00:00Z") == 2
    assert "PODSIZER_AS_OF (--as-of): `podsizer run` sizes the present" in capsys.readouterr().err


def test_dcgm_refuses_as_of() -> None:
    settings = RecommenderSettings.model_validate(
        {"source": "dcgm", "dcgm_urls": "http://127.0.0.1:9400/metrics", "as_of": "2026-12-01T00:00:00Z"}
    )
    with pytest.raises(SettingsError, match=r"PODSIZER_AS_OF \(--as-of\): PODSIZER_SOURCE=dcgm scrapes live"):
        build_source(settings, NOW)


def test_recommend_and_explain_say_when_the_data_ends_well_before_the_window(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cluster.json.gz"
    dump_dataset(build_demo_dataset(NOW - timedelta(minutes=35), days=2), path)
    flags = ("--source", "file", "--source-file", str(path), "--window-days", "1", "--no-progress")
    assert pipeline.run("recommend", *flags, "-o", "json") == 0
    err = capsys.readouterr().err
    assert "podsizer recommend: the data is stale: its newest sample" in err
    assert "min before the window's end (2026-12-02 14:00 UTC)" in err
    assert pipeline.run("explain", *flags, "shop/Deployment/storefront") == 0
    assert "podsizer explain: the data is stale" in capsys.readouterr().err
    fresh = tmp_path / "fresh.json.gz"
    dump_dataset(build_demo_dataset(NOW, days=2), fresh)
    assert pipeline.run("recommend", "--source", "file", "--source-file", str(fresh), *flags[4:]) == 0
    assert "stale" not in capsys.readouterr().err
