"""`podsizer console` with store=crd against the e2e suite's REAL kube-apiserver and a REAL Prometheus with
backfilled history, in headless Chromium: Recommendations (written by the recommender's CRD store, for
workloads created in the apiserver) are sorted, filtered (cluster included), shown on the workload page with
the numbers of the JSON API and of the pod plan, and a Recommendation changed in the apiserver appears
without restarting the console (its watch), while the refresh interval is an hour."""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select, WebDriverWait

from console.sources import build_inputs
from podsizer.api import (
    API_GROUP,
    API_VERSION,
    PLURAL,
    Recommendation,
    WorkloadRef,
    recommendation_to_resource,
)
from podsizer.api.quantity import parse
from podsizer.api.resource import ContainerRecommendation
from podsizer.modes import Meta
from podsizer.plan_view import plan_workload
from podsizer.podspec import CurrentResources
from podsizer.settings import ConsoleSettings, load
from recommender.sizing.engine import recommend
from tests.browser.conftest import BackfilledPrometheus
from tests.browser.test_console_pages import assert_shows, assert_workload_facts, cell, screenshot
from tests.controlplane.binaries import ROOT
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import ensure_namespace
from tests.controlplane.recommendations import put_recommendation
from tests.controlplane.workloads import workload

CLUSTER_OF = {f"job0{i}": "east" for i in range(3)} | {f"job0{i}": "west" for i in range(3, 5)}
"""Batch jobs whose Recommendations name a cluster (the others name none): the cluster filter's rows."""
WEB = WorkloadRef("shop", "Deployment", "web")
KINDS = ("Deployment", "StatefulSet")
POLICY = load(ConsoleSettings, env={}).plan_policy()


@dataclass(frozen=True)
class CrdConsole:
    url: str
    recs: tuple[Recommendation, ...]
    admin: client.ApiClient
    log: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _until(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds:.0f} s: {what}")
        time.sleep(0.2)


def _recommendations(prom: BackfilledPrometheus, store_file: Path) -> list[Recommendation]:
    """What the recommender computes from this Prometheus for its Deployments and StatefulSets (batch jobs of
    CLUSTER_OF in their clusters)."""
    env = {
        "PODSIZER_CONSOLE_SOURCE": "prometheus",
        "PODSIZER_PROMETHEUS_URL": prom.url,
        "PODSIZER_STORE_FILE": str(store_file),
    }
    inputs = build_inputs(load(ConsoleSettings, env=env))
    end = prom.history.end
    _, snapshot = inputs.dataset(end - inputs.window, end)
    recs = recommend(snapshot, inputs.sizing, inputs.prices, end).recommendations
    chosen = [r for r in recs if r.target.kind in KINDS and r.containers]
    return [
        dataclasses.replace(r, target=r.target.in_cluster(CLUSTER_OF.get(r.target.name, ""))) for r in chosen
    ]


def _create_workloads(admin: client.ApiClient, recs: list[Recommendation]) -> None:
    apps = client.AppsV1Api(admin)
    for ns in sorted({r.namespace for r in recs}):
        ensure_namespace(admin, ns)
    for r in recs:
        resources = {"requests": {"cpu": "100m", "memory": "64Mi"}}
        body = workload("apps/v1", r.target.kind, r.target.name, 0, resources)
        if r.target.kind == "StatefulSet":
            body["spec"]["serviceName"] = r.target.name
            apps.create_namespaced_stateful_set(r.namespace, body)
        else:
            apps.create_namespaced_deployment(r.namespace, body)


def _ignore_404(call: Callable[[], object]) -> None:
    try:
        call()
    except client.ApiException as exc:
        if exc.status != 404:
            raise


def _clear_store(admin: client.ApiClient) -> None:
    """Delete every Recommendation an earlier suite left on the session's apiserver."""
    custom = client.CustomObjectsApi(admin)
    for item in custom.list_cluster_custom_object(API_GROUP, API_VERSION, PLURAL)["items"]:
        meta = item["metadata"]
        _ignore_404(
            partial(
                custom.delete_namespaced_custom_object,
                API_GROUP,
                API_VERSION,
                meta["namespace"],
                PLURAL,
                meta["name"],
            )
        )


