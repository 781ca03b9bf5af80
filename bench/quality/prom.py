"""The history (up to T) as exporter series in a real, backfilled Prometheus; `podsizer recommend` on it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from bench.quality.traces import GI, HISTORY, HISTORY_DAYS, NAMESPACE, Cluster, Pattern
from podsizer.api import WorkloadRef
from recommender.model import Autoscaler, NodeInfo
from recommender.model.raw import ContainerSamples, GpuSamples, OomKill, OwnerLink, PodInfo, RawDataset
from tests.integration.prometheus.server import Server, running_prometheus
from tests.support.openmetrics import backfill, write_dataset

PROMTOOL = "/usr/bin/promtool"
ROOT = Path(__file__).resolve().parents[2]


def stamp(t: datetime, minute: int) -> float:
    """Unix time of minute index `minute` (minute HISTORY is T)."""
    return t.timestamp() + 60.0 * (minute - HISTORY)


def _pods(p: Pattern, t: datetime) -> tuple[list[PodInfo], list[ContainerSamples], list[OomKill]]:
    pods: list[PodInfo] = []
    samples: list[ContainerSamples] = []
    ooms: list[OomKill] = []
    for pod in p.pods:
        hi = min(pod.last, HISTORY)
        if pod.first >= hi:
            continue
        pods.append(
            PodInfo(
                p.namespace, pod.name, pod.node, pod.owner_kind, pod.owner_name,
                labels={"app": p.name}, requests=pod.requests, limits=pod.limits,
            )
        )  # fmt: skip
        ts = t.timestamp() + 60.0 * (np.arange(pod.first, hi, dtype=np.float64) - HISTORY)
        n = hi - pod.first
        for c in p.containers:
            samples.append(ContainerSamples(p.namespace, pod.name, c, ts, pod.cpu[c][:n], pod.memory[c][:n]))
        # kube-state-metrics keeps one last-terminated-reason series per container from its first kill on.
        for c in sorted({c for c, _ in pod.ooms}):
            first = min(minute for name, minute in pod.ooms if name == c and minute < HISTORY)
            at = datetime.fromtimestamp(stamp(t, first), UTC)
            ooms.append(OomKill(p.namespace, pod.name, c, at, float(pod.memory[c][first - pod.first])))
    return pods, samples, ooms


def _gpus(p: Pattern, t: datetime) -> list[GpuSamples]:
    out: list[GpuSamples] = []
    for g in p.gpus:
        n = HISTORY - g.first
        ts = t.timestamp() + 60.0 * (np.arange(g.first, HISTORY, dtype=np.float64) - HISTORY)
        used = np.rint(g.fb_used_mib[:n])
        sm = g.sm_active[:n]
        out.append(
            GpuSamples(
                p.namespace, g.pod, g.container, g.node, "0", g.uuid, g.model, ts, used,
                g.fb_total_mib - used,
                sm_active=sm, gr_engine_active=np.clip(sm + 0.03, 0, 1),
                gpu_util_percent=np.rint(np.clip(sm + 0.08, 0, 1) * 100),
            )
        )  # fmt: skip
    return out


def dataset(cluster: Cluster, t: datetime) -> RawDataset:
    """What a cluster's cAdvisor, kube-state-metrics and dcgm-exporter would have exposed up to T."""
    pods: list[PodInfo] = []
    samples: list[ContainerSamples] = []
    ooms: list[OomKill] = []
    owners: list[OwnerLink] = []
    gpus: list[GpuSamples] = []
    scalers: list[Autoscaler] = []
    for p in cluster.patterns:
        pp, ss, oo = _pods(p, t)
        pods += pp
        samples += ss
        ooms += oo
        gpus += _gpus(p, t)
        owners += [OwnerLink(p.namespace, "ReplicaSet", rs, p.kind, p.name) for rs in p.replicasets]
        if p.hpa is not None:
            h = p.hpa
            ref = WorkloadRef(p.namespace, p.kind, p.name)
            scalers.append(
                Autoscaler(
                    ref, "HorizontalPodAutoscaler", p.name, h.min_replicas, h.max_replicas,
                    {"cpu": h.cpu_target}, h.current_replicas,
                )
            )  # fmt: skip
    nodes = [NodeInfo("node-1", "m6i.8xlarge", "on-demand", allocatable={"cpu": 31.5, "memory": 120 * GI})]
    nodes += [
        NodeInfo(
            f"gpu-node-{i}", "p4d.24xlarge", "on-demand", gpu_product="NVIDIA-A100-SXM4-80GB", gpu_count=1,
            allocatable={"cpu": 95.0, "memory": 1100 * GI, "nvidia.com/gpu": 1.0},
        )
        for i in (1, 2, 3)
    ]  # fmt: skip
    start = t - timedelta(days=HISTORY_DAYS)
    return RawDataset(
        start, t, tuple(pods), tuple(owners), tuple(samples), tuple(gpus), tuple(ooms), tuple(scalers),
        tuple(nodes),
    )  # fmt: skip


