"""`podsizer recommend` against a real Prometheus: --as-of sizes the window before it, and the namespace
globs, exclusions, label selector and kinds each pick exactly their workloads; a mistyped namespace is a
warning and exit status 3."""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from podsizer.api.quantity import parse
from podsizer.settings import run_reporting_errors
from recommender.commands import add_recommend_arguments, run_recommend
from recommender.model.raw import ContainerSamples, OwnerLink, PodInfo, RawDataset
from tests.support.openmetrics import backfill, write_dataset

from .server import Server, running_prometheus

pytestmark = pytest.mark.integration

PROMTOOL = "/usr/bin/promtool"
MI = 2.0**20
DAYS = 3
STEP = 60.0
WEB_BEFORE, WEB_AFTER = 0.2, 0.8  # team-a/web's CPU before and during the last day


@dataclass(frozen=True)
class Cluster:
    server: Server
    end: datetime


def _history(end: datetime) -> RawDataset:
    """team-a/Deployment web (CPU steps 0.2 -> 0.8 one day before the end), team-b/StatefulSet db,
    team-b/Deployment api (a canary), kube-system/DaemonSet agent; labels for the selector."""
    start = end - timedelta(days=DAYS)
    ts = np.arange(start.timestamp(), end.timestamp() + 1, STEP)
    step_up = ts >= (end - timedelta(days=1)).timestamp()
    rng = np.random.default_rng(11)

    def noisy(level: float) -> np.ndarray:
        return np.asarray(level * (1 + 0.02 * rng.standard_normal(ts.size)))

    shop = {"app.kubernetes.io/part-of": "shop"}
    workloads = [
        ("team-a", "web-6d5f-aaaaa", "ReplicaSet", "web-6d5f", {"app": "web", **shop}, "app",
         np.where(step_up, noisy(WEB_AFTER), noisy(WEB_BEFORE))),
        ("team-b", "db-0", "StatefulSet", "db", {"app": "db", **shop}, "postgres", noisy(0.3)),
        ("team-b", "api-7c8d-bbbbb", "ReplicaSet", "api-7c8d", {"app": "api", "canary": "1", **shop},
         "api", noisy(0.1)),
        ("kube-system", "agent-x2x9z", "DaemonSet", "agent", {"app": "agent"}, "agent", noisy(0.05)),
    ]  # fmt: skip
    pods, containers = [], []
    for ns, pod, kind, owner, labels, container, cpu in workloads:
        requests = {container: {"cpu": 0.5, "memory": 256 * MI}}
        pods.append(PodInfo(ns, pod, "node-1", kind, owner, labels=labels, requests=requests))
        containers.append(ContainerSamples(ns, pod, container, ts, cpu, np.full(ts.size, 100 * MI)))
    owners = (
        OwnerLink("team-a", "ReplicaSet", "web-6d5f", "Deployment", "web"),
        OwnerLink("team-b", "ReplicaSet", "api-7c8d", "Deployment", "api"),
    )
    return RawDataset(start, end, tuple(pods), owners, tuple(containers))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if not Path(PROMTOOL).exists():
        pytest.skip("promtool not installed (Debian package prometheus)")
    root = tmp_path_factory.mktemp("prom-scope")
    end = datetime.fromtimestamp(int(time.time()) // 3600 * 3600, UTC)
    files = write_dataset(_history(end), root / "om", workers=2)
    backfill(files, root / "data", workers=2, promtool=PROMTOOL)
    with running_prometheus(root / "data", retention_days=DAYS + 2) as server:
        yield Cluster(server, end)


@dataclass(frozen=True)
class Result:
    status: int
    items: dict[str, dict[str, object]]  # "namespace/Kind/name" -> item
    err: str


Recommend = Callable[..., Result]


@pytest.fixture
def recommend(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[Recommend]:
    for name in list(os.environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)

    def run(*argv: str) -> Result:
        parser = argparse.ArgumentParser(prog="podsizer recommend")
        add_recommend_arguments(parser)
        args = parser.parse_args(
            [
                "--prometheus-url",
                cluster.server.url,
                "--window-days",
                "1",
                "--no-progress",
                "-o",
                "json",
                *argv,
            ]
        )
        status = run_reporting_errors("recommend", run_recommend, args)
        out, err = capsys.readouterr()
        items = json.loads(out)["items"] if out else []
        return Result(status, {_ref(i): i for i in items}, err)

    yield run


def _ref(item: dict[str, object]) -> str:
    spec = item["spec"]
    meta = item["metadata"]
    assert isinstance(spec, dict) and isinstance(meta, dict)
    target = spec["targetRef"]
    return f"{meta['namespace']}/{target['kind']}/{target['name']}"


def _cpu_request(item: dict[str, object], container: str) -> float:
    status = item["status"]
    assert isinstance(status, dict)
    c = next(c for c in status["containers"] if c["name"] == container)
    return parse(c["requests"]["cpu"])


WEB, DB, API, AGENT = (
    "team-a/Deployment/web",
    "team-b/StatefulSet/db",
    "team-b/Deployment/api",
    "kube-system/DaemonSet/agent",
)
ALL = {WEB, DB, API, AGENT}


def test_without_scope_every_workload_is_sized(recommend: Recommend) -> None:
    result = recommend()
    assert (result.status, set(result.items)) == (0, ALL)


def test_as_of_a_day_before_the_end_sizes_the_day_before_the_step_up(
    recommend: Recommend, cluster: Cluster
) -> None:
    full = ("--namespaces", "team-a", "--confidence-full-days", "1", "--confidence-full-samples", "100")
    latest = recommend(*full)  # one day of history counts as full: no widening, p99 + 15 %
    as_of = cluster.end - timedelta(days=1)
    before = recommend(*full, "--as-of", str(int(as_of.timestamp())))
    assert latest.status == before.status == 0
    now_cpu = _cpu_request(latest.items[WEB], "app")
    then_cpu = _cpu_request(before.items[WEB], "app")
    assert WEB_AFTER * 1.15 <= now_cpu <= WEB_AFTER * 1.1 * 1.15
    assert WEB_BEFORE * 1.15 <= then_cpu <= WEB_BEFORE * 1.1 * 1.15  # no sample after as_of counted
    window = before.items[WEB]["status"]["window"]  # type: ignore[index]
    assert window["end"] == as_of.isoformat().replace("+00:00", "Z")
    assert window["start"] == (as_of - timedelta(days=1)).isoformat().replace("+00:00", "Z")


def test_a_namespace_glob_picks_its_namespaces(recommend: Recommend) -> None:
    result = recommend("--namespaces", "team-*")
    assert (result.status, set(result.items)) == (0, ALL - {AGENT})


def test_exclusions_drop_their_namespaces(recommend: Recommend) -> None:
    result = recommend("--exclude-namespaces", "kube-*,team-b")
    assert (result.status, set(result.items)) == (0, {WEB})


def test_the_selector_matches_pod_labels_in_kubernetes_spelling(recommend: Recommend) -> None:
    result = recommend("--selector", "app.kubernetes.io/part-of=shop,!canary")
    assert (result.status, set(result.items)) == (0, {WEB, DB})


def test_kinds_pick_their_workloads(recommend: Recommend) -> None:
    result = recommend("--kinds", "statefulset,DAEMONSET")
    assert (result.status, set(result.items)) == (0, {DB, AGENT})


def test_a_mistyped_namespace_is_a_warning_and_exit_3(recommend: Recommend) -> None:
    result = recommend("--namespaces", "team-a,tema-b")
    assert result.status == 3
    assert set(result.items) == {WEB}
    assert "podsizer recommend: namespace 'tema-b' matched no workload (exit status 3" in result.err


def test_a_glob_matching_nothing_is_exit_3_unless_allowed(recommend: Recommend) -> None:
    assert recommend("--namespaces", "prod-*").status == 3
    allowed = recommend("--namespaces", "prod-*", "--allow-empty")
    assert (allowed.status, allowed.items) == (0, {})
