"""Scrapes dcgm-exporter /metrics endpoints directly (no Prometheus) into a local store, and turns the
stored series into GpuUsage.

Accepts every label style dcgm-exporter has used (see FACTS.md): `Hostname`/`hostname` (any case),
`UUID`/`uuid`, `pod`/`pod_name`/`exported_pod`, `namespace`/`pod_namespace`/`exported_namespace`,
`container`/`container_name`/`exported_container`, MIG `GPU_I_PROFILE`/`GPU_I_ID`, time-slicing `vgpu`,
and upper- or lower-case metric names (`--use-old-namespace`). Empty pod labels mean the GPU is not
attached to a pod. Only the metrics the recommender reads are stored.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import httpx
import numpy as np
from prometheus_client.parser import text_string_to_metric_families

from podsizer.api.identity import WorkloadRef
from podsizer.owners import OwnerGraph, Skipped
from recommender.input.local_store import SeriesStore
from recommender.model import FloatArray, Progress, SourceError, UsageSnapshot
from recommender.model.aggregate import aggregate_gpus
from recommender.model.raw import GpuSamples

Resolver = Callable[[str, str], WorkloadRef | Skipped]

# Stored metric (canonical, upper case) -> GpuSamples field.
METRICS: Mapping[str, str] = {
    "DCGM_FI_PROF_SM_ACTIVE": "sm_active",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "gr_engine_active",
    "DCGM_FI_DEV_GPU_UTIL": "gpu_util_percent",
    "DCGM_FI_PROF_DRAM_ACTIVE": "dram_active",
    "DCGM_FI_DEV_FB_USED": "fb_used_mib",
    "DCGM_FI_DEV_FB_FREE": "fb_free_mib",
    "DCGM_FI_DEV_FB_RESERVED": "fb_reserved_mib",
}

# Canonical label -> exporter spellings (lower case), first non-empty wins. exported_* first: when a
# scraper renamed the exporter's own labels, those hold the GPU pod's identity.
_ALIASES: Mapping[str, tuple[str, ...]] = {
    "hostname": ("hostname",),
    "uuid": ("uuid",),
    "gpu": ("gpu",),
    "model": ("modelname",),
    "namespace": ("exported_namespace", "namespace", "pod_namespace"),
    "pod": ("exported_pod", "pod", "pod_name"),
    "container": ("exported_container", "container", "container_name"),
    "mig_profile": ("gpu_i_profile",),
    "mig_instance": ("gpu_i_id",),
    "vgpu": ("vgpu",),
}


def normalize_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """The canonical label set of one dcgm-exporter sample (absent or empty labels left out)."""
    lower: dict[str, str] = {}
    for k, v in labels.items():
        lower.setdefault(k.lower(), v)
    out: dict[str, str] = {}
    for canonical, names in _ALIASES.items():
        value = next((lower[n] for n in names if lower.get(n)), "")
        if value:
            out[canonical] = value
    return out


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


_GPU_ID = ("hostname", "uuid", "gpu", "mig_instance", "namespace", "pod", "container", "vgpu")


class DcgmScrapeSource:
    """MetricsSource reading dcgm-exporter endpoints; `scrape_once()` is called on a timer by its owner.

    `resolver` maps (namespace, pod) to a workload: an OwnerGraph or a callable; without one every GPU
    pod is skipped with that reason.
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
        self._http = httpx.Client(transport=transport, timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> DcgmScrapeSource:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _fetch(self, endpoint: str) -> str:
        try:
            response = self._http.get(endpoint, headers={"Accept": "text/plain"})
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
        groups: dict[tuple[str, ...], dict[str, tuple[FloatArray, FloatArray]]] = defaultdict(dict)
        meta: dict[tuple[str, ...], dict[str, str]] = {}
        for (metric, labels), ts, vs in self.store.series(start.timestamp(), end.timestamp()):
            lbl = dict(labels)
            ident = tuple(lbl.get(k, "") for k in _GPU_ID)
            groups[ident][METRICS[metric]] = (ts, vs)
            meta.setdefault(ident, lbl)
        out: list[GpuSamples] = []
        for ident in sorted(groups):
            fields = groups[ident]
            lbl = meta[ident]
            grid = np.unique(np.concatenate([ts for ts, _ in fields.values()]))

            def on_grid(
                name: str, grid: FloatArray = grid, fields: dict[str, tuple[FloatArray, FloatArray]] = fields
            ) -> FloatArray | None:
                if name not in fields:
                    return None
                ts, vs = fields[name]
                a = np.full(grid.size, np.nan)
                a[np.searchsorted(grid, ts)] = vs
                return a

            nan = np.full(grid.size, np.nan)
            reserved = on_grid("fb_reserved_mib")
            finite_reserved = reserved[np.isfinite(reserved)] if reserved is not None else np.empty(0)
            out.append(
                GpuSamples(
                    namespace=lbl.get("namespace", ""),
                    pod=lbl.get("pod", ""),
                    container=lbl.get("container", ""),
                    hostname=lbl.get("hostname", ""),
                    gpu_index=lbl.get("gpu", ""),
                    uuid=lbl.get("uuid", ""),
                    model_name=lbl.get("model", ""),
                    timestamps=grid,
                    fb_used_mib=a if (a := on_grid("fb_used_mib")) is not None else nan,
                    fb_free_mib=a if (a := on_grid("fb_free_mib")) is not None else nan,
                    fb_reserved_mib=float(np.median(finite_reserved)) if finite_reserved.size else 0.0,
                    sm_active=on_grid("sm_active"),
                    gr_engine_active=on_grid("gr_engine_active"),
                    gpu_util_percent=on_grid("gpu_util_percent"),
                    dram_active=on_grid("dram_active"),
                    mig_profile=lbl.get("mig_profile"),
                    mig_instance_id=lbl.get("mig_instance"),
                )
            )
        return out

    def _resolve(self, namespace: str, pod: str) -> WorkloadRef | Skipped:
        if self.resolver is None:
            return Skipped(f"{namespace}/pod/{pod}", "no owner resolver configured for the DCGM scraper")
        if isinstance(self.resolver, OwnerGraph):
            return self.resolver.resolve(namespace, pod)
        return self.resolver(namespace, pod)

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
        """GpuUsage from the stored samples in [start, end); containers stay empty (DCGM has no CPU)."""
        if progress:
            progress(0, 1, "reading scraped DCGM series")
        gpus = self.gpu_samples(start, end)
        usage, skipped = aggregate_gpus(gpus, self._resolve, start.timestamp(), end.timestamp())
        if progress:
            progress(1, 1, "done")
        return UsageSnapshot(
            window_start=start,
            window_end=end,
            containers=(),
            gpus=tuple(usage),
            skipped=tuple(skipped),
            source=self.name,
        )
