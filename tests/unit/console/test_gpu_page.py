"""The GPU page on the demo: GPUs recommended per workload and pod, what the GPU opt-in would save (and
that opting in then saves it), one spelling per GPU model, framebuffer sums named, and an empty page
that says where GPU data comes from."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from console.app import create_console_app
from console.data import Meta, StaticConsoleData
from console.demo_data import DemoConsoleData
from podsizer.policy import PlanPolicy
from recommender.sizing.gpu import gpu_model

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
BERT = "ml/StatefulSet/bert-finetune"


def _gpu(plan_policy: PlanPolicy | None = None) -> tuple[dict[str, Any], str]:
    """GET /api/gpu and the /gpu page of the demo under `plan_policy`."""
    data = DemoConsoleData.build(NOW, plan_policy=plan_policy)
    with TestClient(create_console_app(data)) as c:
        return c.get("/api/gpu").json(), c.get("/gpu").text


@pytest.fixture(scope="module")
def demo() -> tuple[dict[str, Any], str]:
    return _gpu()


def _workload(body: dict[str, Any], key: str) -> dict[str, Any]:
    def key_of(w: dict[str, Any]) -> str:
        return "/".join(w["workload"][k] for k in ("namespace", "kind", "name"))

    return next(w for w in body["workloads"] if key_of(w) == key)


def test_the_gpu_page_lists_gpus_now_and_recommended_per_workload(demo: tuple[dict[str, Any], str]) -> None:
    body, html = demo
    bert = _workload(body, BERT)
    assert (bert["gpus_per_pod"], bert["recommended_per_pod"], bert["gpu_resize"]) == (4, 3, False)
    assert _workload(body, "ml/Deployment/reranker")["suggested_mig"] == "nvidia.com/mig-1g.5gb"
    pod = next(p for p in body["pods"] if p["pod"] == "bert-finetune-0")
    assert pod["recommended_gpus"] == 3
    assert 'id="gpu-workloads"' in html and ">nvidia.com/mig-1g.5gb<" in html


def test_what_opting_in_would_save_is_what_opting_in_saves(demo: tuple[dict[str, Any], str]) -> None:
    body, html = demo
    bert = _workload(body, BERT)
    one_of_four = bert["gpu_hourly_cost"] / 4  # 4 -> 3 GPUs on one replica frees a quarter of its cost
    assert bert["gpu_opt_in_hourly_savings"] == pytest.approx(one_of_four) and one_of_four > 1
    assert f'would save <b data-field="gpu_opt_in_hourly_savings">${one_of_four:.3f}/h</b>' in html
    opted, _ = _gpu(PlanPolicy(gpu_resize=True))
    after = _workload(opted, BERT)
    assert after["gpu_hourly_savings"] == pytest.approx(bert["gpu_hourly_savings"] + one_of_four)
    assert after["gpu_opt_in_hourly_savings"] == 0.0 and after["gpu_resize"] is True


def test_a_gpu_model_is_spelled_one_way_on_nodes_and_pods(demo: tuple[dict[str, Any], str]) -> None:
    body, _ = demo
    node_model = {n["name"]: n["model"] for n in body["nodes"]}
    assert {"NVIDIA H100 80GB HBM3", "NVIDIA A100 SXM4 40GB"} <= set(node_model.values())
    for p in body["pods"]:
        assert p["model"] == node_model[p["node"]] == gpu_model(p["model"]), p["pod"]
    for w in body["waste"]:
        assert w["model"] == node_model[w["node"]]


def test_framebuffer_sums_over_several_gpus_say_so(demo: tuple[dict[str, Any], str]) -> None:
    _, html = demo
    row = html.split('data-pod="ml/bert-finetune-0"')[1].split("</tr>")[0]
    assert row.count('data-field="summed">over 4 GPUs</div>') == 2  # used and total
    single = html.split('data-pod="ml/notebook-')[1].split("</tr>")[0]
    assert "over " not in single


def test_a_gpu_page_without_gpu_data_says_where_it_comes_from() -> None:
    data = StaticConsoleData(info=Meta("prometheus (prom:9090)", NOW, NOW, NOW))
    with TestClient(create_console_app(data)) as c:
        html = c.get("/gpu").text
    hint = html.split('id="no-gpu-data">')[1].split("</div>")[0]
    assert "DCGM_FI_DEV_FB_USED" in hint and "DCGM_FI_PROF_GR_ENGINE_ACTIVE" in hint
    assert "PODSIZER_PROMETHEUS_URL" in hint and "dcgm-exporter" in hint
    assert 'id="gpu-pods-none"' in html
    with TestClient(create_console_app(DemoConsoleData.build(NOW))) as c:
        assert 'id="no-gpu-data"' not in c.get("/gpu").text


def test_the_not_workloads_note_points_unattached_gpus_to_the_card_that_counts_them() -> None:
    with TestClient(create_console_app(DemoConsoleData.build(NOW))) as c:
        body = c.get("/api/overview").json()
        html = c.get("/").text
    assert any(s["reason"] == "GPU not attached to a pod" for s in body["skipped"])
    note = html.split('id="skipped-note">')[1].split("</p>")[0]
    assert "every aggregate" not in note and '"Unallocated GPUs" card' in note
    assert '<div class="label">Unallocated GPUs</div>' in html
