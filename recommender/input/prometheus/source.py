"""PrometheusSource: a few queries per namespace and time chunk, each answer folded into the usage model."""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from podsizer.owners import Skipped
from podsizer.settings import env_name
from podsizer.settings.source import DEFAULT_MAX_SAMPLES_PER_CYCLE, ReadPath
from podsizer.subject import Subject
from recommender.input.dcgm import Series, gpu_samples, normalize_labels
from recommender.input.prometheus import ksm
from recommender.input.prometheus import queries as q
from recommender.input.prometheus.client import AnswerTooLarge, PromClient, step_for
from recommender.input.prometheus.kubeapi import ApiIdentity
from recommender.input.prometheus.reads import SLOW_SCRAPE_WINDOW_S, GridSpec, UsageReads
from recommender.input.prometheus.series import container_samples
from recommender.model import NO_SERIES, Autoscaler, NodeInfo, Progress, UsageSnapshot
from recommender.model.aggregate import aggregate, snapshot
from recommender.model.raw import ContainerSamples, GpuSamples, OomKill, OwnerLink, PodInfo, RawDataset
from recommender.model.recency import DEFAULT as DEFAULT_RECENCY
from recommender.model.recency import Recency
from recommender.model.stream import cold_start
from recommender.model.timegrid import aligned

log = logging.getLogger("podsizer")

DEFAULT_QUERY_STEP_S = 60  # PODSIZER_QUERY_STEP: cAdvisor is scraped every 15-60 s
DEFAULT_CPU_RATE_WINDOW_S = 120  # PODSIZER_CPU_RATE_WINDOW: at least two samples of a 60 s scrape
DEFAULT_CHUNK_S = 21600  # PODSIZER_COLD_START_CHUNK: 6 h of samples in memory at a time
CHUNK_POINTS = 400_000
"""Points (one CPU and one working-set value of a series) collect() asks for in one chunk after the first
(of one namespace read raw, of a namespace batch by range queries): memory bounded whatever the cluster's
size."""


@dataclass
class _Namespace:
    pods: list[PodInfo] = field(default_factory=list)
    owners: list[OwnerLink] = field(default_factory=list)
    containers: list[ContainerSamples] = field(default_factory=list)
    ooms: list[OomKill] = field(default_factory=list)


@dataclass
class _Cluster:
    gpus: list[GpuSamples] = field(default_factory=list)
    autoscalers: list[Autoscaler] = field(default_factory=list)
    nodes: list[NodeInfo] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def _ooms(containers: list[ContainerSamples], killed: set[ksm.ContainerKey]) -> list[OomKill]:
    """An OOM-killed container's peak working set in the window, at the time of that peak."""
    out = []
    for s in containers:
        if (s.namespace, s.pod, s.container) in killed and np.isfinite(s.memory_bytes).any():
            i = int(np.nanargmax(s.memory_bytes))
            at = datetime.fromtimestamp(float(s.timestamps[i]), tz=UTC)
            out.append(OomKill(s.namespace, s.pod, s.container, at, float(s.memory_bytes[i])))
    return out


