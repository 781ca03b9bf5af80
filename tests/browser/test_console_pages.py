"""The console in a real browser: the numbers each page shows match the JSON API, sorting and filtering by
clicking, workload and pod links lead to rendered SVG charts, nothing loads from outside the console, and
every page gets a screenshot."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from podsizer.api.quantity import parse

NONE = "—"


def shown(text: str) -> tuple[float, float] | None:
    """(value, tolerance) of a number as the page writes it: "$1.234/h", "-$0.051/h", "12.3%", "250m"."""
    text = text.strip()
    if text == NONE:
        return None
    if m := re.fullmatch(r"(-?)\$(\d+)\.(\d+)/h", text):
        return float(f"{m[1]}{m[2]}.{m[3]}"), 0.5 * 10 ** -len(m[3]) + 1e-9
    if m := re.fullmatch(r"(-?\d+)\.(\d)%", text):
        return float(f"{m[1]}.{m[2]}") / 100, 0.0005 + 1e-9
    m = re.fullmatch(r"(-?\d+)(?:\.(\d+))?(m|Mi|Gi)?", text)
    assert m, f"not a number as the console writes them: {text!r}"
    decimals = len(m[2] or "")
    unit = parse("1" + (m[3] or ""))
    return parse(text), 0.5 * 10**-decimals * unit * (1 + 1e-9)


def assert_shows(text: str, expected: float | None, what: str) -> None:
    got = shown(text)
    if expected is None:
        assert got is None, f"{what}: page shows {text!r}, API has no value"
        return
    assert got is not None, f"{what}: page shows {text!r}, API has {expected}"
    value, tolerance = got
    assert abs(value - expected) <= tolerance, f"{what}: page shows {text!r}, API has {expected}"


def cell(row: Any, field: str) -> str:
    return str(row.find_element(By.CSS_SELECTOR, f'[data-field="{field}"]').text)


def assert_workload_facts(browser: WebDriver, w: dict[str, Any]) -> list[Any]:
    """The workload page shows the API's replicas, reason and $/h, and per container the planned CPU and
    memory requests; returns the container rows (in the API's order) for the caller's further checks."""
    assert browser.find_element(By.CSS_SELECTOR, '#facts [data-field="replicas"]').text == str(w["replicas"])
    assert browser.find_element(By.CSS_SELECTOR, '#facts [data-field="reason"]').text == w["reason"]
    assert_shows(
        browser.find_element(By.CSS_SELECTOR, '#facts [data-field="hourly_savings"]').text,
        w["hourly_savings"],
        "workload $/h",
    )
    rows = []
    for c in w["containers"]:
        row = browser.find_element(By.CSS_SELECTOR, f'#containers tr[data-container="{c["name"]}"]')
        assert_shows(cell(row, "cpu_planned"), c["planned_requests"].get("cpu"), "cpu new")
        assert_shows(cell(row, "memory_planned"), c["planned_requests"].get("memory"), "memory new")
        rows.append(row)
    return rows


def screenshot(driver: WebDriver, path: Path) -> None:
    """A full-page PNG: grow the window to the page, capture, restore."""
    height = int(driver.execute_script("return document.documentElement.scrollHeight"))
    width = int(driver.execute_script("return document.documentElement.scrollWidth"))
    driver.set_window_size(max(1600, width), min(max(1200, height + 120), 8000))
    driver.save_screenshot(str(path))
    driver.set_window_size(1600, 1200)


def assert_same_origin_only(driver: WebDriver, base_url: str) -> None:
    names = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    outside = [n for n in names if not n.startswith(base_url)]
    assert outside == [], f"page fetched from outside the console: {outside}"


def test_overview_shows_the_api_numbers(
    browser: WebDriver, base_url: str, api: httpx.Client, artifacts: Path
) -> None:
    body = api.get("/api/overview").json()
    browser.get(base_url + "/")
    assert browser.title.startswith("Overview")
    totals = body["totals"]
    for key in (
        "cpu_cores_saved",
        "memory_bytes_saved",
        "gpu_hourly_cost",
        "gpu_wasted_hourly_cost",
        "gpu_hourly_savings",
    ):
        text = browser.find_element(By.CSS_SELECTOR, f'[data-total="{key}"]').text
        assert_shows(text, totals[key], f"total {key}")
    assert browser.find_element(By.CSS_SELECTOR, '[data-total="matching"]').text == str(totals["workloads"])

    rows = browser.find_elements(By.CSS_SELECTOR, "#workloads tbody tr")
    assert len(rows) == sum(len(w["containers"]) for w in body["workloads"])
    checked = 0
    for w in body["workloads"]:
        ref = w["workload"]
        key = f"{ref['namespace']}/{ref['kind']}/{ref['name']}"
        first = browser.find_element(By.CSS_SELECTOR, f'#workloads tr[data-workload="{key}"]')
        assert cell(first, "kind") == ref["kind"]
        assert cell(first, "mode") == w["mode"]
        assert cell(first, "sizing_mode") == w["sizing_mode"]
        for c in w["containers"]:
            row = browser.find_element(
                By.CSS_SELECTOR, f'#workloads tr[data-workload="{key}"][data-container="{c["name"]}"]'
            )
            what = f"{key}/{c['name']}"
            assert_shows(cell(row, "cpu_current"), c["current_requests"].get("cpu"), what + " cpu now")
            assert_shows(cell(row, "cpu_planned"), c["planned_requests"].get("cpu"), what + " cpu new")
            assert_shows(cell(row, "memory_current"), c["current_requests"].get("memory"), what + " mem now")
            assert_shows(cell(row, "memory_planned"), c["planned_requests"].get("memory"), what + " mem new")
            assert_shows(
                cell(row, "memory_limit_planned"), c["planned_limits"].get("memory"), what + " limit new"
            )
            assert_shows(
                cell(row, "gpu_planned"), c["planned_requests"].get("nvidia.com/gpu"), what + " gpu new"
            )
            assert_shows(cell(row, "confidence"), c["confidence"], what + " confidence")
            assert_shows(cell(row, "cpu_saved"), c["cpu_cores_saved"], what + " cpu saved")
            assert_shows(cell(row, "memory_saved"), c["memory_bytes_saved"], what + " memory saved")
            checked += 1
        if w["gpu_allocated"]:
            assert_shows(cell(first, "gpu_hourly_cost"), w["gpu_hourly_cost"], key + " gpu cost")
    assert checked >= 10

    kinds = {c.text for c in browser.find_elements(By.CSS_SELECTOR, '#workloads [data-field="kind"]')}
    assert "DeploymentConfig" in kinds
    links = browser.find_elements(By.CSS_SELECTOR, "#workloads a.workload-link")
    assert len(links) == len(body["workloads"]) == totals["workloads"]
    for w in body["workloads"]:
        ref = w["workload"]
        first = browser.find_element(
            By.CSS_SELECTOR, f'#workloads tr[data-workload="{ref["namespace"]}/{ref["kind"]}/{ref["name"]}"]'
        )
        assert cell(first, "replicas") == str(w["replicas"])
        assert_shows(cell(first, "hourly_savings"), w["hourly_savings"], ref["name"] + " $/h")
        assert cell(first, "reason").startswith(w["containers"][0]["reason"][:20])  # shown, not a tooltip
    search = next(w for w in body["workloads"] if w["workload"]["name"] == "search")
    assert search["replicas"] < len(search["pods"]), "savings count current replicas, not every pod seen"
    skipped = browser.find_element(By.ID, "skipped").text
    assert "billing-7-deploy" in skipped and "billing-7-hook-pre" in skipped
    assert_same_origin_only(browser, base_url)
    screenshot(browser, artifacts / "overview.png")  # its layout at 1,024 and 1,400 px: test_console_layout


RED = "rgba(170, 51, 51, 1)"  # console.css: a negative saving
GREEN = "rgba(26, 122, 58, 1)"  # console.css: the savings card


def _color(element: Any) -> str:
    return str(element.value_of_css_property("color"))


def test_a_negative_saving_is_red_with_its_sign_before_the_dollar(
    browser: WebDriver, base_url: str, api: httpx.Client, artifacts: Path
) -> None:
    body = api.get("/api/overview", params={"q": "api"}).json()
    costlier = [w for w in body["workloads"] if w["monthly_savings"] < 0]
    assert len(costlier) == len(body["workloads"]) >= 2, "the demo's api-gateway and checkout-api cost more"
    browser.get(base_url + "/?q=api")
    for w in costlier:
        ref = w["workload"]
        key = f"{ref['namespace']}/{ref['kind']}/{ref['name']}"
        row = browser.find_element(By.CSS_SELECTOR, f'#workloads tr[data-workload="{key}"]')
        monthly = row.find_element(By.CSS_SELECTOR, '[data-field="monthly_savings"]')
        assert monthly.text.startswith("-$") and cell(row, "hourly_savings").startswith("-$"), key
        assert _color(monthly) == RED, f"{key}: {monthly.text} in {_color(monthly)}"
    card = browser.find_element(By.CSS_SELECTOR, '[data-total="monthly_savings"]')
    assert card.text.startswith("-$") and _color(card) == RED, f"card {card.text} in {_color(card)}"
    assert "$-" not in browser.find_element(By.TAG_NAME, "body").text
    screenshot(browser, artifacts / "overview-negative-savings.png")
    ref = costlier[0]["workload"]
    browser.get(base_url + f"/workloads/{ref['namespace']}/{ref['kind']}/{ref['name']}")
    page = browser.find_element(By.CSS_SELECTOR, '#facts [data-field="monthly_savings"]')
    assert page.text.startswith("-$") and _color(page) == RED, f"workload page {page.text} in {_color(page)}"
    browser.get(base_url + "/")
    everything = browser.find_element(By.CSS_SELECTOR, '[data-total="monthly_savings"]')
    assert not everything.text.startswith("-") and _color(everything) == GREEN


def _page_names(browser: WebDriver) -> list[str]:
    return [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#workloads a.workload-link")]


def _api_names(api: httpx.Client, **params: str) -> list[str]:
    return [w["workload"]["name"] for w in api.get("/api/overview", params=params).json()["workloads"]]


def test_sorting_by_clicking_a_column_orders_rows_as_the_api_does(
    browser: WebDriver, base_url: str, api: httpx.Client, artifacts: Path
) -> None:
    browser.get(base_url + "/")
    browser.find_element(By.CSS_SELECTOR, 'th a[data-sort="savings"]').click()
    WebDriverWait(browser, 10).until(lambda d: "sort=savings" in d.current_url)
    assert "order=desc" in browser.current_url  # savings sorts largest first on the first click
    names = _page_names(browser)
    assert names == _api_names(api, sort="savings", order="desc") and len(names) >= 10
    browser.find_element(By.CSS_SELECTOR, 'th a[data-sort="savings"]').click()
    WebDriverWait(browser, 10).until(lambda d: "order=desc" not in d.current_url)
    assert "sort=savings" in browser.current_url
    assert _page_names(browser) == _api_names(api, sort="savings", order="asc")
    screenshot(browser, artifacts / "overview-sorted.png")


def test_filtering_by_namespace_and_search_shows_only_matching_workloads(
    browser: WebDriver, base_url: str, api: httpx.Client, artifacts: Path
) -> None:
    from selenium.webdriver.support.ui import Select

    browser.get(base_url + "/")
    Select(browser.find_element(By.CSS_SELECTOR, '#filters select[name="namespace"]')).select_by_value("ml")
    browser.find_element(By.ID, "apply").click()
    WebDriverWait(browser, 10).until(lambda d: "namespace=ml" in d.current_url)
    names = _page_names(browser)
    assert names == _api_names(api, namespace="ml") and len(names) >= 3
    spaces = {c.text for c in browser.find_elements(By.CSS_SELECTOR, '#workloads [data-field="namespace"]')}
    assert spaces == {"ml"}
    box = browser.find_element(By.CSS_SELECTOR, '#filters input[name="q"]')
    box.send_keys("LLM")
    browser.find_element(By.ID, "apply").click()
    WebDriverWait(browser, 10).until(lambda d: "q=LLM" in d.current_url)
    assert _page_names(browser) == ["llm-pretrain"]
    assert browser.find_element(By.ID, "matching").text.startswith("1 of ")
    screenshot(browser, artifacts / "overview-filtered.png")


def test_workload_page_shows_the_api_numbers_and_every_pod(
    browser: WebDriver, base_url: str, api: httpx.Client, artifacts: Path
) -> None:
    browser.get(base_url + "/?q=search")
    browser.find_element(By.CSS_SELECTOR, "#workloads a.workload-link").click()
    WebDriverWait(browser, 10).until(lambda d: "/workloads/shop/Deployment/search" in d.current_url)
    body = api.get("/api/workloads/shop/Deployment/search").json()
    w = body["workload"]
    rows = assert_workload_facts(browser, w)
    for c, row in zip(w["containers"], rows, strict=True):
        assert cell(row, "reason") == c["reason"]
    changes = browser.find_elements(By.CSS_SELECTOR, "#changes tbody tr")
    assert len(changes) == sum(len(c["changes"]) for c in w["containers"]) > 0
    pods = browser.find_elements(By.CSS_SELECTOR, "#pods a.pod-link")
    assert len(pods) == len(body["pods"]) == len(w["pods"]) > w["replicas"]
    keys = _charts_match_api(browser, api, "/workloads/shop/Deployment/search")
    assert {"cpu", "memory"} <= set(keys)
    forecast = browser.find_element(By.ID, "forecast").text
    assert "the busiest hour's mean: CPU" in forecast and "peak" not in forecast, forecast
    assert "below a p99" in browser.find_element(By.ID, "forecast-note").text
    assert_same_origin_only(browser, base_url)
    screenshot(browser, artifacts / "workload-search.png")


def test_gpu_page_shows_the_api_numbers(
    browser: WebDriver, base_url: str, api: httpx.Client, artifacts: Path
) -> None:
    body = api.get("/api/gpu").json()
    browser.get(base_url + "/gpu")
    for n in body["nodes"]:
        row = browser.find_element(By.CSS_SELECTOR, f'#gpu-nodes tr[data-node="{n["name"]}"]')
        assert cell(row, "model") == n["model"]
        assert cell(row, "gpu_count") == str(n["gpu_count"])
        assert cell(row, "allocated_gpus") == str(n["allocated_gpus"])
        assert cell(row, "mig_layout") == n["mig_layout"]
    # The demo's A100 node has spare GPUs (2 or 3: the GPU training Job runs part of the day).
    assert body["unallocated_gpus"] >= 2
    total = browser.find_element(By.CSS_SELECTOR, '[data-total="unallocated_hourly_cost"]').text
    assert_shows(total, body["unallocated_hourly_cost"], "unallocated GPU cost")
    for el in browser.find_elements(By.CSS_SELECTOR, "td.waste"):
        assert el.text != "$0.000/h", "zero waste is not highlighted"
    assert len(body["pods"]) >= 3
    for p in body["pods"]:
        row = browser.find_element(
            By.CSS_SELECTOR,
            f'#gpu-pods tr[data-pod="{p["namespace"]}/{p["pod"]}"][data-container="{p["container"]}"]',
        )
        what = f"{p['namespace']}/{p['pod']}"
        assert_shows(cell(row, "activity_p95"), p["activity_p95"], what + " activity p95")
        assert_shows(cell(row, "dram_active_p95"), p["dram_active_p95"], what + " dram p95")
        assert_shows(cell(row, "fb_used_max"), p["fb_used_max_mib"] * 2**20, what + " fb used")
        assert_shows(cell(row, "hourly_cost"), p["hourly_cost"], what + " cost")
        assert (cell(row, "idle") == "idle") == p["idle"]
    assert body["waste"], "the demo has an idle GPU"
    for w in body["waste"]:
        row = browser.find_element(By.CSS_SELECTOR, f'#waste tr[data-pod="{w["namespace"]}/{w["pod"]}"]')
        assert_shows(cell(row, "wasted_hourly_cost"), w["wasted_hourly_cost"], w["pod"] + " wasted")
        assert cell(row, "idle_since") == w["idle_since"][:16].replace("T", " ") + " UTC"
    cluster = browser.find_element(By.CSS_SELECTOR, "#cost-cluster tbody tr")
    assert_shows(cell(cluster, "hourly"), body["costs"]["cluster"]["hourly"], "cluster cost")
    assert_shows(cell(cluster, "wasted_hourly"), body["costs"]["cluster"]["wasted_hourly"], "cluster waste")
    for line in body["costs"]["by_namespace"]:
        row = browser.find_element(By.CSS_SELECTOR, f'#cost-namespace tr[data-subject="{line["subject"]}"]')
        assert_shows(cell(row, "hourly"), line["hourly"], line["subject"] + " cost")
    assert_same_origin_only(browser, base_url)
    screenshot(browser, artifacts / "gpu.png")
    browser.set_window_size(1400, 1000)
    browser.get(base_url + "/gpu")
    width = int(browser.execute_script("return document.documentElement.scrollWidth"))
    assert width <= 1400, f"GPU page is {width} px wide at a 1400 px window"
    browser.set_window_size(1600, 1200)


def _charts_match_api(browser: WebDriver, api: httpx.Client, path: str) -> list[str]:
    """Assert each chart on the page plots the API's non-null points; returns the chart keys."""
    detail = api.get("/api" + path).json()
    assert detail["charts"], f"{path}: API has no charts"
    keys = []
    for chart in detail["charts"]:
        svg = browser.find_element(By.CSS_SELECTOR, f'svg.chart[data-chart="{chart["key"]}"]')
        expected = sum(1 for line in chart["lines"] for v in line["values"] if v is not None)
        assert int(svg.get_attribute("data-points") or -1) == expected
        plotted = browser.execute_script(
            "return Array.from(arguments[0].querySelectorAll('polyline.series'))"
            ".reduce((n, p) => n + p.points.numberOfItems, 0)",
            svg,
        )
        assert plotted == expected > 10, f"{path} {chart['key']}: {plotted} points drawn, API has {expected}"
        box = svg.rect
        assert box["width"] > 300 and box["height"] > 100, "chart is laid out and visible"
        keys.append(chart["key"])
    return keys


def test_overview_pod_link_opens_a_drill_down_with_charts(
    browser: WebDriver, base_url: str, api: httpx.Client, artifacts: Path
) -> None:
    browser.get(base_url + "/")
    browser.find_element(
        By.CSS_SELECTOR, '#workloads tr[data-workload^="shop/Deployment/storefront"] a.workload-link'
    ).click()
    WebDriverWait(browser, 10).until(lambda d: "/workloads/shop/" in d.current_url)
    browser.find_element(By.CSS_SELECTOR, "#pods a.pod-link").click()
    WebDriverWait(browser, 10).until(lambda d: "/pods/shop/" in d.current_url)
    path = browser.current_url.removeprefix(base_url)
    keys = _charts_match_api(browser, api, path)
    assert {"cpu", "memory"} <= set(keys)
    refs = browser.find_elements(By.CSS_SELECTOR, 'svg.chart[data-chart="cpu"] line.reference')
    assert len(refs) >= 2, "current request and recommendation drawn on the CPU chart"
    assert_same_origin_only(browser, base_url)
    screenshot(browser, artifacts / "pod-storefront.png")


def test_gpu_waste_link_opens_the_idle_pods_dcgm_charts(
    browser: WebDriver, base_url: str, api: httpx.Client, artifacts: Path
) -> None:
    browser.get(base_url + "/gpu")
    browser.find_element(By.CSS_SELECTOR, "#waste a.pod-link").click()
    WebDriverWait(browser, 10).until(lambda d: "/pods/" in d.current_url)
    path = browser.current_url.removeprefix(base_url)
    keys = _charts_match_api(browser, api, path)
    assert {"cpu", "memory", "gpu-activity", "framebuffer"} <= set(keys)
    screenshot(browser, artifacts / "pod-idle-gpu.png")


@pytest.mark.parametrize("pod", ["llm-pretrain-0", "bert-finetune-0"])
def test_gpu_pods_with_dram_series_chart_dram_activity(
    browser: WebDriver, base_url: str, api: httpx.Client, artifacts: Path, pod: str
) -> None:
    browser.get(base_url + "/gpu")
    browser.find_element(By.CSS_SELECTOR, f'#gpu-pods tr[data-pod="ml/{pod}"] a.pod-link').click()
    WebDriverWait(browser, 10).until(lambda d: d.current_url.endswith(f"/pods/ml/{pod}"))
    keys = _charts_match_api(browser, api, f"/pods/ml/{pod}")
    assert "dram-activity" in keys
    screenshot(browser, artifacts / f"pod-{pod}.png")


def test_unknown_pod_page_says_so(browser: WebDriver, base_url: str, artifacts: Path) -> None:
    browser.get(base_url + "/pods/legacy/billing-7-deploy")
    text = browser.find_element(By.ID, "error").text
    assert "not a pod of any workload" in text and "OpenShift deployer or hook pod" in text
    screenshot(browser, artifacts / "not-found.png")
    browser.get(base_url + "/no/such/page")
    assert browser.title.startswith("Not found")
    assert "/no/such/page" in browser.find_element(By.ID, "error").text
    screenshot(browser, artifacts / "not-found-page.png")
