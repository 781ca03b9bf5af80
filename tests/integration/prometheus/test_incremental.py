"""The incremental path (recommender.incremental) against a real Prometheus holding 7 days of history:
a cold start 3 hours before the end, then a delta cycle, gives the usage model and the recommendations of
a full-window read within 2 %, while the delta cycle's queries read only the new samples; and
`podsizer run --once` twice with a checkpoint file restores the model instead of reading the window."""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

from podsizer.api import Recommendation
from podsizer.api.quantity import parse
from podsizer.settings import run_reporting_errors
from podsizer.sizing_policy import SizingPolicy
from recommender.commands import add_recommend_arguments, add_run_arguments, run_loop, run_recommend
from recommender.incremental.source import IncrementalSource
from recommender.input.prometheus import PromClient, PrometheusSource
from recommender.input.prometheus.reads import SLOW_SCRAPE_WINDOW_S
from recommender.model import ContainerUsage, UsageSnapshot
from recommender.sizing.cost import PriceTable
from recommender.sizing.engine import recommend
from tests.support.remoteread import read_request

from .conftest import Served

pytestmark = pytest.mark.integration

WEEK = timedelta(days=7)
POLICY = SizingPolicy()


@dataclass
class Recording(httpx.BaseTransport):
    """The real transport, keeping each request's path and parameters."""

    inner: httpx.BaseTransport = field(default_factory=httpx.HTTPTransport)
    requests: list[tuple[str, dict[str, list[str]]]] = field(default_factory=list)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        params = parse_qs(request.url.query.decode())
        if request.url.path == "/api/v1/read":  # a remote read: its query's metric and range (seconds)
            matchers, start, end, _ = read_request(request.read())
            metric = dict((n, v) for n, op, v in matchers if op == "=")["__name__"]
            params.update({"query": [metric], "start": [str(start / 1000)], "end": [str(end / 1000)]})
        elif request.method == "POST":
            params.update(parse_qs(request.read().decode()))
        self.requests.append((request.url.path, params))
        return self.inner.handle_request(request)


@dataclass(frozen=True)
class Runs:
    end: datetime
    cold_end: datetime
    full: UsageSnapshot
    incremental: UsageSnapshot
    delta_requests: list[tuple[str, dict[str, list[str]]]]


@pytest.fixture(scope="module")
def runs(served: Served) -> Iterator[Runs]:
    end = served.history.end
    cold_end = end - timedelta(hours=3)
    recording = Recording()
    with PromClient(served.server.url, transport=recording) as client:
        full = PrometheusSource(client).collect(end - WEEK, end)
        source = IncrementalSource(PrometheusSource(client), window=WEEK)
        source.collect(cold_end - WEEK, cold_end)
        recording.requests.clear()
        incremental = source.collect(end - WEEK, end)
        assert source.last_cycle is not None and source.last_cycle.kind == "delta"
    yield Runs(end, cold_end, full, incremental, list(recording.requests))


def by_key(snap: UsageSnapshot) -> dict[tuple[object, str], ContainerUsage]:
    return {(u.workload, u.container): u for u in snap.containers}


def test_the_delta_cycles_usage_equals_the_full_window_within_two_percent(runs: Runs) -> None:
    full, mine = by_key(runs.full), by_key(runs.incremental)
    assert set(mine) == set(full) and len(full) > 10
    worst = 0.0
    for k, u in full.items():
        for res in ("cpu_cores", "memory_bytes"):
            for q in ("p50", "p90", "p95", "p99", "max"):
                exact, got = getattr(getattr(u, res), q), getattr(getattr(mine[k], res), q)
                if exact:
                    worst = max(worst, abs(got - exact) / abs(exact))
        assert mine[k].current_requests == u.current_requests
        assert mine[k].oom_kill_memory_bytes == u.oom_kill_memory_bytes
        # raw sample counts of a re-read hour are apportioned by its points: within 2 %
        assert mine[k].samples == pytest.approx(u.samples, rel=0.02)
    assert worst <= 0.02


def _values(recs: tuple[Recommendation, ...]) -> dict[str, float]:
    out = {}
    for rec in recs:
        for c in rec.containers:
            for kind, values in (("request", c.requests), ("limit", c.limits)):
                for resource, value in values.items():
                    out[f"{rec.target}/{c.name}/{resource} {kind}"] = parse(value)
    return out


def test_the_recommendations_equal_the_full_windows_within_two_percent(runs: Runs) -> None:
    prices = PriceTable.for_policy(POLICY)
    exact = _values(recommend(runs.full, POLICY, prices, runs.end).recommendations)
    got = _values(recommend(runs.incremental, POLICY, prices, runs.end).recommendations)
    assert set(got) == set(exact) and len(exact) > 20
    off = {k: (got[k], v) for k, v in exact.items() if abs(got[k] - v) > 0.02 * abs(v)}
    assert off == {}


