"""`podsizer recommend` against a real Prometheus holding bad samples, by remote read and by range queries:
two 3 TiB working-set scrapes among three days, one bad scrape of every replica at once, samples above the
container's own memory limit never become a request; a CPU counter that resets every other sample is
not believed (raw reads count its resets; range queries cannot see them)."""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from podsizer.api.quantity import parse
from podsizer.settings import run_reporting_errors
from recommender.commands import add_recommend_arguments, run_recommend
from recommender.model.raw import ContainerSamples, OwnerLink, PodInfo, RawDataset
from tests.support.openmetrics import backfill, dataset_families, write_families

from .server import Server, running_prometheus

pytestmark = pytest.mark.integration

PROMTOOL = "/usr/bin/promtool"
MI, GI, TI = 2.0**20, 2.0**30, 2.0**40
DAYS = 3
STEP = 60.0


def _history(end: datetime) -> RawDataset:
    """shop/web: two 3 TiB scrapes; shop/glitch: three replicas, each 2 TiB at the same two scrapes;
    shop/limited: four 1.5 GiB scrapes over its 1 GiB limit; shop/storm: its CPU counter resets (below)."""
    start = end - timedelta(days=DAYS)
    ts = np.arange(start.timestamp(), end.timestamp() + 1, STEP)
    rng = np.random.default_rng(5)

    def memory() -> np.ndarray:
        return np.round(100 * MI * (1 + 0.04 * rng.standard_normal(ts.size)))

    def cpu() -> np.ndarray:
        return np.asarray(0.2 * (1 + 0.05 * rng.standard_normal(ts.size)))

    web, limited = memory(), memory()
    web[[500, 3000]] = 3 * TI
    limited[[100, 1500, 2500, 4000]] = 1.5 * GI
    pods, containers = [], []
    for name, mem, limits in (
        ("web", web, {}),
        ("limited", limited, {"memory": GI}),
        ("storm", memory(), {}),
    ):
        pod = f"{name}-5f8b-aaaaa"
        pods.append(PodInfo("shop", pod, "node-1", "ReplicaSet", f"{name}-5f8b", limits={"app": limits}))
        containers.append(ContainerSamples("shop", pod, "app", ts, cpu(), mem))
    for i in range(3):
        mem = memory()
        mem[[800, 2200]] = 2 * TI
        pod = f"glitch-7c9d-{i}"
        pods.append(PodInfo("shop", pod, "node-1", "ReplicaSet", "glitch-7c9d"))
        containers.append(ContainerSamples("shop", pod, "app", ts, cpu(), mem))
    owners = tuple(
        OwnerLink("shop", "ReplicaSet", f"{n}-{h}", "Deployment", n)
        for n, h in (("web", "5f8b"), ("limited", "5f8b"), ("storm", "5f8b"), ("glitch", "7c9d"))
    )
    return RawDataset(start, end, tuple(pods), owners, tuple(containers))


def _storming(families: list[Any]) -> None:
    """shop/storm's CPU counter falls back to 0 every other sample (an exporter that keeps restarting)."""
    for family in families:
        if family.name != "container_cpu_usage_seconds":
            continue
        for i, s in enumerate(family.series):
            if s.labels.get("pod", "").startswith("storm-"):
                values = np.where(np.arange(s.values.size) % 2 == 0, 0.0, 12.0)
                family.series[i] = replace(s, values=values)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    if not Path(PROMTOOL).exists():
        pytest.skip("promtool not installed (Debian package prometheus)")
    root = tmp_path_factory.mktemp("prom-bad")
    end = datetime.fromtimestamp(int(time.time()) // 3600 * 3600, UTC)
    ds = _history(end)
    families = dataset_families(ds)
    _storming(families)
    files = write_families(families, root / "om", ds.start.timestamp(), ds.end.timestamp())
    backfill(files, root / "data", workers=2, promtool=PROMTOOL)
    with running_prometheus(root / "data", retention_days=DAYS + 2) as served:
        yield served


Containers = dict[str, dict[str, Any]]  # "Deployment/name" -> its one container's status


@pytest.fixture
def recommend(
    server: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[[str], Containers]:
    for name in list(os.environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)

    def run(read: str) -> Containers:
        parser = argparse.ArgumentParser(prog="podsizer recommend")
        add_recommend_arguments(parser)
        argv = ["--prometheus-url", server.url, "--prometheus-read", read, "--window-days", str(DAYS)]
        args = parser.parse_args([*argv, "--no-progress", "-o", "json"])
        assert run_reporting_errors("recommend", run_recommend, args) == 0
        items = json.loads(capsys.readouterr().out)["items"]
        return {_name(i): i["status"]["containers"][0] for i in items}

    return run


def _name(item: dict[str, Any]) -> str:
    target = item["spec"]["targetRef"]
    return f"{target['kind']}/{target['name']}"


@pytest.mark.parametrize("read", ["remote-read", "query"])
def test_bad_scrapes_never_become_a_memory_request(recommend: Callable[[str], Containers], read: str) -> None:
    got = recommend(read)
    for name in ("Deployment/web", "Deployment/glitch", "Deployment/limited"):
        assert parse(got[name]["requests"]["memory"]) < 200 * MI, (name, got[name]["reason"])
    assert "memory peak 3145728Mi and 3145728Mi ignored (2 samples" in got["Deployment/web"]["reason"]
    assert "memory peak 2097152Mi and 2097152Mi ignored (2 samples" in got["Deployment/glitch"]["reason"]
    assert (
        "samples of memory above the container's memory limit ignored" in got["Deployment/limited"]["reason"]
    )


def test_a_counter_that_keeps_resetting_is_not_believed_on_a_raw_read(
    recommend: Callable[[str], Containers],
) -> None:
    got = recommend("remote-read")
    storm = got["Deployment/storm"]
    assert storm["confidence"] < 0.05
    assert "its rates are not trusted" in storm["reason"]
    assert got["Deployment/web"]["confidence"] > 0.2  # the others are judged as usual