class PrometheusSource:
    """Reads cAdvisor, kube-state-metrics and dcgm-exporter series; O(namespaces) queries per collect().

    `dataset()` gives the same raw model as the demo, file and DCGM sources (a RawDataset) for one
    interval; `collect()` streams the window into the usage model (recommender.model.stream.cold_start:
    `namespace_batch` namespaces at a time (3: as many as are queried at once), each in hour-aligned time
    chunks: the first of `chunk_s` (PODSIZER_COLD_START_CHUNK, 6 h), the next ones of about
    `points_per_chunk` points of the series the batch has (CHUNK_POINTS; None: every chunk chunk_s), so
    memory holds one chunk's samples and the states, and a small cluster is read in few pieces) and reads
    it the one way (recommender.model.aggregate.snapshot, weighted by `recency`), with the window's GPUs,
    autoscalers and nodes. Per namespace and chunk, one range query each for CPU and working set, stepped
    at the multiples of resolution_s (PODSIZER_QUERY_STEP, default 60 s: the scrape resolution) and cut
    into pieces of at most MAX_POINTS_PER_SERIES points (client.query_range_split), has Prometheus
    evaluate every series once; the answer is kept as one pre-reduced series per container: the CPU rate
    over rate_s (PODSIZER_CPU_RATE_WINDOW, default 2 m: two samples of a 60 s scrape) and the peak working
    set (max_over_time[resolution_s]) of each step, with the raw working-set sample count
    (count_over_time, server side). Quantiles over these points are those of the rates and the per-step
    peaks (at or above those of raw samples: conservative for sizing); first/last seen are accurate to one
    step. One instant query gives requests, limits and the counts, one series lookup the owner chain,
    labels, annotations, init containers and OOM kills. GPUs: one cluster-wide range query per dcgm-
    exporter metric at activity_step_s (activity and framebuffer use as the peak of each step).
    concurrency namespaces are queried at once (3: on 2 cores this overlaps our parsing with Prometheus'
    evaluation).

    Without kube-state-metrics (a namespace with cAdvisor series but no kube_pod_owner series): pods,
    owners, requests and OOM kills come from the Kubernetes API (`api_identity`, kubeapi.py), when given.

    Many clusters in one store: with cluster_label every query carries `<cluster_label>="<cluster>"`
    (queries.Scope) and the dataset's workloads carry `cluster`; `clusters()` finds the label's values
    and `for_cluster()` gives the source of one of them. Without a label, `cluster` only names the one
    cluster (queries unscoped).
    """

    def __init__(
        self,
        client: PromClient,
        *,
        namespaces: list[str] | None = None,
        namespace_filter: Callable[[str], bool] | None = None,
        name: str = "prometheus",
        concurrency: int = 3,
        resolution_s: int = DEFAULT_QUERY_STEP_S,
        rate_s: int = DEFAULT_CPU_RATE_WINDOW_S,
        activity_step_s: int = 300,
        chunk_s: int = DEFAULT_CHUNK_S,
        namespace_batch: int = 3,
        points_per_chunk: int | None = CHUNK_POINTS,
        cluster_label: str = "",
        cluster: str = "",
        recency: Recency = DEFAULT_RECENCY,
        api_identity: ApiIdentity | None = None,
        read: ReadPath = "auto",
        max_samples_per_cycle: int = DEFAULT_MAX_SAMPLES_PER_CYCLE,
    ) -> None:
        if min(resolution_s, rate_s, activity_step_s, namespace_batch) <= 0:
            raise ValueError("resolution_s, rate_s, activity_step_s and namespace_batch must be positive")
        if chunk_s < 3600 or chunk_s % 3600:
            raise ValueError(f"chunk_s must be a whole number of hours, got {chunk_s} s")
        if rate_s < resolution_s:
            raise ValueError(
                f"rate_s ({rate_s}) must be at least resolution_s ({resolution_s}): "
                "a shorter rate window skips the samples between steps"
            )
        self.client = client
        self.namespaces = namespaces
        self.namespace_filter = namespace_filter  # keeps the discovered namespaces it accepts (globs)
        self.name = name
        self.concurrency = max(1, concurrency)
        self.resolution_s = resolution_s
        self.rate_s = rate_s
        self.activity_step_s = activity_step_s
        self.chunk_s = chunk_s
        self.namespace_batch = namespace_batch
        self.points_per_chunk = points_per_chunk
        self.cluster_label = cluster_label
        self.cluster = cluster
        self.scope = q.Scope(cluster_label, cluster) if cluster_label else q.UNSCOPED
        self.recency = recency
        self.api_identity = api_identity
        self.warned_slow: set[str] = set()  # shared by copies (for_cluster, for_namespaces): warn once
        # shared by copies: the path is found once, a cycle's sample budget spans them
        self.reads = UsageReads(client, read, max_samples_per_cycle)

    def for_cluster(self, cluster: str) -> PrometheusSource:
        """The same source (same client) reading only `cluster`'s series."""
        return _with_cluster(self, cluster)

    def for_namespaces(self, namespaces: list[str]) -> PrometheusSource:
        """The same source (same client and cluster) reading only `namespaces` (a cold start's batch)."""
        out = copy.copy(self)
        out.namespaces, out.namespace_filter = list(namespaces), None
        return out

    def cycle(self) -> AbstractContextManager[object]:
        """One cycle of reads (a collect, a dataset): their samples count against one budget,
        PODSIZER_PROMETHEUS_MAX_SAMPLES_PER_CYCLE (reads.UsageReads.cycle)."""
        return self.reads.cycle()

    def cold_start_plan(
        self, start: datetime, end: datetime, batch: int, points: int | None
    ) -> tuple[PrometheusSource, int, int | None]:
        """Who reads a cold start's chunks, how many namespaces a chunk holds and how many points (None:
        fixed chunks) for a caller's `batch` and `points`. Read raw (remote read, export) the work is this
        process' decoding and folding: one namespace at a time, chunks of about `points_per_chunk` points
        of its series (cold_start reads the next while it folds one; more at once only contend for the two
        cores). By range queries the work is the server's: the caller's batch, `concurrency` namespaces at
        once overlap our parsing with its evaluation. Auto's path is found first, by reading the last step
        of the first namespace."""
        namespaces = self.namespaces_in(start, end)
        found = self.for_namespaces(namespaces)  # discovered once
        if not namespaces:
            return found, batch, points
        hi, res = end.timestamp(), float(self.resolution_s)
        if self.reads.settle(namespaces[0], self.scope, GridSpec(hi - res, hi, res, self.rate_s)) == "query":
            return found, batch, points
        found.concurrency = 1
        return found, 1, self.points_per_chunk

    def namespaces_in(self, start: datetime, end: datetime) -> list[str]:
        """The namespaces a dataset of [start, end] reads: those named, else those discovered and kept by
        the namespace filter."""
        return self._discover(start, end)

    def clusters(self, start: datetime, end: datetime) -> list[str]:
        """Every value of cluster_label on container series in [start, end]; [cluster] without a label."""
        if not self.cluster_label:
            return [self.cluster]
        return self.client.label_values(self.cluster_label, q.containers_match(), start, end)

    # ---- fetching -------------------------------------------------------------------------------

    def _discover(self, start: datetime, end: datetime) -> list[str]:
        if self.namespaces is not None:
            return sorted(set(self.namespaces))
        match = q.containers_match(self.scope)
        found = self.client.label_values("namespace", match, start, end)
        return found if self.namespace_filter is None else [ns for ns in found if self.namespace_filter(ns)]

    def _fetch_namespace(
        self, ns: str, w: q.Window, span: tuple[datetime, datetime], fresh_from: datetime
    ) -> _Namespace:
        """Identity (series lookups) over span = [identity_from, end]; samples, their counts and the pods'
        specs from fresh_from on (the window's start, or where an incremental cycle's new samples begin)."""
        identity_from, end = span
        c = self.client
        res = float(self.resolution_s)  # never coarsened: long windows are queried in pieces
        lo, hi = aligned(fresh_from.timestamp(), end.timestamp(), res)
        # at least one step: PromQL refuses a [0s] range (a read that starts at the window's end)
        seconds = max(self.resolution_s, round((end - fresh_from).total_seconds()))
        fresh = q.Window(seconds, w.resolution_s, w.rate_s)
        ident = ksm.identity(
            c.series(q.identity_series(ns, self.scope), identity_from, end),
            c.query(q.container_facts(ns, fresh, self.scope), end),
        )
        if self.api_identity is not None:
            ident = self.api_identity.fill(ns, ident)
        # reduced right away: a namespace's answers are gone before the next namespace is read
        usage = self.reads.usage(ns, self.scope, GridSpec(lo, hi, res, self.rate_s))
        if usage.slow:
            self._warn_slow(ns, len(usage.slow))
        containers = container_samples(usage.grid, ident.samples)
        del usage
        return _Namespace(ident.pods, ident.owners, containers, _ooms(containers, ident.oom_killed))

    def _warn_slow(self, ns: str, count: int) -> None:
        level = logging.DEBUG if ns in self.warned_slow else logging.WARNING  # once per namespace
        self.warned_slow.add(ns)
        log.log(
            level,
            "namespace %s: %d containers have no CPU rate over %ss (cAdvisor scraped less often than every "
            "%ss?); their CPU is the rate over %ss: set %s to at least twice the scrape interval",
            ns, count, self.rate_s, self.rate_s // 2, SLOW_SCRAPE_WINDOW_S, env_name("cpu_rate_window"),
        )  # fmt: skip

    def _fetch_cluster(self, w: q.Window, start: datetime, end: datetime, namespaces: set[str]) -> _Cluster:
        c = self.client
        step = step_for(start, end, self.activity_step_s)
        lo, hi = aligned(start.timestamp(), end.timestamp(), step)
        series: list[Series] = []
        for labels, ts, vs in c.query_range_split(q.gpu_series(int(step), self.scope), lo, hi, step):
            canonical = normalize_labels(labels, self.cluster_label)
            if canonical.get("cluster", self.cluster) != self.cluster:
                continue  # another cluster's GPU: never counted here, whatever the store answered
            if not canonical.get("pod") or canonical.get("namespace") in namespaces:
                series.append((labels.get(q.MARK, ""), canonical, ts, vs))
        found, skipped = ksm.autoscalers(c.query(q.autoscalers(w, self.scope), end), namespaces)
        nodes = ksm.nodes(c.query(q.nodes(w, self.scope), end))
        return _Cluster(gpu_samples(series), found, nodes, skipped)

    def dataset(
        self,
        start: datetime,
        end: datetime,
        progress: Progress | None = None,
        *,
        fresh_from: datetime | None = None,
        cluster_wide: bool = True,
        identity_from: datetime | None = None,
    ) -> RawDataset:
        """The window's raw model: pods, owner links, pre-reduced container series, GPUs, OOM kills,
        autoscalers and nodes; a namespace without container series is listed as skipped.

        fresh_from (incremental cycles): container samples, their counts, the pods' specs and OOM kills
        only from there on (the dataset starts there); pods, owner links, GPUs, autoscalers and nodes still
        over [start, end]. cluster_wide False: no GPU, autoscaler and node queries (a cold start's chunks
        before its last). identity_from: pods and owner links only of the series seen from there on (an
        incremental cycle that knows the earlier ones: a 7-day series lookup costs more than an hour's
        samples)."""
        if start.tzinfo is None or end.tzinfo is None:
            raise ValueError("start and end must be timezone-aware datetimes")
        fresh_from = start if fresh_from is None else max(start, fresh_from)
        identity_from = start if identity_from is None else max(start, min(identity_from, fresh_from))
        seconds = round((end - start).total_seconds())
        if seconds <= 0:
            raise ValueError(f"empty window: start {start.isoformat()} is not before end {end.isoformat()}")
        w = q.Window(seconds, self.resolution_s, self.rate_s)
        if self.cluster_label and not self.cluster:
            log.warning(
                "%s is set but no cluster is chosen: only series without that label are read "
                "(name the cluster: for_cluster, %s or %s)",
                env_name("cluster_label"), env_name("cluster_name"), env_name("clusters"),
            )  # fmt: skip
        report: Progress = progress or (lambda done, total, what: None)

        namespaces = self._discover(start, end)
        total = len(namespaces) + 2
        done = 1
        report(done, total, f"found {len(namespaces)} namespaces")
        data: dict[str, _Namespace] = {}
        too_large: list[Skipped] = []
        with self.cycle(), ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = {
                pool.submit(self._fetch_namespace, ns, w, (identity_from, end), fresh_from): ns
                for ns in namespaces
            }
            for fut in as_completed(futures):
                ns = futures[fut]
                try:
                    data[ns] = fut.result()
                except AnswerTooLarge as exc:  # one namespace too large for the cap: the others go on
                    log.error("namespace %s skipped: %s", ns, exc)
                    too_large.append(Skipped(Subject.of_namespace(ns), str(exc)))
                done += 1
                report(done, total, f"namespace {ns}")
        cluster = self._fetch_cluster(w, start, end, set(namespaces)) if cluster_wide else _Cluster()
        report(total, total, "GPUs, autoscalers, nodes")
        parts = [data[ns] for ns in sorted(data)]
        quiet = [ns for ns in sorted(data) if not data[ns].containers]
        empty = [Skipped(Subject.of_namespace(ns), NO_SERIES) for ns in quiet]
        return RawDataset(
            start=fresh_from,
            end=end,
            pods=tuple(p for d in parts for p in d.pods),
            owners=tuple(o for d in parts for o in d.owners),
            containers=tuple(s for d in parts for s in d.containers),
            gpus=tuple(cluster.gpus),
            ooms=tuple(o for d in parts for o in d.ooms),
            autoscalers=tuple(cluster.autoscalers),
            nodes=tuple(cluster.nodes),
            skipped=(*too_large, *empty, *cluster.skipped),
            cluster=self.cluster,
        )

    def usage(self, raw: RawDataset) -> UsageSnapshot:
        """The usage model of a dataset this source gave, in one piece (its window's activity step)."""
        return aggregate(
            raw,
            source=self.name,
            activity_step=step_for(raw.start, raw.end, self.activity_step_s),
            recency=self.recency,
        )

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
        """The window streamed into the usage model, chunk by chunk (class docstring), read with the
        window's GPUs, autoscalers and nodes (one cluster-wide read) and the pods the chunks named."""
        if start.tzinfo is None or end.tzinfo is None:
            raise ValueError("start and end must be timezone-aware datetimes")
        if end <= start:
            raise ValueError(f"empty window: start {start.isoformat()} is not before end {end.isoformat()}")
        with self.cycle():
            plan = self.cold_start_plan(start, end, self.namespace_batch, self.points_per_chunk)
            reader, batch, points = plan
            cold = cold_start(
                reader,
                start,
                end,
                recency=self.recency,
                chunk_s=self.chunk_s,
                namespace_batch=batch,
                progress=progress,
                points_per_chunk=points,
            )
            w = q.Window(round((end - start).total_seconds()), self.resolution_s, self.rate_s)
            cluster = self._fetch_cluster(w, start, end, set(cold.namespaces))
        if progress is not None:
            progress(1, 1, "GPUs, autoscalers, nodes")
        known = cold.known
        window = RawDataset(
            start=start,
            end=end,
            pods=tuple(known.pods.values()),
            owners=tuple(known.owners.values()),
            containers=(),
            gpus=tuple(cluster.gpus),
            autoscalers=tuple(cluster.autoscalers),
            nodes=tuple(cluster.nodes),
            skipped=tuple(cluster.skipped),
            cluster=self.cluster,
        )
        return snapshot(
            cold.model,
            window,
            source=self.name,
            window=(start, end),
            activity_step=step_for(start, end, self.activity_step_s),
            recency=self.recency,
            skipped=cold.skipped.values(),
        )


def _with_cluster(source: PrometheusSource, cluster: str) -> PrometheusSource:
    out = copy.copy(source)
    out.cluster = cluster
    out.scope = q.Scope(source.cluster_label, cluster) if source.cluster_label else q.UNSCOPED
    return out
