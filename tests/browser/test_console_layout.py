"""The overview's layout in a real Chromium: it fits a 1,024 px window, rows stay short at 1,400 px with
the reason one click away, the cards sum the filtered workloads, and a 404 page links to close matches."""

from __future__ import annotations

from pathlib import Path

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.browser.test_console_pages import assert_shows, screenshot, shown

ROW_HEIGHT_AT_1400 = 80


def _at_width(browser: WebDriver, width: int, url: str) -> None:
    browser.set_window_size(width, 1000)
    browser.get(url)


def test_overview_fits_a_1024_px_window(browser: WebDriver, base_url: str, artifacts: Path) -> None:
    try:
        _at_width(browser, 1024, base_url + "/")
        client = int(browser.execute_script("return document.documentElement.clientWidth"))
        scroll = int(browser.execute_script("return document.documentElement.scrollWidth"))
        table = browser.find_element(By.ID, "workloads").rect
        right = float(table["x"] + table["width"])
        browser.save_screenshot(str(artifacts / "overview-1024.png"))
    finally:
        browser.set_window_size(1600, 1200)
    assert right <= client, f"the overview table ends at {right} px, the window shows {client} px"
    assert scroll <= client, f"the overview is {scroll} px wide in a {client} px window"


def test_overview_rows_stay_short_at_1400_px_and_the_reason_opens_in_full(
    browser: WebDriver, base_url: str, api: httpx.Client, artifacts: Path
) -> None:
    body = api.get("/api/overview").json()
    try:
        _at_width(browser, 1400, base_url + "/")
        heights = browser.execute_script(
            "return Array.from(document.querySelectorAll('#workloads tbody tr'))"
            ".map(r => r.getBoundingClientRect().height)"
        )
        width = int(browser.execute_script("return document.documentElement.scrollWidth"))
        browser.save_screenshot(str(artifacts / "overview-1400.png"))
        w = next(w for w in body["workloads"] if w["workload"]["name"] == "nightly-report")
        ref = w["workload"]
        row = browser.find_element(
            By.CSS_SELECTOR, f'#workloads tr[data-workload="{ref["namespace"]}/{ref["kind"]}/{ref["name"]}"]'
        )
        closed = row.find_element(By.CSS_SELECTOR, 'td[data-field="reason"]').rect["height"]
        row.find_element(By.CSS_SELECTOR, 'td[data-field="reason"] summary').click()
        reason = row.find_element(By.CSS_SELECTOR, 'td[data-field="reason"]')
        opened = reason.rect["height"]
        text = reason.text
        browser.save_screenshot(str(artifacts / "overview-1400-reason-open.png"))
    finally:
        browser.set_window_size(1600, 1200)
    assert width <= 1400, f"overview is {width} px wide at a 1400 px window"
    assert len(heights) == sum(len(w["containers"]) for w in body["workloads"]) > 10
    assert max(heights) <= ROW_HEIGHT_AT_1400, f"rows {sorted(heights)[-3:]} px tall at 1400 px"
    assert w["reason"] and w["reason"] in text and w["containers"][0]["reason"] in text
    assert opened > closed, "opening the reason shows all of it"


def test_the_cards_sum_the_filtered_workloads(
    browser: WebDriver, base_url: str, api: httpx.Client, artifacts: Path
) -> None:
    browser.get(base_url + "/")
    everything = browser.find_element(By.CSS_SELECTOR, '[data-total="hourly_savings"]').text
    Select(browser.find_element(By.CSS_SELECTOR, '#filters select[name="namespace"]')).select_by_value("ml")
    browser.find_element(By.ID, "apply").click()
    WebDriverWait(browser, 10).until(lambda d: "namespace=ml" in d.current_url)
    body = api.get("/api/overview", params={"namespace": "ml"}).json()
    firsts = browser.find_elements(By.CSS_SELECTOR, '#workloads tbody tr [data-field="hourly_savings"]')
    assert len(firsts) == body["page"]["matching"] == len(body["workloads"]) >= 3  # one page holds them
    shown_sum = sum(v for v, _ in (shown(f.text) or (0.0, 0.0) for f in firsts))
    card = browser.find_element(By.CSS_SELECTOR, '[data-total="hourly_savings"]').text
    assert_shows(card, sum(w["hourly_savings"] for w in body["workloads"]), "card $/h over the filtered rows")
    value, tolerance = shown(card) or (0.0, 0.0)
    assert abs(value - shown_sum) <= tolerance * (len(firsts) + 1), f"card {card}, rows sum to {shown_sum}"
    gpu = sum(w["gpu_hourly_cost"] for w in body["workloads"])
    assert_shows(browser.find_element(By.CSS_SELECTOR, '[data-total="gpu_hourly_cost"]').text, gpu, "GPU $")
    assert browser.find_element(By.CSS_SELECTOR, '[data-total="matching"]').text == str(len(firsts))
    assert card != everything, "the namespace filter changes the savings card"
    for key in ("cpu_cores_saved", "memory_bytes_saved"):
        total = sum(w[key] or 0.0 for w in body["workloads"])
        assert_shows(browser.find_element(By.CSS_SELECTOR, f'[data-total="{key}"]').text, total, key)
    screenshot(browser, artifacts / "overview-filtered-cards.png")


def test_a_404_page_links_to_the_closest_pages(browser: WebDriver, base_url: str, artifacts: Path) -> None:
    browser.get(base_url + "/workloads/shop/Deployment/serch")
    assert browser.title.startswith("Not found")
    error = browser.find_element(By.ID, "error").text
    assert "shop/Deployment/serch" in error and "/api/" not in error, error
    first = browser.find_element(By.CSS_SELECTOR, "#matches a")
    assert first.text == "workload shop/Deployment/search"
    screenshot(browser, artifacts / "not-found-close-matches.png")
    first.click()
    WebDriverWait(browser, 10).until(lambda d: d.current_url.endswith("/workloads/shop/Deployment/search"))
    assert browser.title.startswith("Deployment shop/search")
    browser.get(base_url + "/gpus")
    assert browser.find_element(By.CSS_SELECTOR, "#matches a").text == "GPUs"
