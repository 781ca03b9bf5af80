"""Headless Chromium (Debian's chromium + chromium-driver, driven by Selenium) against a live console on
the demo data, and one real Prometheus with seven days of backfilled history shared by the tests that need
it; screenshots go to test-artifacts/browser/."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from console.app import create_console_app
from console.demo_data import DemoConsoleData
from tests.integration.prometheus.history import DAYS, History, build_history
from tests.integration.prometheus.server import running_prometheus
from tests.support.openmetrics import backfill, write_dataset

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "browser"
CHROMIUM = os.environ.get("PODSIZER_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("PODSIZER_CHROMEDRIVER", "/usr/bin/chromedriver")
PROMTOOL = Path("/usr/bin/promtool")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-dev-shm-usage",
    "--window-size=1600,1200",
)


def _missing() -> list[str]:
    return [p for p in (CHROMIUM, CHROMEDRIVER) if shutil.which(p) is None]


HERE = Path(__file__).resolve().parent
SKIP_REASON = (
    "!!! BROWSER TESTS NOT RUN: {missing} not found. Install Debian's chromium and chromium-driver "
    "(apt-get install -y chromium chromium-driver); set PODSIZER_REQUIRE_BROWSER=1 to make this a failure !!!"
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark this directory's tests `browser`; skip them loudly when Chromium is absent and not required."""
    missing = _missing()
    skip = missing and not os.environ.get("PODSIZER_REQUIRE_BROWSER")
    for item in items:
        if HERE not in Path(str(item.path)).resolve().parents:
            continue
        item.add_marker(pytest.mark.browser)
        if skip:
            item.add_marker(pytest.mark.skip(reason=SKIP_REASON.format(missing=", ".join(missing))))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    missing = _missing()
    if missing and not os.environ.get("PODSIZER_REQUIRE_BROWSER"):
        terminalreporter.write_line(SKIP_REASON.format(missing=", ".join(missing)), red=True, bold=True)


@contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """`app` served by uvicorn in a thread on a free 127.0.0.1 port; yields its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("console server did not start within 20 s")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture(scope="session")
def base_url() -> Iterator[str]:
    """The console on the demo data, served by uvicorn in a thread on a free 127.0.0.1 port."""
    with serving(create_console_app(DemoConsoleData.build(datetime.now(UTC)))) as url:
        yield url


@pytest.fixture(scope="session")
def api(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=10) as client:
        yield client


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    missing = _missing()
    if missing:
        pytest.fail(
            f"PODSIZER_REQUIRE_BROWSER is set but {', '.join(missing)} is missing: "
            "apt-get install -y chromium chromium-driver"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@dataclass(frozen=True)
class BackfilledPrometheus:
    """A real Prometheus serving `history` (seven days ending at history.end) at `url`."""

    history: History
    url: str

    @property
    def host(self) -> str:
        return self.url.split("://", 1)[1].rstrip("/")


@pytest.fixture(scope="session")
def backfilled_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackfilledPrometheus]:
    """One Prometheus per session for every browser test on real metrics (backfilled once, with promtool)."""
    if not PROMTOOL.exists():
        pytest.skip("promtool not installed (Debian package prometheus)")
    root = tmp_path_factory.mktemp("prometheus")
    history = build_history(datetime.fromtimestamp(int(time.time()) // 60 * 60, UTC))
    files = write_dataset(history.dataset(), root / "om", workers=2, dcgm_styles=history.dcgm_styles)
    backfill(files, root / "data", workers=2, promtool=str(PROMTOOL))
    with running_prometheus(root / "data", retention_days=DAYS + 2) as prom:
        yield BackfilledPrometheus(history, prom.url)