def test_the_delta_cycle_reads_only_from_the_hour_of_the_newest_sample(runs: Runs) -> None:
    since = runs.cold_end.replace(minute=0, second=0).timestamp()
    ranges = [
        p
        for path, p in runs.delta_requests
        if path.endswith(("/query_range", "/read")) and "container_" in p["query"][0]  # GPUs: the window
    ]
    assert len(ranges) >= 2 * len({u.workload.namespace for u in runs.full.containers})  # cpu, memory
    # a raw read starts a step and the widest rate interval earlier: the interval ending in the first step
    lookback = 60 + SLOW_SCRAPE_WINDOW_S
    assert all(float(p["start"][0]) >= since - lookback for p in ranges)
    lookups = [p for path, p in runs.delta_requests if path.endswith("/series")]
    assert lookups and all(float(p["start"][0]) >= since for p in lookups)  # pods: the interval's only
    window = re.compile(
        r"(?:count_over_time|last_over_time)\(container_memory_working_set_bytes[^\[]*\[(\d+)s\]"
    )
    looked_back = [
        int(s) for _, p in runs.delta_requests for q in p.get("query", []) for s in window.findall(q)
    ]
    assert looked_back and max(looked_back) <= runs.end.timestamp() - since + 1


def test_run_once_twice_restores_the_checkpoint_instead_of_reading_the_window(
    served: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for name in list(os.environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)
    checkpoint = tmp_path / "usage.ckpt"

    def run() -> int:
        parser = argparse.ArgumentParser(prog="podsizer run")
        add_run_arguments(parser)
        args = parser.parse_args(
            ["--once", "--prometheus-url", served.server.url, "--store", "json", "--store-file",
             str(tmp_path / "recs.json"), "--checkpoint-file", str(checkpoint), "--metrics-port", "0"]
        )  # fmt: skip
        return run_reporting_errors("run", run_loop, args)

    with caplog.at_level(logging.INFO, logger="podsizer.incremental"):
        assert run() == 0
        assert checkpoint.stat().st_size > 0
        first = [r.getMessage() for r in caplog.records if "usage model:" in r.getMessage()]
        caplog.clear()
        assert run() == 0
        second = [r.getMessage() for r in caplog.records if "usage model:" in r.getMessage()]
    assert len(first) == 1 and "cold cycle (no usage model yet)" in first[0]
    assert len(second) == 1 and "restored cycle" in second[0]
    assert any("checkpoint restored from file" in r.getMessage() for r in caplog.records)


def test_recommend_from_the_checkpoint_agrees_with_the_full_window_and_never_writes_it(
    served: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in list(os.environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)
    checkpoint = tmp_path / "usage.ckpt"
    base = ["--prometheus-url", served.server.url, "--checkpoint-file", str(checkpoint)]

    def run(command: Callable[[argparse.Namespace], int], add: Callable[..., None], *argv: str) -> str:
        parser = argparse.ArgumentParser(prog=f"podsizer {command.__name__}")
        add(parser)
        status = run_reporting_errors(command.__name__, command, parser.parse_args([*base, *argv]))
        assert status == 0
        return capsys.readouterr().out

    run(
        run_loop,
        add_run_arguments,
        "--once",
        "--store-file",
        str(tmp_path / "recs.json"),
        "--metrics-port",
        "0",
    )
    written = checkpoint.read_bytes()
    full = json.loads(run(run_recommend, add_recommend_arguments, "-o", "json", "--no-progress"))["items"]
    restored = json.loads(
        run(run_recommend, add_recommend_arguments, "-o", "json", "--no-progress", "--from-checkpoint")
    )["items"]
    assert checkpoint.read_bytes() == written
    assert len(restored) == len(full) > 10

    def values(items: list[dict[str, Any]]) -> dict[str, float]:
        return {
            f"{i['metadata']['name']}/{c['name']}/{kind}/{r}": parse(v)
            for i in items
            for c in i["status"]["containers"]
            for kind in ("requests", "limits")
            for r, v in c.get(kind, {}).items()
        }

    exact, got = values(full), values(restored)
    assert set(got) == set(exact)
    assert {k: (got[k], v) for k, v in exact.items() if abs(got[k] - v) > 0.02 * abs(v)} == {}


def test_recommend_from_the_checkpoint_refuses_a_backtest(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="podsizer recommend")
    add_recommend_arguments(parser)
    args = parser.parse_args(
        ["--from-checkpoint", "--as-of", "2026-01-01T00:00:00Z", "--prometheus-url", "http://127.0.0.1:9"]
    )
    assert run_reporting_errors("recommend", run_recommend, args) == 2
    assert "PODSIZER_FROM_CHECKPOINT" in capsys.readouterr().err


def test_a_cold_start_ending_on_the_hour_and_a_repeated_cycle_read_without_an_empty_range(
    served: Served,
) -> None:
    end = served.history.end.replace(minute=0, second=0, microsecond=0)
    with PromClient(served.server.url) as client:
        source = IncrementalSource(PrometheusSource(client), window=WEEK)
        first = source.collect(end - WEEK, end)  # its last read starts at the window's end
        again = source.collect(end - WEEK, end)  # nothing new: the same model
    assert source.last_cycle is not None and source.last_cycle.kind == "delta"
    assert by_key(again) == by_key(first) and len(by_key(first)) > 10
