"""A real Prometheus (Debian's /usr/bin/prometheus) serving backfilled history on 127.0.0.1, for e2e tests."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import httpx

from recommender.usage.openmetrics import backfill, write_dataset
from recommender.usage.raw import RawDataset
from tests.controlplane.processes import ManagedProcess, free_port

PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"


def backfill_dataset(dataset: RawDataset, data_dir: Path, scratch: Path) -> None:
    """Writes `dataset` as 2 h OpenMetrics files under `scratch`, promtool-backfills them, deletes them."""
    files = write_dataset(dataset, scratch, workers=2)
    try:
        backfill(files, data_dir, workers=2, promtool=PROMTOOL)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextmanager
def running_prometheus(
    data_dir: Path, since: datetime, log_path: Path, timeout_s: float = 60.0
) -> Iterator[str]:
    """Serves `data_dir` (no scrapes) until the block exits; yields the base URL.

    Retention covers everything from `since` on (retention counts back from the newest block).
    """
    config = data_dir.parent / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1m\nscrape_configs: []\n")
    port = free_port()
    days = int((time.time() - since.timestamp()) // 86400) + 2
    proc = ManagedProcess(
        "prometheus",
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={data_dir}",
            f"--storage.tsdb.retention.time={days}d",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        log_path,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.exit_code() is not None:
                raise RuntimeError(f"prometheus exited before it was ready:\n{proc.describe_failure()}")
            try:
                if httpx.get(f"{url}/-/ready", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"prometheus not ready after {timeout_s:.0f} s:\n{proc.describe_failure()}"
                )
            time.sleep(0.2)
        yield url
    finally:
        proc.stop()
