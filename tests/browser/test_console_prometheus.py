"""The console serving a REAL Prometheus (seven days of known history backfilled with promtool), in
headless Chromium: the header names the source, and one workload's numbers on the overview equal the API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from console.app import create_console_app
from console.sources import build, build_inputs
from podsizer.settings import ConsoleSettings, load
from tests.browser.conftest import BackfilledPrometheus, serving
from tests.browser.test_console_pages import assert_shows, cell, screenshot

WEB = "shop/Deployment/web"


@pytest.fixture(scope="module")
def prom_console(
    backfilled_prometheus: BackfilledPrometheus, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    """(console URL, Prometheus host:port): the console built from a real Prometheus, served."""
    prom = backfilled_prometheus
    env = {
        "PODSIZER_CONSOLE_SOURCE": "prometheus",
        "PODSIZER_PROMETHEUS_URL": prom.url,
        "PODSIZER_STORE_FILE": str(tmp_path_factory.mktemp("prom-console") / "absent.json"),
    }
    data = build(build_inputs(load(ConsoleSettings, env=env)), prom.history.end)
    with serving(create_console_app(data)) as url:
        yield url, prom.host


def test_overview_on_prometheus_names_the_source_and_shows_a_workloads_api_numbers(
    browser: WebDriver, prom_console: tuple[str, str], artifacts: Path
) -> None:
    url, host = prom_console
    body = httpx.get(url + "/api/overview", params={"q": "web", "namespace": "shop"}, timeout=30).json()
    web = next(w for w in body["workloads"] if w["workload"]["kind"] == "Deployment")
    browser.get(url + "/?namespace=shop&q=web")
    header = browser.find_element(By.CSS_SELECTOR, "header .meta").text
    assert f"source prometheus ({host})" in header
    assert "computed from the source's data" in header
    first = browser.find_element(By.CSS_SELECTOR, f'#workloads tr[data-workload="{WEB}"]')
    assert (
        cell(first, "mode") == web["mode"] and cell(first, "sizing_mode") == web["sizing_mode"] == "autopilot"
    )
    assert cell(first, "replicas") == str(web["replicas"])
    for c in web["containers"]:
        row = browser.find_element(
            By.CSS_SELECTOR, f'#workloads tr[data-workload="{WEB}"][data-container="{c["name"]}"]'
        )
        what = f"{WEB}/{c['name']}"
        assert_shows(cell(row, "cpu_current"), c["current_requests"].get("cpu"), what + " cpu now")
        assert_shows(cell(row, "cpu_planned"), c["planned_requests"].get("cpu"), what + " cpu new")
        assert_shows(cell(row, "memory_current"), c["current_requests"].get("memory"), what + " mem now")
        assert_shows(cell(row, "memory_planned"), c["planned_requests"].get("memory"), what + " mem new")
        assert_shows(cell(row, "confidence"), c["confidence"], what + " confidence")
        assert_shows(cell(row, "cpu_saved"), c["cpu_cores_saved"], what + " cpu saved")
    assert web["containers"]
    screenshot(browser, artifacts / "overview-prometheus.png")
