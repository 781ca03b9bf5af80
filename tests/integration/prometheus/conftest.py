"""Session fixture: 7 days of known history backfilled with promtool and served by a real Prometheus."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.support.openmetrics import backfill, write_dataset

from .history import DAYS, History, build_history
from .server import Server, running_prometheus

PROMTOOL = "/usr/bin/promtool"


@dataclass(frozen=True)
class Served:
    history: History
    server: Server
    timings: dict[str, float]


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    if not Path(PROMTOOL).exists():
        pytest.skip("promtool not installed (Debian package prometheus)")
    root = tmp_path_factory.mktemp("prom")
    now = int(time.time()) // 60 * 60
    t = [time.perf_counter()]
    history = build_history(datetime.fromtimestamp(now, UTC))
    files = write_dataset(history.dataset(), root / "om", workers=2, dcgm_styles=history.dcgm_styles)
    t.append(time.perf_counter())
    backfill(files, root / "data", workers=2, promtool=PROMTOOL)
    t.append(time.perf_counter())
    with running_prometheus(root / "data", retention_days=DAYS + 2) as server:
        t.append(time.perf_counter())
        timings = {"generate+write": t[1] - t[0], "backfill": t[2] - t[1], "start": t[3] - t[2]}
        yield Served(history, server, timings)