@contextmanager
def served(
    cluster: Cluster, t: datetime, work: Path, timings: dict[str, float], *, keep: bool = False
) -> Iterator[Server]:
    """Writes the history as OpenMetrics, backfills it with promtool and serves it on a free port."""
    with served_many([cluster], t, work, timings, keep=keep) as server:
        yield server


@contextmanager
def served_many(
    clusters: Sequence[Cluster], t: datetime, work: Path, timings: dict[str, float], *, keep: bool = False
) -> Iterator[Server]:
    """Every cluster's history (each in its own namespaces) in one TSDB, served on a free port: written
    and backfilled one cluster at a time, its OpenMetrics files deleted once backfilled unless `keep`
    (so disk holds one cluster's text at a time)."""
    timings.setdefault("write OpenMetrics", 0.0)
    timings.setdefault("promtool backfill", 0.0)
    for i, cluster in enumerate(clusters):
        t0 = time.perf_counter()
        files = write_dataset(dataset(cluster, t), work / f"om-{i}", workers=2)
        t1 = time.perf_counter()
        backfill(files, work / "data", workers=4, promtool=PROMTOOL)  # promtool mostly waits on disk
        if not keep:
            shutil.rmtree(work / f"om-{i}", ignore_errors=True)
        timings["write OpenMetrics"] += t1 - t0
        timings["promtool backfill"] += time.perf_counter() - t1
    t2 = time.perf_counter()
    with running_prometheus(work / "data", retention_days=HISTORY_DAYS + 3) as server:
        timings["prometheus start"] = time.perf_counter() - t2
        yield server


def as_of_supported() -> bool:
    """Whether `podsizer recommend` takes --as-of (MetricsSourceSettings.as_of) yet."""
    return "as_of" in (ROOT / "podsizer" / "settings" / "roles.py").read_text()


def recommend(
    url: str, t: datetime, work: Path, extra: tuple[str, ...] = (), namespaces: Sequence[str] = (NAMESPACE,)
) -> dict[str, object]:
    """`podsizer recommend -o json` against the served history of `namespaces`, its window ending at T."""
    cmd = [
        str(Path(sys.executable).with_name("podsizer")), "recommend", "-o", "json", "--no-progress",
        "--source", "prometheus", "--prometheus-url", url, "--namespaces", ",".join(namespaces),
        "--window-days", str(HISTORY_DAYS), "--store-file", str(work / "recommendations.json"), *extra,
    ]  # fmt: skip
    if as_of_supported():
        cmd += ["--as-of", t.strftime("%Y-%m-%dT%H:%M:%SZ")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODSIZER_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=work, check=False, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"podsizer recommend failed ({done.returncode}): {done.stderr[-3000:]}")
    doc: dict[str, object] = json.loads(done.stdout)
    return doc
