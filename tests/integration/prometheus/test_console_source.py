"""`podsizer console --source prometheus` on a real Prometheus (backfilled history): /api/overview shows
the plan `podsizer recommend --output json` prints for the same window, and the header names the source."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from console.app import create_console_app
from console.sources import build, build_inputs
from podsizer.api.quantity import parse
from podsizer.api.resource import recommendation_from_resource
from podsizer.settings import ConsoleSettings, load, run_reporting_errors
from recommender.commands import add_recommend_arguments, run_recommend
from recommender.wiring import Wiring

from .conftest import Served

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _no_podsizer_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)


@pytest.fixture(scope="module")
def overview(served: Served, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    env = {
        "PODSIZER_SOURCE": "prometheus",
        "PODSIZER_PROMETHEUS_URL": served.server.url,
        "PODSIZER_STORE_FILE": str(tmp_path_factory.mktemp("console") / "absent.json"),
    }
    data = build(build_inputs(load(ConsoleSettings, env=env)), served.history.end)
    client = TestClient(create_console_app(data))
    yield client.get("/api/overview", params={"per_page": 500}).json()


def _recommend_json(
    served: Served, capsys: pytest.CaptureFixture[str], store: Path, *more: str
) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="podsizer recommend")
    add_recommend_arguments(parser)
    argv = ["--source", "prometheus", "--prometheus-url", served.server.url, "--no-progress", "-o", "json"]
    args = parser.parse_args([*argv, "--store-file", str(store), *more])
    wiring = Wiring(clock=lambda: served.history.end)
    assert run_reporting_errors("recommend", lambda a: run_recommend(a, wiring), args) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def _key(ref: dict[str, Any]) -> tuple[str, str, str]:
    return (ref["namespace"], ref["kind"], ref["name"])


def test_the_header_names_prometheus_with_its_host_and_the_computed_run(
    overview: dict[str, Any], served: Served
) -> None:
    meta = overview["meta"]
    host = served.server.url.split("://", 1)[1].rstrip("/")
    assert meta["source"] == f"prometheus ({host})"
    assert meta["origin"].startswith("computed from the source's data")
    assert meta["window_end"].startswith(served.history.end.strftime("%Y-%m-%dT%H:%M"))


def test_overview_numbers_equal_the_recommend_json_plan(
    overview: dict[str, Any], served: Served, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = _recommend_json(served, capsys, tmp_path / "absent.json")
    items = {
        (i["metadata"]["namespace"], i["spec"]["targetRef"]["kind"], i["spec"]["targetRef"]["name"]): i
        for i in doc["items"]
    }
    rows = {_key(w["workload"]): w for w in overview["workloads"]}
    assert len(rows) == overview["page"]["matching"] == overview["totals"]["workloads"]
    assert set(rows) == set(items) and len(rows) >= 5
    for key, item in items.items():
        row = rows[key]
        plan = item["plan"]
        assert row["mode"] == plan["mode"], key
        assert row["plan_skip"] == plan["skip"], key
        shown = sorted(
            (json.dumps(ch, sort_keys=True) for c in row["containers"] for ch in c["changes"]), key=str
        )
        planned = sorted((json.dumps(ch, sort_keys=True) for ch in plan.get("changes", [])), key=str)
        assert shown == planned, key
        rec = recommendation_from_resource(item)
        recommended = {c.name: {r: parse(v) for r, v in c.requests.items()} for c in rec.containers}
        assert {
            c["name"]: {r: v for r, v in c["recommended_requests"].items() if r in recommended[c["name"]]}
            for c in row["containers"]
        } == recommended, key
    assert any(item["plan"].get("changes") for item in items.values())
    assert overview["totals"]["gpu_hourly_cost"] == pytest.approx(doc["cost"]["clusterHourly"], abs=1e-5)
    assert overview["totals"]["gpu_wasted_hourly_cost"] == pytest.approx(
        doc["cost"]["clusterWastedHourly"], abs=1e-5
    )


def test_the_stores_recommendations_are_shown_when_the_recommender_wrote_them(
    served: Served, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = tmp_path / "recommendations.json"
    doc = _recommend_json(served, capsys, store, "--write")
    env = {"PODSIZER_SOURCE": "prometheus", "PODSIZER_PROMETHEUS_URL": served.server.url}
    data = build(
        build_inputs(load(ConsoleSettings, env={**env, "PODSIZER_STORE_FILE": str(store)})),
        served.history.end,
    )
    meta = TestClient(create_console_app(data)).get("/api/meta").json()
    assert (meta["origin"], meta["store"]) == (f"{len(doc['items'])} from the store", f"json {store}")
    assert len(data.workloads()) == len(doc["items"])


def test_gpu_inventory_and_drill_down_series_come_from_prometheus(served: Served, tmp_path: Path) -> None:
    env = {"PODSIZER_SOURCE": "prometheus", "PODSIZER_PROMETHEUS_URL": served.server.url}
    settings = load(ConsoleSettings, env={**env, "PODSIZER_STORE_FILE": str(tmp_path / "absent.json")})
    client = TestClient(create_console_app(build(build_inputs(settings), served.history.end)))
    nodes = {n["name"]: n["gpu_count"] for n in client.get("/api/gpu/nodes").json()}
    known = {n.name: n.gpu_count for n in served.history.nodes if n.name.startswith("gpu-")}
    assert set(nodes) == set(known) and nodes["gpu-node-1"] == known["gpu-node-1"] == 1
    pod = "web-7d9f8c6b5-x2x9z"
    charts = client.get(f"/api/pods/shop/{pod}").json()["charts"]
    cpu = next(c for c in charts if c["unit"] == "cores")
    assert cpu["lines"] and len(cpu["lines"][0]["values"]) > 100
