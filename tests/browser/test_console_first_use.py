"""In a real Chromium: on the demo with one storefront pod's CPU request edited, the overview and the
workload page say the pods differ next to the "now" value they show; on the demo, a CronJob between runs
saves what its runs save (the mean pods running), not $0/mo."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from console.app import create_console_app
from console.build import build_console_data
from podsizer.sizing_policy import SizingPolicy
from recommender.model.aggregate import aggregate
from recommender.sizing.cost import PriceTable
from recommender.sizing.engine import recommend
from tests.browser.conftest import serving
from tests.browser.test_console_pages import assert_shows, cell, screenshot
from tests.support.request_mix import demo_with_differing_pods

HINT = "pods differ: 2 request cpu 2000m, 1 requests cpu 1000m; now: the newest pod's"


def test_pages_say_when_a_workloads_pods_request_different_amounts(
    browser: WebDriver, artifacts: Path
) -> None:
    now = datetime.now(UTC)
    raw = demo_with_differing_pods(now)
    snapshot = aggregate(raw, source="demo, one pod edited")
    run = recommend(snapshot, SizingPolicy(), PriceTable.load(None), now)
    with serving(create_console_app(build_console_data(raw, snapshot, run, now))) as url:
        browser.get(url + "/?q=storefront")
        row = browser.find_element(
            By.CSS_SELECTOR, '#workloads tr[data-workload="shop/Deployment/storefront"]'
        )
        shown = cell(row, "pods_differ")
        others = browser.find_elements(By.CSS_SELECTOR, '#workloads [data-field="pods_differ"]')
        screenshot(browser, artifacts / "overview-pods-differ.png")
        browser.get(url + "/")
        everywhere = len(browser.find_elements(By.CSS_SELECTOR, '#workloads [data-field="pods_differ"]'))
        browser.get(url + "/workloads/shop/Deployment/storefront")
        page = browser.find_element(By.CSS_SELECTOR, '#containers tr[data-container="web"]')
        on_page = cell(page, "pods_differ")
        screenshot(browser, artifacts / "workload-pods-differ.png")
    assert shown == HINT and len(others) == 1
    assert everywhere == 1, "only the workload whose pods differ gets the hint"
    assert on_page == HINT


def test_a_cronjob_between_runs_shows_the_savings_of_its_runs(
    browser: WebDriver, base_url: str, api: httpx.Client, artifacts: Path
) -> None:
    w = next(
        x for x in api.get("/api/overview").json()["workloads"] if x["workload"]["name"] == "nightly-report"
    )
    browser.get(base_url + "/?kind=CronJob")
    row = browser.find_element(
        By.CSS_SELECTOR, '#workloads tr[data-workload="analytics/CronJob/nightly-report"]'
    )
    monthly, counted = cell(row, "monthly_savings"), cell(row, "replicas_counted")
    assert_shows(cell(row, "hourly_savings"), w["hourly_savings"], "CronJob $/h")
    screenshot(browser, artifacts / "overview-cronjob.png")
    browser.find_element(By.CSS_SELECTOR, "#workloads a.workload-link").click()
    page = browser.find_element(By.CSS_SELECTOR, '#facts [data-field="replicas_counted"]').text
    assert w["replicas"] == 0 and 0 < w["replicas_counted"] < 1 and w["monthly_savings"] > 0.1
    assert monthly == f"${w['monthly_savings']:.2f}/mo" != "$0/mo"
    assert counted == page == f"{w['replicas_counted']:.2f}"
