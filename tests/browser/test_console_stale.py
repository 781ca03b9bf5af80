"""The console on data that ends 40 minutes before its window's end, in headless Chromium: the header says
the data is stale, and the replicas (so the savings) are those of the newest data, not 0."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
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
from tests.browser.test_console_pages import cell, screenshot

STOREFRONT = "shop/Deployment/storefront"


@pytest.fixture(scope="module")
def stale_console() -> Iterator[str]:
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    raw = dataclasses.replace(build_demo_dataset(now), end=now + timedelta(minutes=35))
    snapshot = aggregate(raw, source="demo")
    table = PriceTable.load(None)
    run = recommend(snapshot, SizingPolicy(), table, raw.end)
    with serving(create_console_app(build_console_data(raw, snapshot, run, raw.end, prices=table))) as url:
        yield url


def test_stale_data_is_stated_in_the_header_and_replicas_come_from_the_newest_data(
    browser: WebDriver, stale_console: str, artifacts: Path
) -> None:
    meta = httpx.get(stale_console + "/api/meta", timeout=30).json()
    body = httpx.get(stale_console + "/api/overview", params={"q": "storefront"}, timeout=30).json()
    (storefront,) = [w for w in body["workloads"] if w["workload"]["name"] == "storefront"]
    assert storefront["replicas"] > 0
    browser.get(stale_console + "/?q=storefront")
    stale = browser.find_element(By.ID, "stale")
    assert "min before the window's end" in stale.text and stale.text == meta["stale"]
    row = browser.find_element(By.CSS_SELECTOR, f'#workloads tr[data-workload="{STOREFRONT}"]')
    assert cell(row, "replicas") == str(storefront["replicas"])
    screenshot(browser, artifacts / "overview-stale-data.png")
