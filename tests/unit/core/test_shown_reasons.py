"""A value the plan clamped once stood beside a reason naming another number (storefront
`2 -> 500m` beside "cpu: p99 393m + 15% margin", notebook `4 -> 1`, checkout-api `250m -> 1`), and the
console's pod page drew the estimate ("recommended 504m") where its workload page showed the plan's 1.
Now every format shows the plan's value with the rule that moved it, through the commands a user runs."""

from __future__ import annotations

import argparse
import csv
import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from console.app import create_console_app
from console.sources import build, build_inputs
from podsizer.podspec import quantity
from podsizer.settings import ConsoleSettings, run_reporting_errors
from recommender.commands import add_recommend_arguments, run_recommend
from recommender.wiring import Wiring

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
CLAMPED = [("storefront", "web"), ("notebook", "jupyter"), ("checkout-api", "api")]


@pytest.fixture(autouse=True)
def _no_podsizer_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    for name in list(__import__("os").environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # no recommendations.json of the caller's


def recommend(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """`podsizer recommend --source demo ARGV` at a fixed time; its standard output."""
    parser = argparse.ArgumentParser(prog="podsizer recommend")
    add_recommend_arguments(parser)
    args = parser.parse_args(["--source", "demo", "--no-progress", *argv])
    wiring = Wiring(clock=lambda: NOW)
    assert run_reporting_errors("recommend", lambda a: run_recommend(a, wiring), args) == 0
    return capsys.readouterr().out


def _planned(item: dict[str, Any], container: str, resource: str) -> str | None:
    change = next(
        (
            c
            for c in item["plan"]["changes"]
            if (c["container"], c["field"], c["resource"]) == (container, "requests", resource)
        ),
        None,
    )
    if change is not None:
        return str(change["to"])
    current = next(c for c in item["plan"]["current"] if c["container"] == container)
    value = current["requests"].get(resource)
    return None if value is None else str(value)


def test_every_request_shown_other_than_the_estimate_names_the_rule_that_moved_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = json.loads(recommend(capsys, "-o", "json"))
    moved = 0
    for item in doc["items"]:
        if item["plan"].get("skip") not in (None, "no-change", "policy-limited"):
            continue
        adjusted = {(a["container"], a["field"], a["resource"]): a for a in item["plan"]["adjusted"]}
        for c in item["status"]["containers"]:
            for resource, estimate in c["requests"].items():
                planned = _planned(item, c["name"], resource)
                if resource not in ("cpu", "memory") or planned is None:
                    continue
                said = adjusted.get((c["name"], "requests", resource))
                if quantity(planned) == quantity(estimate):
                    assert said is None, said
                    continue
                assert said is not None and said["why"], (item["metadata"]["name"], c["name"], resource)
                assert quantity(said["planned"]) == quantity(planned)
                moved += 1
    assert moved >= len(CLAMPED)


@pytest.mark.parametrize(("workload", "container"), CLAMPED)
def test_the_clamped_demo_requests_say_the_maximum_change_factor_in_every_format(
    capsys: pytest.CaptureFixture[str], workload: str, container: str
) -> None:
    doc = json.loads(recommend(capsys, "-o", "json"))
    item = next(i for i in doc["items"] if i["spec"]["targetRef"]["name"] == workload)
    (cpu,) = [a for a in item["plan"]["adjusted"] if a["resource"] == "cpu" and a["field"] == "requests"]
    assert [s["rule"] for s in cpu["why"]] == ["max-change"]
    said = f"plan: cpu request {cpu['planned']} instead of {cpu['estimate']}: clamped by the maximum change"
    wide = recommend(capsys, "--wide", "--namespaces", item["metadata"]["namespace"])
    assert said in " ".join(wide.split())
    rows = list(csv.DictReader(io.StringIO(recommend(capsys, "-o", "csv"))))
    row = next(r for r in rows if r["name"] == workload and r["container"] == container)
    assert said in row["reason"] and quantity(row["cpu_request"]) == quantity(cpu["planned"])
    for fmt in ("markdown", "html"):
        assert said in recommend(capsys, "-o", fmt).replace("&#39;", "'")


@pytest.fixture(scope="module")
def console() -> Iterator[TestClient]:
    """The console as `podsizer console --source demo` builds it (no store: it computes the run)."""
    settings = ConsoleSettings.model_validate({"console_source": "demo", "store_file": "absent.json"})
    data = build(build_inputs(settings), NOW)
    with TestClient(create_console_app(data)) as client:
        yield client


def test_the_console_pod_page_draws_the_new_request_its_workload_page_shows(console: TestClient) -> None:
    workload = console.get("/api/workloads/ml/Deployment/notebook").json()
    (jupyter,) = workload["workload"]["containers"]
    planned, estimate = jupyter["planned_requests"]["cpu"], jupyter["recommended_requests"]["cpu"]
    assert planned != estimate  # clamped by the change factor: the case the pod page got wrong
    assert "plan: cpu request" in jupyter["reason"] and jupyter["adjusted"]
    pod = next(p for p in console.get("/api/pods").json() if p["workload"]["name"] == "notebook")
    charts = console.get(f"/api/pods/ml/{pod['name']}").json()["charts"]
    refs = {r["label"]: r["value"] for c in charts if c["key"] == "cpu" for r in c["references"]}
    assert refs["jupyter new request"] == pytest.approx(planned)
    assert estimate not in refs.values()
