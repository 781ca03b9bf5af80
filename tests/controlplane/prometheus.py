"""A real Prometheus (Debian's /usr/bin/prometheus) serving backfilled history on 127.0.0.1, for e2e tests."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from recommender.model.raw import RawDataset
from tests.integration.prometheus import server
from tests.support.openmetrics import backfill, write_dataset

PROMTOOL = "/usr/bin/promtool"


def backfill_dataset(dataset: RawDataset, data_dir: Path, scratch: Path) -> None:
    """Writes `dataset` as 2 h OpenMetrics files under `scratch`, promtool-backfills them, deletes them."""
    files = write_dataset(dataset, scratch, workers=2)
    try:
        backfill(files, data_dir, workers=2, promtool=PROMTOOL)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextmanager
def running_prometheus(data_dir: Path, since: datetime, timeout_s: float = 60.0) -> Iterator[str]:
    """Serves `data_dir` (no scrapes) until the block exits; yields the base URL.

    Retention covers everything from `since` on (retention counts back from the newest block). The
    server is the integration tests' launcher; its log is `data_dir`'s sibling prometheus.log.
    """
    days = int((time.time() - since.timestamp()) // 86400) + 2
    with server.running_prometheus(data_dir, days, ready_timeout=timeout_s) as running:
        yield running.url
