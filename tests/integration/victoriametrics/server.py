"""Starts a real single-node VictoriaMetrics on a free 127.0.0.1 port; loads history via its import API."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.integration.prometheus.server import Server, free_port, serving

VICTORIA_METRICS = "/usr/bin/victoria-metrics"
RETENTION = "100y"
"""Back-dated samples older than -retentionPeriod are dropped silently; history is days old, so keep all."""


@contextmanager
def running_victoria_metrics(data_dir: Path, *, ready_timeout: float = 60.0) -> Iterator[Server]:
    """Serves data_dir until the block exits.

    -search.latencyOffset=0s: the newest samples (the history ends at "now") are visible at once;
    -search.disableCache: back-filled samples must not be hidden by cached answers to earlier queries.
    No -dedup.minScrapeInterval: every imported sample is kept, as Prometheus keeps it.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    argv = [
        VICTORIA_METRICS,
        f"-storageDataPath={data_dir}",
        f"-retentionPeriod={RETENTION}",
        f"-httpListenAddr=127.0.0.1:{port}",
        "-search.latencyOffset=0s",
        "-search.disableCache",
        "-loggerLevel=WARN",
    ]
    log_path = data_dir.parent / "victoria-metrics.log"
    with serving("victoria-metrics", argv, port, "/health", log_path, ready_timeout) as server:
        yield server


def import_text(url: str, texts: Sequence[Path] | Sequence[str], *, workers: int = 2) -> None:
    """POSTs OpenMetrics/Prometheus text (files or strings) to /api/v1/import/prometheus, `workers` at once.

    VictoriaMetrics reads the sample timestamps OpenMetrics writes in seconds (it converts them to ms) and
    skips `# HELP`, `# TYPE` and `# EOF` lines.
    """
    with httpx.Client(base_url=url, timeout=600.0) as client:

        def one(item: Path | str) -> None:
            body = item.read_bytes() if isinstance(item, Path) else item.encode()
            r = client.post("/api/v1/import/prometheus", content=body)
            if r.status_code != 204:
                raise RuntimeError(
                    f"import of {item if isinstance(item, Path) else 'text'}: {r.status_code} {r.text}"
                )

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            list(pool.map(one, texts))


def flush(url: str, expected_series: int, start: float, *, timeout: float = 60.0) -> None:
    """Makes every imported sample searchable; waits until /api/v1/series finds all expected_series.

    `start`: the oldest sample's time. VictoriaMetrics 1.79 does not list a series that lived a short
    while days ago (a Job's pod) when asked from start=0, though it serves its samples."""
    deadline = time.monotonic() + timeout
    found = -1
    while True:
        httpx.get(f"{url}/internal/force_flush", timeout=60.0).raise_for_status()
        r = httpx.post(
            f"{url}/api/v1/series",
            data={"match[]": '{__name__=~".+"}', "start": f"{start:.0f}"},
            timeout=60.0,
        )
        r.raise_for_status()
        found = len(r.json()["data"])
        if found >= expected_series:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"victoria-metrics shows {found} of {expected_series} series after {timeout}s")
        time.sleep(0.5)
