"""Formatters: table with current -> recommended, waste and cost sections; json/yaml store document; csv."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta

import pytest
import yaml

from podsizer.api.identity import WorkloadRef
from podsizer.api.resource import (
    ContainerRecommendation,
    GpuRecommendation,
    Recommendation,
    Window,
    recommendation_to_resource,
)
from podsizer.owners import Skipped
from recommender.output.report import CSV_COLUMNS, Report, render, truncate
from recommender.sizing.cost import CostItem, CostReport
from recommender.sizing.waste import WasteFinding

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
WEB = WorkloadRef("shop", "Deployment", "web")
TRAIN = WorkloadRef("ml", "StatefulSet", "train")
LONG_REASON = "cpu: p99 510m + 15% margin; memory: p99 629Mi + 15% margin; " + "x" * 200


def report() -> Report:
    web = Recommendation(
        target=WEB,
        generated_at=T0,
        window=Window(T0 - timedelta(days=7), T0, 2016),
        sizing_mode="autopilot",
        containers=(
            ContainerRecommendation(
                "app", {"cpu": "120m", "memory": "300Mi"}, {"memory": "375Mi"}, 0.93, "short"
            ),
            ContainerRecommendation(
                "sidecar", {"cpu": "10m", "memory": "32Mi"}, {"memory": "40Mi"}, 0.2, LONG_REASON, True
            ),
        ),
    )
    train = Recommendation(
        target=TRAIN,
        generated_at=T0,
        window=Window(T0 - timedelta(days=7), T0, 2016),
        sizing_mode="static",
        containers=(
            ContainerRecommendation(
                "trainer",
                {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"},
                {"memory": "20Gi", "nvidia.com/gpu": "1"},
                1.0,
                "gpu: idle",
            ),
        ),
        gpu=GpuRecommendation(
            "NVIDIA A100-SXM4-80GB",
            1,
            0.01,
            2 * 1024**3,
            idle=True,
            suggested_resource="nvidia.com/mig-1g.10gb",
            hourly_cost=4.1,
            wasted_hourly_cost=4.1,
        ),
    )
    costs = CostReport.of(
        [
            CostItem(TRAIN, "trainer", "train-0", "gpu-1", 1, 4.1, 4.1, "on-demand", "p4d.24xlarge"),
            CostItem(
                WorkloadRef("ml", "Deployment", "infer"),
                "s",
                "infer-1",
                "gpu-2",
                1,
                2.0,
                0.0,
                "spot",
                "g5.xlarge",
            ),
        ]
    )
    waste = (
        WasteFinding(
            TRAIN,
            "trainer",
            "train-0",
            "gpu-1",
            "NVIDIA A100-SXM4-80GB",
            1,
            "SM_ACTIVE",
            T0 - timedelta(hours=3),
            3.0,
            0.05,
            4.1,
            4.1,
            "on-demand",
        ),
    )
    current: dict[tuple[WorkloadRef, str], dict[str, dict[str, float]]] = {
        (WEB, "app"): {
            "requests": {"cpu": 0.5, "memory": 1024 * 1024**2},
            "limits": {"memory": 1024 * 1024**2},
        },
    }
    return Report(
        recommendations=(web, train),
        skipped=(Skipped("legacy/pod/billing-7-deploy", "OpenShift deployer or hook pod"),),
        waste=waste,
        costs=costs,
        current=current,
    )


def test_table_shows_current_and_recommended_values_in_aligned_columns() -> None:
    text = render(report(), "table")
    lines = text.splitlines()
    header = lines[0]
    assert header.split() == [
        "NAMESPACE",
        "WORKLOAD",
        "CONTAINER",
        "CPU",
        "REQUEST",
        "MEMORY",
        "REQUEST",
        "MEMORY",
        "LIMIT",
        "GPU",
        "MODE",
        "CONFIDENCE",
        "REASON",
    ]
    ml, app, sidecar = lines[1], lines[2], lines[3]
    assert ml.startswith("ml ") and "StatefulSet/train" in ml  # sorted by namespace
    assert "500m -> 120m" in app and "1024Mi -> 300Mi" in app and "autopilot" in app
    assert "1 (nvidia.com/mig-1g.10gb) idle" in ml
    col = header.index("MODE")
    assert app[col:].startswith("autopilot") and ml[col:].startswith("static")
    assert "0.20 low" in sidecar
    reason = sidecar[header.index("REASON") :]
    assert reason.endswith("...") and len(reason) == 60 and LONG_REASON.startswith(reason[:-3])
    assert "2 workloads, 3 containers (1 low-confidence" in text


def test_table_width_fits_the_reason_into_the_terminal() -> None:
    wide = render(report(), "table").splitlines()
    narrow = render(report(), "table", width=180).splitlines()
    assert max(len(line) for line in wide[:4]) > 180
    assert max(len(line) for line in narrow[:4]) <= 180


def test_table_has_skipped_waste_and_cost_sections_with_cluster_totals() -> None:
    text = render(report(), "table")
    assert "Skipped (1):" in text and "legacy/pod/billing-7-deploy" in text
    assert "Idle GPUs (1):" in text and "train-0" in text and "2026-12-01 09:00 (3.0 h)" in text
    cost = text[text.index("GPU cost ($/hour):") :].splitlines()
    assert cost[1].split() == ["NAMESPACE", "HOURLY", "WASTED", "WASTED", "%"]
    assert cost[2].split() == ["ml", "6.10", "4.10", "67%"]
    assert cost[3].split() == ["(cluster)", "6.10", "4.10", "67%"]


def test_empty_report_says_so() -> None:
    assert render(Report(()), "table").startswith("No recommendations.")


def test_json_is_the_store_document_plus_skipped_waste_and_cost() -> None:
    r = report()
    doc = json.loads(render(r, "json"))
    assert doc["kind"] == "RecommendationList" and doc["apiVersion"] == "podsizer.io/v1alpha1"
    assert doc["items"] == [
        recommendation_to_resource(x) for x in (r.recommendations[1], r.recommendations[0])
    ]
    assert doc["skipped"] == [
        {"subject": "legacy/pod/billing-7-deploy", "reason": "OpenShift deployer or hook pod"}
    ]
    assert doc["waste"][0]["pod"] == "train-0" and doc["waste"][0]["idleSince"] == "2026-12-01T09:00:00Z"
    assert doc["cost"]["clusterHourly"] == pytest.approx(6.1)
    assert doc["cost"]["namespaces"]["ml"]["wastedHourly"] == pytest.approx(4.1)


def test_yaml_holds_the_same_document_as_json() -> None:
    r = report()
    assert yaml.safe_load(render(r, "yaml")) == json.loads(render(r, "json"))


def test_csv_has_one_row_per_container_with_current_values() -> None:
    rows = list(csv.DictReader(io.StringIO(render(report(), "csv"))))
    assert tuple(rows[0].keys()) == CSV_COLUMNS
    assert [(r["namespace"], r["name"], r["container"]) for r in rows] == [
        ("ml", "train", "trainer"),
        ("shop", "web", "app"),
        ("shop", "web", "sidecar"),
    ]
    train, app, sidecar = rows
    assert (app["cpu_request_current"], app["cpu_request"]) == ("500m", "120m")
    assert (app["memory_limit_current"], app["memory_limit"]) == ("1024Mi", "375Mi")
    assert (train["gpu"], train["gpu_suggested_resource"], train["gpu_idle"]) == (
        "1",
        "nvidia.com/mig-1g.10gb",
        "true",
    )
    assert float(train["gpu_wasted_hourly_cost"]) == pytest.approx(4.1)
    assert sidecar["low_confidence"] == "true" and sidecar["reason"] == LONG_REASON
    assert app["gpu"] == "" and app["cpu_request_current"] != ""


def test_truncate() -> None:
    assert truncate("short", 10) == "short"
    assert truncate("a  b\n c", 10) == "a b c"
    assert truncate("abcdefghijkl", 8) == "abcde..."
    assert len(truncate("x" * 100, 20)) == 20


def test_unknown_format_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown output format 'xml'"):
        render(report(), "xml")  # type: ignore[arg-type]
