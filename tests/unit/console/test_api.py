"""The console's JSON API and pages over hand-built data: numbers, 404s, OpenAPI, no external URLs."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from console.app import create_console_app
from tests.unit.console.sample import GIB, MIB, sample_data


@pytest.fixture()
def client() -> Iterator[TestClient]:
    with TestClient(create_console_app(sample_data())) as c:
        yield c


def _workload(body: dict, kind: str, name: str) -> dict:
    return next(
        w for w in body["workloads"] if w["workload"]["kind"] == kind and w["workload"]["name"] == name
    )


def test_overview_savings_are_current_minus_planned_times_pods(client: TestClient) -> None:
    body = client.get("/api/overview").json()
    web = _workload(body, "Deployment", "web")
    assert web["cpu_cores_saved"] == pytest.approx((1.0 - 0.25) * 2)
    assert web["memory_bytes_saved"] == pytest.approx((2 * GIB - 512 * MIB) * 2)
    assert web["mode"] == "auto"
    assert web["sizing_mode"] == "static"
    billing = _workload(body, "DeploymentConfig", "billing")
    assert billing["cpu_cores_saved"] == pytest.approx(-0.25)  # needs more
    assert billing["workload"]["api_version"] == "apps.openshift.io/v1"
    assert billing["confidence"] == pytest.approx(0.4)
    assert body["totals"]["workloads"] == 4
    assert body["totals"]["cpu_cores_saved"] == pytest.approx(1.5 - 0.25 + 2.0 + 1.5)


def test_gpu_savings_are_idle_waste_or_the_cost_share_of_gpus_not_needed(client: TestClient) -> None:
    body = client.get("/api/overview").json()
    train = _workload(body, "StatefulSet", "train")
    assert train["gpus_saved"] == pytest.approx(2.0)
    assert train["gpu_hourly_savings"] == pytest.approx(10.0 * 2 / 4)
    notebook = _workload(body, "Deployment", "notebook")
    assert notebook["gpu_hourly_savings"] == pytest.approx(1.861)
    assert body["totals"]["gpu_hourly_savings"] == pytest.approx(5.0 + 1.861)
    assert body["totals"]["gpu_wasted_hourly_cost"] == pytest.approx(1.861)


def test_deployer_pods_are_listed_as_skipped_and_never_as_workloads(client: TestClient) -> None:
    body = client.get("/api/overview").json()
    pods = [p for w in body["workloads"] for p in w["pods"]]
    assert "billing-7-deploy" not in pods
    assert {
        "subject": "legacy/pod/billing-7-deploy",
        "reason": "OpenShift deployer or hook pod",
        "failed": False,
        "about": {"namespace": "legacy", "kind": "pod", "name": "billing-7-deploy"},
    } in body["skipped"]


def test_gpu_routes_return_inventory_usage_waste_and_costs(client: TestClient) -> None:
    nodes = client.get("/api/gpu/nodes").json()
    a = next(n for n in nodes if n["name"] == "gpu-a")
    assert a["mig_layout"] == "GPU 0: 3g.40gb, 4g.40gb"
    assert a["allocated_mig"] == {"3g.40gb": 1}
    pods = client.get("/api/gpu/pods").json()
    nb = next(p for p in pods if p["pod"] == "notebook-q8r9s")
    assert nb["idle"] is True and nb["dram_active_p95"] is None
    waste = client.get("/api/gpu/waste").json()
    assert [w["pod"] for w in waste] == ["notebook-q8r9s"]
    assert waste[0]["idle_since"].startswith("2026-12-01T06:00:00")
    costs = client.get("/api/costs").json()
    assert costs["cluster"] == {"subject": "cluster", "hourly": 11.861, "wasted_hourly": 1.861}
    combined = client.get("/api/gpu").json()
    assert combined["nodes"] == nodes and combined["waste"] == waste and combined["costs"] == costs


def test_pod_series_are_downsampled_to_bucket_peaks_with_gaps_as_null(client: TestClient) -> None:
    body = client.get("/api/pods/ml/train-0", params={"points": 100}).json()
    activity = next(c for c in body["charts"] if c["key"] == "gpu-activity")
    gpu0 = activity["lines"][0]
    assert len(gpu0["timestamps"]) == len(gpu0["values"]) == 100
    assert None in gpu0["values"]  # the 100-sample gap covers whole buckets
    assert max(v for v in gpu0["values"] if v is not None) == pytest.approx(0.6)
    cpu = next(c for c in client.get("/api/pods/shop/web-abc12").json()["charts"] if c["key"] == "cpu")
    assert max(cpu["lines"][0]["values"]) == pytest.approx(0.25, abs=1e-3)
    assert {r["label"] for r in cpu["references"]} == {"web request", "web recommended"}


def test_unknown_pod_is_404_with_a_message_naming_it(client: TestClient) -> None:
    r = client.get("/api/pods/shop/nope")
    assert r.status_code == 404
    assert "pod shop/nope is not a pod of any workload" in r.json()["detail"]
    r = client.get("/api/pods/legacy/billing-7-deploy")
    assert r.status_code == 404
    assert "OpenShift deployer or hook pod" in r.json()["detail"]
    page = client.get("/pods/shop/nope")
    assert page.status_code == 404 and "pod shop/nope is not a pod" in page.text


def test_points_out_of_range_is_422(client: TestClient) -> None:
    assert client.get("/api/pods/ml/train-0", params={"points": 0}).status_code == 422
    assert client.get("/api/pods/ml/train-0", params={"points": 100000}).status_code == 422


def test_openapi_documents_every_api_route(client: TestClient) -> None:
    app = client.app
    api_paths = {r.path for r in app.routes if isinstance(r, APIRoute) and r.path.startswith("/api/")}  # type: ignore[attr-defined]
    assert len(api_paths) == 10
    schema = client.get("/openapi.json").json()
    assert set(schema["paths"]) == api_paths
    for path in api_paths:
        ok = schema["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        assert ok, path


def test_pages_render_the_api_numbers(client: TestClient) -> None:
    html = client.get("/").text
    assert '<td data-field="cpu_saved" class="num">1.50</td>' in html
    assert '<div class="value" data-total="gpu_hourly_savings">$6.861/h</div>' in html
    assert "billing-7-deploy" in html.split('id="skipped"')[1]  # only in the skipped table
    assert "billing-7-deploy" not in html.split('id="skipped"')[0]
    gpu = client.get("/gpu").text
    assert "GPU 0: 3g.40gb, 4g.40gb" in gpu
    assert '<td data-field="wasted_hourly_cost" class="num waste">$1.861/h</td>' in gpu
    pod = client.get("/pods/ml/train-0").text
    assert pod.count('<svg class="chart"') == 2


URL = re.compile(r"""(?:https?:)?//[a-z0-9.-]+""", re.IGNORECASE)


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/gpu",
        "/pods/ml/train-0",
        "/pods/shop/web-abc12",
        "/pods/x/y",
        "/workloads/shop/Deployment/web",
        "/x",
    ],
)
def test_served_html_has_no_external_urls(client: TestClient, path: str) -> None:
    html = client.get(path).text
    assert URL.findall(html) == []
    css = client.get("/static/console.css")
    assert css.status_code == 200 and URL.findall(css.text) == []


def test_docs_are_a_local_page_listing_every_api_path(client: TestClient) -> None:
    html = client.get("/docs").text
    schema = client.get("/openapi.json").json()
    assert all(f"GET {path}</code>" in html for path in schema["paths"])
    assert "<code>per_page</code>" in html and "<code>monthly_savings</code>" in html
    assert URL.findall(html) == [] and "swagger" not in html.lower()
