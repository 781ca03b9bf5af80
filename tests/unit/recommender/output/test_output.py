"""Formatters: table with current -> planned (the pod plan), waste, cost; json/yaml store document; csv."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from podsizer.api.identity import WorkloadRef
from podsizer.api.resource import (
    ContainerRecommendation,
    GpuRecommendation,
    Recommendation,
    Window,
    recommendation_from_resource,
    recommendation_to_resource,
)
from podsizer.owners import Skipped
from podsizer.podspec import CurrentResources
from podsizer.policy import PlanPolicy
from podsizer.resources import GPU
from podsizer.subject import Subject
from recommender.output.report import CSV_COLUMNS, Report, render, truncate
from recommender.output.store.jsonfile import JsonFileStore
from recommender.sizing.cost import CostItem, CostReport
from recommender.sizing.waste import WasteFinding

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
MIB = 1024.0**2
WEB = WorkloadRef("shop", "Deployment", "web")
TRAIN = WorkloadRef("ml", "StatefulSet", "train")
LONG_REASON = "cpu: p99 510m + 15% margin; memory: p99 629Mi + 15% margin; " + "x" * 200
# the low-confidence sidecar's values are never applied: the reason says so after the sizing reason
SIDECAR_REASON = (
    f"{LONG_REASON}; plan: cpu request 50m instead of 10m: confidence 0.20: never applied; "
    "memory request (unset) instead of 32Mi: confidence 0.20: never applied"
)


def report(policy: PlanPolicy | None = None) -> Report:
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
    current = {
        WEB: (
            CurrentResources.of("app", {"cpu": 0.5, "memory": 1024 * MIB}, {"memory": 2048 * MIB}),
            CurrentResources.of("sidecar", {"cpu": 0.05}, {}),
        ),
        TRAIN: (
            CurrentResources.of(
                "trainer", {"cpu": 8.0, "memory": 32768 * MIB, GPU: 2.0}, {"memory": 32768 * MIB, GPU: 2.0}
            ),
        ),
    }
    return Report(
        recommendations=(web, train),
        skipped=(Skipped(Subject.of_pod("legacy", "billing-7-deploy"), "OpenShift deployer or hook pod"),),
        waste=waste,
        costs=costs,
        current=current,
        policy=policy or PlanPolicy(max_change_factor=None),  # 500m -> 120m is over the 4x default
    )


def test_table_shows_current_and_planned_values_in_aligned_columns() -> None:
    text = render(report(), "table", wide=True)
    lines = text.splitlines()
    header = lines[0]
    assert header.split() == [
        "NAMESPACE",
        "WORKLOAD",
        "CONTAINER",
        "CPU",
        "REQUEST",
        "CPU",
        "LIMIT",
        "MEMORY",
        "REQUEST",
        "MEMORY",
        "LIMIT",
        "GPU",
        "MODE",
        "SIZING",
        "CONFIDENCE",
        "REASON",
    ]
    ml, app, sidecar = lines[1], lines[2], lines[3]
    assert ml.startswith("ml ") and "StatefulSet/train" in ml  # sorted by namespace
    # keep-ratio (the default): the 2:1 memory limit/request ratio stays, so 300Mi -> 600Mi
    assert "500m -> 120m" in app and "1024Mi -> 300Mi" in app and "2048Mi -> 600Mi" in app
    assert "2 -> 1 (needs podsizer.io/gpu: resize) (suggests nvidia.com/mig-1g.10gb) idle" in ml
    col = header.index("SIZING")
    assert app[col:].startswith("autopilot") and ml[col:].startswith("static")
    assert app[header.index("MODE") :].startswith("dry-run")
    assert "0.20 low" in sidecar and sidecar[header.index("CPU REQUEST") :].startswith("50m ")
    assert sidecar[header.index("REASON") :] == SIDECAR_REASON  # whole on a pipe (no width)
    assert "2 workloads, 3 containers (1 low-confidence" in text


def test_table_shows_the_recommendations_limit_under_the_recommended_policy() -> None:
    app = render(report(PlanPolicy("recommended")), "table", wide=True).splitlines()[2]
    assert "2048Mi -> 375Mi" in app


def test_table_gpu_column_shows_current_to_new_with_the_opt_in() -> None:
    ml = render(report(PlanPolicy(gpu_resize=True)), "table", wide=True).splitlines()[1]
    assert "2 -> 1 (suggests nvidia.com/mig-1g.10gb) idle" in ml
    swap = PlanPolicy(gpu_resize=True, allow_mig_swap=True)
    swapped = render(report(swap), "table", wide=True).splitlines()[1]
    assert "2 -> 1 nvidia.com/mig-1g.10gb idle" in swapped


def test_a_workload_the_source_does_not_know_shows_question_marks() -> None:
    r = dataclasses.replace(report(), current={})
    app = render(r, "table", wide=True).splitlines()[2]
    assert "? -> 120m" in app and "current-unknown" in app


def test_table_width_fits_the_reason_into_the_terminal() -> None:
    wide = render(report(), "table", wide=True).splitlines()
    narrow = render(report(), "table", width=250, wide=True).splitlines()
    assert max(len(line) for line in wide[:4]) > 250
    assert max(len(line) for line in narrow) <= 250


def test_wide_table_wraps_the_whole_reason_within_the_terminal() -> None:
    lines = render(report(), "table", width=300, wide=True).splitlines()
    col = lines[0].index("REASON")
    body = lines[: lines.index("")]
    assert max(len(line) for line in body) <= 300
    sidecar = next(i for i, line in enumerate(body) if "sidecar" in line)
    continued = [line for line in body[sidecar + 1 :] if not line[:col].strip()]
    assert len(continued) >= 2  # the long reason goes on in the REASON column
    text = "".join([body[sidecar][col:], *(c[col:] for c in continued)])
    assert text.replace(" ", "") == SIDECAR_REASON.replace(" ", "")  # long words break anywhere


def test_wide_table_puts_the_reason_under_the_row_when_the_column_would_be_too_narrow() -> None:
    lines = render(report(), "table", width=230, wide=True).splitlines()
    assert "REASON" not in lines[0]
    sidecar = next(i for i, line in enumerate(lines) if " sidecar " in line)
    under = [line for line in lines[sidecar + 1 : sidecar + 8] if line.startswith("    ")]
    assert "".join(line.strip() for line in under).replace(" ", "") == SIDECAR_REASON.replace(" ", "")
    assert all(len(line) <= 230 for line in under)


def test_table_has_skipped_waste_and_cost_sections_with_cluster_totals() -> None:
    text = render(report(), "table", wide=True)
    assert "Skipped (1):" in text and "legacy/pod/billing-7-deploy" in text
    assert "Idle GPUs (1):" in text and "train-0" in text and "2026-12-01 09:00 (3.0 h)" in text
    cost = text[text.index("GPU cost ($/hour):") :].splitlines()
    assert cost[1].split() == ["NAMESPACE", "HOURLY", "WASTED", "WASTED", "%"]
    assert cost[2].split() == ["ml", "6.10", "4.10", "67%"]
    assert cost[3].split() == ["(cluster)", "6.10", "4.10", "67%"]


def test_empty_report_says_so() -> None:
    assert render(Report(()), "table").startswith("No recommendations.")


def test_json_is_the_store_document_with_a_plan_per_item_plus_skipped_waste_and_cost() -> None:
    r = report()
    doc = json.loads(render(r, "json"))
    assert doc["kind"] == "RecommendationList" and doc["apiVersion"] == "podsizer.io/v1alpha1"
    expected = [recommendation_to_resource(x) for x in (r.recommendations[1], r.recommendations[0])]
    assert [{k: v for k, v in item.items() if k != "plan"} for item in doc["items"]] == expected
    assert [recommendation_from_resource(item) for item in doc["items"]] == [
        r.recommendations[1],
        r.recommendations[0],
    ]
    assert doc["skipped"] == [
        {
            "subject": "legacy/pod/billing-7-deploy",
            "reason": "OpenShift deployer or hook pod",
            "failed": False,
            "about": {"namespace": "legacy", "kind": "pod", "name": "billing-7-deploy"},
        }
    ]
    assert doc["waste"][0]["pod"] == "train-0" and doc["waste"][0]["idleSince"] == "2026-12-01T09:00:00Z"
    assert doc["cost"]["clusterHourly"] == pytest.approx(6.1)
    assert doc["cost"]["namespaces"]["ml"]["wastedHourly"] == pytest.approx(4.1)


def test_json_plan_holds_mode_current_values_and_the_change_record() -> None:
    web = json.loads(render(report(), "json"))["items"][1]
    plan = web["plan"]
    assert (plan["mode"], plan["skip"], plan["recommendation"]) == ("dry-run", None, "deployment-web")
    assert plan["current"][0] == {
        "container": "app",
        "containerType": "containers",
        "requests": {"cpu": "500m", "memory": "1Gi"},
        "limits": {"memory": "2Gi"},
    }
    changes = {(c["field"], c["resource"]): (c["from"], c["to"]) for c in plan["changes"]}
    assert changes == {
        ("requests", "cpu"): ("500m", "120m"),
        ("requests", "memory"): ("1Gi", "300Mi"),
        ("limits", "memory"): ("2Gi", "600Mi"),
    }  # the low-confidence sidecar is not changed


def test_the_json_output_is_a_store_file_the_json_store_reads(tmp_path: Path) -> None:
    path = tmp_path / "recs.json"
    path.write_text(render(report(), "json"))
    assert {rec.target for rec in JsonFileStore(path).list()} == {WEB, TRAIN}


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
    assert (app["memory_limit_current"], app["memory_limit"]) == ("2Gi", "600Mi")
    assert (app["mode"], sidecar["cpu_request"]) == ("dry-run", "50m")  # low confidence: unchanged
    assert (train["gpu_current"], train["gpu"], train["gpu_recommended"]) == ("2", "2", "1")
    assert (train["gpu_suggested_resource"], train["gpu_idle"]) == ("nvidia.com/mig-1g.10gb", "true")
    assert float(train["gpu_wasted_hourly_cost"]) == pytest.approx(4.1)
    assert sidecar["low_confidence"] == "true" and sidecar["reason"] == SIDECAR_REASON
    assert app["gpu"] == "" and app["cpu_request_current"] != ""


def test_truncate() -> None:
    assert truncate("short", 10) == "short"
    assert truncate("a  b\n c", 10) == "a b c"
    assert truncate("abcdefghijkl", 8) == "abcde..."
    assert len(truncate("x" * 100, 20)) == 20


def test_unknown_format_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown output format 'xml'"):
        render(report(), "xml")  # type: ignore[arg-type]