def _delete(admin: client.ApiClient, recs: tuple[Recommendation, ...]) -> None:
    """Leave the shared apiserver as found: the e2e suite writes its own Recommendations in shop and ml."""
    apps, custom = client.AppsV1Api(admin), client.CustomObjectsApi(admin)
    for r in recs:
        _ignore_404(
            partial(
                custom.delete_namespaced_custom_object, API_GROUP, API_VERSION, r.namespace, PLURAL, r.name
            )
        )
        kind = r.target.kind
        delete = (
            apps.delete_namespaced_stateful_set
            if kind == "StatefulSet"
            else apps.delete_namespaced_deployment
        )
        _ignore_404(partial(delete, r.target.name, r.namespace))


@pytest.fixture(scope="module")
def crd_console(
    backfilled_prometheus: BackfilledPrometheus,
    control_plane: ControlPlane,
    admin_client: client.ApiClient,
    podsizer_crds: list[dict[str, Any]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[CrdConsole]:
    """`podsizer console` (a process, store=crd, refreshing only hourly) over the apiserver's Recommendations
    and the Prometheus they were computed from."""
    prom = backfilled_prometheus
    work = tmp_path_factory.mktemp("crd-console")
    recs = _recommendations(prom, work / "absent.json")
    assert {r.target.cluster for r in recs} == {"", "east", "west"} and WEB in {r.target for r in recs}
    _clear_store(admin_client)  # the console shows every Recommendation: only this module's are there
    _create_workloads(admin_client, recs)
    for rec in recs:
        put_recommendation(admin_client, rec)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODSIZER_")}
    env |= {
        "PODSIZER_CONSOLE_SOURCE": "prometheus",
        "PODSIZER_PROMETHEUS_URL": prom.url,
        "PODSIZER_STORE": "crd",
        "PODSIZER_KUBECONFIG": str(control_plane.kubeconfig_path),
        "PODSIZER_CONSOLE_PORT": str(port),
        "PODSIZER_CONSOLE_REFRESH_SECONDS": "3600",
    }
    log = work / "console.log"
    podsizer = Path(sys.executable).with_name("podsizer")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(podsizer), "console"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _until(lambda: proc.poll() is None and _healthy(url), 120, f"podsizer console up (log: {log})")
        yield CrdConsole(url, tuple(recs), admin_client, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        _delete(admin_client, tuple(recs))


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url + "/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _api(c: CrdConsole, path: str, **params: object) -> Any:
    response = httpx.get(c.url + path, params=params, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def _key(w: dict[str, Any]) -> str:
    ref = w["workload"]
    return f"{ref['namespace']}/{ref['kind']}/{ref['name']}"


def _rows(browser: WebDriver) -> list[tuple[str, str]]:
    """(workload, cluster) of each workload's first row on the overview, in page order."""
    seen: list[tuple[str, str]] = []
    for tr in browser.find_elements(By.CSS_SELECTOR, "#workloads tbody tr"):
        key = (str(tr.get_attribute("data-workload")), str(tr.get_attribute("data-cluster")))
        if not seen or seen[-1] != key:
            seen.append(key)
    return seen


def _planned(rec: Recommendation, c: dict[str, Any]) -> dict[str, float]:
    """What the pod plan writes into one container's requests, given what the API says it has today (the
    console's policy: the settings' defaults, as the console process runs with)."""
    current = CurrentResources.of(c["name"], c["current_requests"], c["current_limits"])
    plan = plan_workload(rec, [current], POLICY, Meta({}, {}))
    cp = plan.container(c["name"])
    assert cp is not None
    after = {r: cp.after("requests", r) for r in ("cpu", "memory")}
    return {r: parse(v) for r, v in after.items() if v is not None}


def _plan_changes(rec: Recommendation, w: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """The pod plan's changes for the workload's pod, as the workload page's table lists them."""
    current = [
        CurrentResources.of(c["name"], c["current_requests"], c["current_limits"]) for c in w["containers"]
    ]
    plan = plan_workload(rec, current, POLICY, Meta({}, {}))
    return [(ch.container, ch.field, ch.resource, ch.new or "(removed)") for ch in plan.plan.changes]


def test_the_header_names_the_watched_crd_store_the_prometheus_and_the_clusters(
    browser: WebDriver, crd_console: CrdConsole, backfilled_prometheus: BackfilledPrometheus, artifacts: Path
) -> None:
    meta = _api(crd_console, "/api/meta")
    assert meta["store"] == "crd Recommendation resources (watched)"
    assert meta["origin"] == f"{len(crd_console.recs)} from the store"
    assert meta["clusters"] == ["east", "west"]
    browser.get(crd_console.url + "/")
    header = browser.find_element(By.CSS_SELECTOR, "header .meta").text
    assert f"source prometheus ({backfilled_prometheus.host})" in header
    assert "store crd Recommendation resources (watched)" in header
    assert browser.find_element(By.ID, "clusters").text == "clusters east, west"
    screenshot(browser, artifacts / "crd-overview.png")


def test_sorting_by_clicking_cpu_saved_orders_rows_as_the_api_does(
    browser: WebDriver, crd_console: CrdConsole, artifacts: Path
) -> None:
    browser.get(crd_console.url + "/?per_page=500")
    browser.find_element(By.CSS_SELECTOR, 'a.sort[data-sort="cpu_saved"]').click()
    WebDriverWait(browser, 10).until(lambda d: "sort=cpu_saved" in d.current_url)
    body = _api(crd_console, "/api/overview", sort="cpu_saved", order="desc", per_page=500)
    expected = [(_key(w), w["workload"]["cluster"]) for w in body["workloads"]]
    assert _rows(browser) == expected and len(expected) == len(crd_console.recs)
    saved = [w["cpu_cores_saved"] or 0.0 for w in body["workloads"]]
    assert saved == sorted(saved, reverse=True) and saved[0] > saved[-1]
    screenshot(browser, artifacts / "crd-sorted-cpu-saved.png")


def test_filtering_by_cluster_and_namespace_in_the_form_shows_only_matching_workloads(
    browser: WebDriver, crd_console: CrdConsole, artifacts: Path
) -> None:
    browser.get(crd_console.url + "/?per_page=500")
    assert browser.find_elements(By.CSS_SELECTOR, 'th a.sort[data-sort="cluster"]')
    Select(browser.find_element(By.CSS_SELECTOR, 'select[name="cluster"]')).select_by_value("east")
    browser.find_element(By.ID, "apply").click()
    WebDriverWait(browser, 10).until(lambda d: "cluster=east" in d.current_url)
    east = sorted((f"batch/Deployment/{n}", "east") for n, c in CLUSTER_OF.items() if c == "east")
    assert sorted(_rows(browser)) == east
    cells = browser.find_elements(By.CSS_SELECTOR, '#workloads td[data-field="cluster"]')
    assert {c.text for c in cells} == {"east"} and len(cells) == len(east)
    assert _api(crd_console, "/api/overview", cluster="east")["page"]["matching"] == len(east)
    screenshot(browser, artifacts / "crd-filter-cluster-east.png")

    Select(browser.find_element(By.CSS_SELECTOR, 'select[name="cluster"]')).select_by_value("")
    Select(browser.find_element(By.CSS_SELECTOR, 'select[name="namespace"]')).select_by_value("shop")
    browser.find_element(By.ID, "apply").click()
    WebDriverWait(browser, 10).until(lambda d: "namespace=shop" in d.current_url)
    shop = sorted(
        (str(r.target).replace(":", ""), r.target.cluster) for r in crd_console.recs if r.namespace == "shop"
    )
    assert sorted(_rows(browser)) == shop and ("shop/Deployment/web", "") in shop
    text = browser.find_element(By.ID, "matching").text
    assert text == f"{len(shop)} of {len(crd_console.recs)} workloads"


def test_every_overview_number_equals_the_api_and_the_pod_plan(
    browser: WebDriver, crd_console: CrdConsole, artifacts: Path
) -> None:
    body = _api(crd_console, "/api/overview", per_page=500)
    browser.get(crd_console.url + "/?per_page=500")
    by_target = {r.target: r for r in crd_console.recs}
    planned = 0
    for w in body["workloads"]:
        ref = w["workload"]
        target = WorkloadRef(ref["namespace"], ref["kind"], ref["name"], ref["cluster"])
        rec = by_target[target]
        sel = f'#workloads tr[data-workload="{_key(w)}"][data-cluster="{ref["cluster"]}"]'
        first = browser.find_element(By.CSS_SELECTOR, sel)
        assert cell(first, "replicas") == str(w["replicas"])
        for c in w["containers"]:
            row = browser.find_element(By.CSS_SELECTOR, f'{sel}[data-container="{c["name"]}"]')
            what = f"{target}/{c['name']}"
            assert_shows(cell(row, "cpu_planned"), c["planned_requests"].get("cpu"), what + " cpu new")
            assert_shows(cell(row, "memory_planned"), c["planned_requests"].get("memory"), what + " mem new")
            assert_shows(cell(row, "confidence"), c["confidence"], what + " confidence")
            assert_shows(cell(row, "cpu_saved"), c["cpu_cores_saved"], what + " cpu saved")
            if not c["current_requests"] or w["mode_source"] != "default":
                continue  # no pod seen (another cluster's workload), or a mode set on the pod
            plan = _planned(rec, c)
            api_cpu_memory = {
                r: v for r, v in c["planned_requests"].items() if r in plan or r in ("cpu", "memory")
            }
            assert plan == pytest.approx(api_cpu_memory), what + " API = pod plan"
            assert_shows(cell(row, "cpu_planned"), plan.get("cpu"), what + " cpu: page = pod plan")
            assert_shows(cell(row, "memory_planned"), plan.get("memory"), what + " memory: page = pod plan")
            planned += 1
    assert planned >= 5


def test_the_workload_page_shows_the_api_numbers_and_the_pod_plans_changes(
    browser: WebDriver, crd_console: CrdConsole, artifacts: Path
) -> None:
    browser.get(crd_console.url + "/?q=web&namespace=shop")
    browser.find_element(By.CSS_SELECTOR, "#workloads a.workload-link").click()
    WebDriverWait(browser, 10).until(lambda d: "/workloads/shop/Deployment/web" in d.current_url)
    body = _api(crd_console, "/api/workloads/shop/Deployment/web")
    w = body["workload"]
    rec = next(r for r in crd_console.recs if r.target == WEB)
    assert w["reason"] == rec.reason
    rows = assert_workload_facts(browser, w)
    for c, row in zip(w["containers"], rows, strict=True):
        assert_shows(cell(row, "memory_limit_planned"), c["planned_limits"].get("memory"), "limit new")
    plan_changes = _plan_changes(rec, w)
    shown = [
        tuple(cell(tr, f) for f in ("container", "field", "resource", "to"))
        for tr in browser.find_elements(By.CSS_SELECTOR, "#changes tbody tr")
    ]
    assert shown == plan_changes and shown
    assert len(browser.find_elements(By.CSS_SELECTOR, "#pods a.pod-link")) == len(body["pods"]) > 0
    assert {c.get_attribute("id") for c in browser.find_elements(By.CSS_SELECTOR, ".chart-box")} >= {
        "chart-cpu",
        "chart-memory",
    }
    screenshot(browser, artifacts / "crd-workload-web.png")


def test_a_recommendation_changed_in_the_apiserver_appears_without_a_restart(
    browser: WebDriver, crd_console: CrdConsole, artifacts: Path
) -> None:
    rec = next(r for r in crd_console.recs if r.target == WEB)
    first = rec.containers[0]
    new_cpu = "777m" if first.requests.get("cpu") != "777m" else "555m"
    changed = dataclasses.replace(
        rec,
        containers=(
            ContainerRecommendation(
                first.name, {**first.requests, "cpu": new_cpu}, first.limits, first.confidence, first.reason
            ),
            *rec.containers[1:],
        ),
        generated_at=datetime.now(UTC).replace(microsecond=0),
    )
    generated = _api(crd_console, "/api/meta")["generated_at"]
    client.CustomObjectsApi(crd_console.admin).patch_namespaced_custom_object_status(
        API_GROUP,
        API_VERSION,
        rec.namespace,
        PLURAL,
        rec.name,
        {"status": recommendation_to_resource(changed)["status"]},
        _content_type="application/merge-patch+json",
    )

    def shown_cpu() -> float | None:
        w = _api(crd_console, "/api/workloads/shop/Deployment/web")["workload"]
        c = next(c for c in w["containers"] if c["name"] == first.name)
        value = c["recommended_requests"].get("cpu")
        return float(value) if value is not None else None

    _until(
        lambda: shown_cpu() == pytest.approx(parse(new_cpu)),
        30,
        "the console shows the changed Recommendation",
    )
    assert _api(crd_console, "/api/meta")["generated_at"] == generated  # no refresh: the watch did it
    browser.get(crd_console.url + "/workloads/shop/Deployment/web")
    assert (
        f"cpu={new_cpu}"
        in browser.find_element(By.CSS_SELECTOR, '#containers [data-field="recommended"]').text
    )
    screenshot(browser, artifacts / "crd-workload-web-changed.png")
