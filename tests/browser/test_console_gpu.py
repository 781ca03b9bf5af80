"""The GPU page in a real Chromium: GPUs recommended per workload and pod with what the GPU opt-in would
save, one spelling per GPU model, framebuffer sums named, and, on a cluster without dcgm-exporter, a page
that says how to get GPU data."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from console.app import create_console_app
from console.build import build_console_data
from podsizer.sizing_policy import SizingPolicy
from recommender.input.demo_cluster import build_demo_dataset
from recommender.model.aggregate import aggregate
from recommender.sizing.cost import PriceTable
from recommender.sizing.engine import recommend
from tests.browser.conftest import serving
from tests.browser.test_console_pages import assert_shows, cell, screenshot


def test_gpu_page_shows_recommended_gpus_and_what_opting_in_would_save(
    browser: WebDriver, base_url: str, api: httpx.Client, artifacts: Path
) -> None:
    body = api.get("/api/gpu").json()
    browser.get(base_url + "/gpu")
    assert body["workloads"] and body["dcgm"]
    for w in body["workloads"]:
        ref = w["workload"]
        key = f"{ref['namespace']}/{ref['kind']}/{ref['name']}"
        row = browser.find_element(By.CSS_SELECTOR, f'#gpu-workloads tr[data-workload="{key}"]')
        assert cell(row, "gpus_per_pod") == f"{w['gpus_per_pod']:g}", key
        assert cell(row, "recommended_per_pod") == f"{w['recommended_per_pod']:g}", key
        assert cell(row, "suggested_mig") == (w["suggested_mig"] or "—"), key
        assert_shows(cell(row, "gpu_hourly_savings"), w["gpu_hourly_savings"], key + " GPU savings")
        if w["gpu_opt_in_hourly_savings"] > 0.0005:
            assert "opting in (podsizer.io/gpu: resize) would save" in cell(row, "opt_in")
            assert_shows(
                cell(row, "gpu_opt_in_hourly_savings"), w["gpu_opt_in_hourly_savings"], key + " opt-in"
            )
    assert any(w["gpu_opt_in_hourly_savings"] > 1 for w in body["workloads"]), "the demo's bert-finetune"
    nodes = {
        r.get_attribute("data-node"): cell(r, "model")
        for r in browser.find_elements(By.CSS_SELECTOR, "#gpu-nodes tbody tr")
    }
    for p in body["pods"]:
        row = browser.find_element(
            By.CSS_SELECTOR,
            f'#gpu-pods tr[data-pod="{p["namespace"]}/{p["pod"]}"][data-container="{p["container"]}"]',
        )
        assert cell(row, "model") == nodes[p["node"]], f"{p['pod']}: one spelling on the pod and its node"
        assert cell(row, "recommended_gpus") == f"{p['recommended_gpus']:g}"
        sums = [e.text for e in row.find_elements(By.CSS_SELECTOR, '[data-field="summed"]')]
        assert sums == ([f"over {p['gpu_count']} GPUs"] * 2 if p["gpu_count"] > 1 else []), p["pod"]
    screenshot(browser, artifacts / "gpu-recommendations.png")


def test_gpu_page_without_dcgm_exporter_says_how_to_get_gpu_data(browser: WebDriver, artifacts: Path) -> None:
    now = datetime.now(UTC)
    raw = dataclasses.replace(build_demo_dataset(now), gpus=())  # GPU nodes, no dcgm-exporter series
    snapshot = aggregate(raw, source="demo without dcgm-exporter")
    prices = PriceTable.load(None)
    run = recommend(snapshot, SizingPolicy(), prices, now)
    with serving(create_console_app(build_console_data(raw, snapshot, run, now, prices=prices))) as url:
        browser.get(url + "/gpu")
        hint = browser.find_element(By.ID, "no-gpu-data").text
        assert browser.find_elements(By.CSS_SELECTOR, "#gpu-nodes tbody tr"), "the inventory from node labels"
        empty = browser.find_element(By.ID, "gpu-pods-none").text
        screenshot(browser, artifacts / "gpu-no-dcgm.png")
    assert "No GPU use data in this window" in hint and "dcgm-exporter" in hint
    assert "DCGM_FI_DEV_FB_USED" in hint and "PODSIZER_PROMETHEUS_URL" in hint
    assert empty == "No pod with GPU series in this window."
