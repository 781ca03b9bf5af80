"""Scrapes dcgm-exporter /metrics endpoints directly (no Prometheus) into a local store, and turns the
stored series into GpuUsage.

Labels are normalised by recommender.input.dcgm (every label style dcgm-exporter has used, the same rule
the Prometheus source applies), metric names upper- or lower-case (`--use-old-namespace`). Empty pod
labels mean the GPU is not attached to a pod. Only the metrics the recommender reads are stored.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import httpx
from prometheus_client.parser import text_string_to_metric_families

from podsizer.api.identity import WorkloadRef
from podsizer.owners import OwnerGraph, Skipped
from podsizer.subject import Subject
from recommender.input.dcgm import METRICS, gpu_samples, normalize_labels
from recommender.input.deadline import Deadlines, DeadlineTransport
from recommender.input.local_store import SeriesStore
from recommender.model import Progress, SourceError, UsageSnapshot
from recommender.model.aggregate import aggregate
from recommender.model.raw import GpuSamples, RawDataset

Resolver = Callable[[str, str], WorkloadRef | Skipped]


def parse_exposition(text: str) -> list[tuple[str, dict[str, str], float, float | None]]:
    """(metric, canonical labels, value, timestamp or None) of the samples the recommender reads.

    Raises ValueError (the parser's) on malformed text."""
    out: list[tuple[str, dict[str, str], float, float | None]] = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            metric = sample.name.upper()
            if metric not in METRICS:
                continue
            ts = sample.timestamp
            stamp = float(ts) if isinstance(ts, int | float) else None
            if stamp is not None and stamp > 1e11:  # exposition timestamps are milliseconds
                stamp /= 1000.0
            out.append((metric, normalize_labels(sample.labels), float(sample.value), stamp))
    return out


@dataclass(frozen=True)
class ScrapeError:
    """One endpoint that could not be scraped, and why."""

    endpoint: str
    message: str

    def __str__(self) -> str:
        return f"{self.endpoint}: {self.message}"


@dataclass(frozen=True)
class ScrapeResult:
    """What one scrape round did."""

    at: datetime
    samples: int
    endpoints_ok: int
    errors: tuple[ScrapeError, ...] = ()


class DcgmScrapeSource:
    """MetricsSource reading dcgm-exporter endpoints; `scrape_once()` is called on a timer by its owner.

    `resolver` maps (namespace, pod) to a workload: an OwnerGraph or a callable; without one every GPU
    pod is skipped with that reason. Each scrape of an endpoint takes at most `timeout` in all, however
    slowly the exporter trickles its answer (recommender/input/deadline.py).
    """

    name = "dcgm-scrape"

    def __init__(
        self,
        endpoints: Sequence[str],
        store: SeriesStore,
        clock: Callable[[], datetime],
        transport: httpx.BaseTransport | None = None,
        *,
        resolver: OwnerGraph | Resolver | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.endpoints = list(endpoints)
        self.store = store
        self.clock = clock
        self.resolver = resolver
        self.timeout = timeout
        self._deadlines = Deadlines()
        self._http = httpx.Client(transport=transport or DeadlineTransport(self._deadlines), timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> DcgmScrapeSource:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _fetch(self, endpoint: str) -> str:
        try:
            with self._deadlines.exchange(self.timeout):
                response = self._http.get(endpoint, headers={"Accept": "text/plain"})
        except httpx.TimeoutException as exc:
            raise SourceError(f"no complete answer within {self.timeout:g}s ({type(exc).__name__})") from None
        except httpx.HTTPError as exc:
            raise SourceError(f"request failed: {type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            raise SourceError(f"HTTP {response.status_code}: {response.text[:200]!r}")
        return response.text

    def scrape_once(self) -> ScrapeResult:
        """Scrape every endpoint once; a failing endpoint is reported and the others still stored."""
        at = self.clock()
        now = at.timestamp()
        errors: list[ScrapeError] = []
        by_time: dict[float, list[tuple[str, dict[str, str], float]]] = defaultdict(list)
        ok = 0
        for endpoint in self.endpoints:
            try:
                text = self._fetch(endpoint)
                samples = parse_exposition(text)
            except SourceError as exc:
                errors.append(ScrapeError(endpoint, str(exc)))
                continue
            except (ValueError, TypeError, IndexError, KeyError) as exc:
                errors.append(ScrapeError(endpoint, f"malformed exposition text: {exc}"))
                continue
            ok += 1
            for metric, labels, value, stamp in samples:
                by_time[now if stamp is None else stamp].append((metric, labels, value))
        stored = sum(self.store.append(t, by_time[t]) for t in sorted(by_time))
        return ScrapeResult(at, stored, ok, tuple(errors))

    def gpu_samples(self, start: datetime, end: datetime) -> list[GpuSamples]:
        """The stored series in [start, end) as one GpuSamples per GPU (or MIG instance) and pod."""
        return gpu_samples(
            (metric, dict(labels), ts, vs)
            for (metric, labels), ts, vs in self.store.series(start.timestamp(), end.timestamp())
        )

    def _resolve(self, namespace: str, pod: str) -> WorkloadRef | Skipped:
        if self.resolver is None:
            why = "no owner resolver configured for the DCGM scraper"
            return Skipped(Subject.of_pod(namespace, pod), why)
        if isinstance(self.resolver, OwnerGraph):
            return self.resolver.resolve(namespace, pod)
        return self.resolver(namespace, pod)

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
        """GpuUsage from the stored samples in [start, end); containers stay empty (DCGM has no CPU)."""
        if progress:
            progress(0, 1, "reading scraped DCGM series")
        raw = RawDataset(
            start, end, pods=(), owners=(), containers=(), gpus=tuple(self.gpu_samples(start, end))
        )
        snap = aggregate(raw, source=self.name, resolve=self._resolve)
        if progress:
            progress(1, 1, "done")
        return snap
