"""Writes a RawDataset as the OpenMetrics text real exporters expose, one file per 2 h block, for promtool."""

from __future__ import annotations

import multiprocessing
import subprocess
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from recommender.input.prometheus.labels import ksm_label_name
from recommender.model import FloatArray
from recommender.model.raw import GpuSamples, RawDataset
from recommender.model.timegrid import bucket_index, floor_to

BLOCK_SECONDS = 7200
"""promtool cuts blocks at 2 h boundaries; one file per block keeps its cost linear (FACTS.md)."""

DcgmStyle = Literal["current", "exported", "old"]
"""dcgm-exporter label conventions: pod labels as-is, scraped without honor_labels, --use-old-namespace."""

MetricType = Literal["counter", "gauge"]


@dataclass(frozen=True, eq=False)
class Series:
    """One labelled series; NaN values are not written."""

    labels: Mapping[str, str]
    timestamps: FloatArray
    values: FloatArray
    integer: bool = False


@dataclass(frozen=True, eq=False)
class Family:
    """A metric family; for counters `name` is without `_total`, samples get the suffix."""

    name: str
    type: MetricType
    help: str
    series: list[Series] = field(default_factory=list)


def escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def series_prefix(sample_name: str, labels: Mapping[str, str]) -> str:
    body = ",".join(f'{k}="{escape(v)}"' for k, v in labels.items())
    return f"{sample_name}{{{body}}} "


def _timestamps_text(ts: FloatArray) -> list[str]:
    if np.all(ts == np.floor(ts)):
        return [f" {t}\n" for t in ts.astype(np.int64).tolist()]
    return [f" {t:.3f}\n" for t in ts.tolist()]


def format_rows(prefixes: Sequence[str], timestamps: FloatArray, values: FloatArray, integer: bool) -> str:
    """Sample lines for series sharing timestamps: values is (len(prefixes), len(timestamps)); NaN skipped."""
    tss = _timestamps_text(timestamps)
    out: list[str] = []
    rows = np.rint(values).astype(np.int64) if integer else values
    finite = np.isfinite(values)
    for prefix, row, ok in zip(prefixes, rows.tolist(), finite, strict=True):
        if ok.all():
            out.append("".join([prefix + repr(v) + t for v, t in zip(row, tss, strict=True)]))
        else:
            out.append("".join([prefix + repr(v) + t for v, t, k in zip(row, tss, ok, strict=True) if k]))
    return "".join(out)


def family_header(f: Family) -> str:
    return f"# HELP {f.name} {f.help}\n# TYPE {f.name} {f.type}\n"


def window_text(families: Iterable[Family], lo: float, hi: float) -> str:
    """The OpenMetrics text of every sample with lo <= timestamp < hi ('' when there are none)."""
    parts: list[str] = []
    any_samples = False
    for f in families:
        sample_name = f.name + "_total" if f.type == "counter" else f.name
        chunk: list[str] = []
        for s in f.series:
            a, b = np.searchsorted(s.timestamps, [lo, hi], side="left")
            if b > a:
                prefix = series_prefix(sample_name, s.labels)
                chunk.append(format_rows([prefix], s.timestamps[a:b], s.values[None, a:b], s.integer))
        if chunk:
            any_samples = True
            parts.append(family_header(f))
            parts.extend(chunk)
    return "".join(parts) + "# EOF\n" if any_samples else ""


def block_windows(start: float, end: float) -> list[tuple[float, float]]:
    """The 2 h-aligned windows [lo, hi) covering [start, end]."""
    first = floor_to(start, BLOCK_SECONDS)
    count = int(bucket_index(np.array([end]), first, BLOCK_SECONDS)[0]) + 1
    return [(first + k * BLOCK_SECONDS, first + (k + 1) * BLOCK_SECONDS) for k in range(count)]


def run_forked(jobs: Sequence[int], work: Callable[[int], None], workers: int) -> None:
    """Runs work(job) for every job in `workers` forked processes (no pickling of the data)."""
    if workers <= 1 or len(jobs) <= 1:
        for j in jobs:
            work(j)
        return
    ctx = multiprocessing.get_context("fork")

    def chunk(part: Sequence[int]) -> None:
        for j in part:
            work(j)

    procs = [ctx.Process(target=chunk, args=(jobs[i::workers],)) for i in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    failed = [p.exitcode for p in procs if p.exitcode != 0]
    if failed:
        raise RuntimeError(f"{len(failed)} OpenMetrics writer process(es) failed (exit codes {failed})")


def write_families(
    families: Sequence[Family], out_dir: Path, start: float, end: float, *, workers: int = 2
) -> list[Path]:
    """One `<block-start>.om` file per 2 h window that has samples, written in parallel."""
    out_dir.mkdir(parents=True, exist_ok=True)
    windows = block_windows(start, end)

    def write(i: int) -> None:
        lo, hi = windows[i]
        text = window_text(families, lo, hi)
        if text:
            (out_dir / f"{int(lo)}.om").write_text(text)

    run_forked(list(range(len(windows))), write, workers)
    return sorted(out_dir.glob("*.om"))


def backfill(files: Sequence[Path], data_dir: Path, *, workers: int = 2, promtool: str = "promtool") -> None:
    """`promtool tsdb create-blocks-from openmetrics` over every file, `workers` at a time."""
    data_dir.mkdir(parents=True, exist_ok=True)

    def one(path: Path) -> None:
        cmd = [promtool, "tsdb", "create-blocks-from", "openmetrics", str(path), str(data_dir)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout)[-2000:]
            raise RuntimeError(f"promtool failed on {path} (exit {done.returncode}): {tail}")

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        list(pool.map(one, files))


# ---- RawDataset -> exporter families ------------------------------------------------------------

_UNITS = {"cpu": "core", "memory": "byte"}
# An owner link's kind -> kube-state-metrics' owner series and the label holding the object's name.
_OWNER_SERIES = {
    "ReplicaSet": ("kube_replicaset_owner", "replicaset"),
    "ReplicationController": ("kube_replicationcontroller_owner", "replicationcontroller"),
    "Job": ("kube_job_owner", "job_name"),
}


def ksm_resource(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name)


def _pod_uid(ns: str, pod: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"pod/{ns}/{pod}"))


def _const(labels: Mapping[str, str], grid: FloatArray, value: float = 1.0) -> Series:
    return Series(dict(labels), grid, np.full(grid.size, value))


class _Families:
    def __init__(self) -> None:
        self.by_name: dict[str, Family] = {}

    def add(self, name: str, mtype: MetricType, help_: str, series: Series) -> None:
        fam = self.by_name.get(name)
        if fam is None:
            fam = self.by_name[name] = Family(name, mtype, help_)
        fam.series.append(series)


def _dcgm_labels(g: GpuSamples, style: DcgmStyle) -> dict[str, str]:
    base = {"gpu": g.gpu_index}
    if style == "old":
        base["uuid"] = g.uuid
    else:
        base["UUID"] = g.uuid
    base |= {"pci_bus_id": f"00000000:{int(g.gpu_index or 0) + 7:02X}:00.0", "device": f"nvidia{g.gpu_index}"}
    base["modelName"] = g.model_name
    base["hostname" if style == "exported" else "Hostname"] = g.hostname
    base["DCGM_FI_DRIVER_VERSION"] = "595.58.03"
    if g.mig_profile:
        base["GPU_I_PROFILE"] = g.mig_profile
        base["GPU_I_ID"] = g.mig_instance_id or "0"
    if style == "old":
        base |= {"container_name": g.container, "pod_name": g.pod, "pod_namespace": g.namespace}
    elif style == "exported":
        base |= {
            "exported_container": g.container,
            "exported_namespace": g.namespace,
            "exported_pod": g.pod,
            "container": "nvidia-dcgm-exporter",
            "namespace": "gpu-operator",
            "pod": f"nvidia-dcgm-exporter-{g.hostname[-5:]}",
            "instance": f"{g.hostname}:9400",
            "job": "nvidia-dcgm-exporter",
        }
    else:
        base |= {"container": g.container, "namespace": g.namespace, "pod": g.pod}
    return base


_DCGM_HELP = {
    "DCGM_FI_DEV_FB_USED": "Framebuffer memory used (in MiB).",
    "DCGM_FI_DEV_FB_FREE": "Framebuffer memory free (in MiB).",
    "DCGM_FI_DEV_FB_RESERVED": "Framebuffer memory reserved (in MiB).",
    "DCGM_FI_PROF_SM_ACTIVE": "The ratio of cycles an SM has at least 1 warp assigned.",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "Ratio of time the graphics engine is active.",
    "DCGM_FI_DEV_GPU_UTIL": "GPU utilization (in %).",
    "DCGM_FI_PROF_DRAM_ACTIVE": (
        "Ratio of cycles the device memory interface is active sending or receiving data."
    ),
}


def dataset_families(
    ds: RawDataset,
    *,
    info_step_s: float = 300.0,
    dcgm_styles: Mapping[str, DcgmStyle] | None = None,
) -> list[Family]:
    """cAdvisor, kube-state-metrics and dcgm-exporter families for a RawDataset.

    Info-style KSM series (value 1 or a constant) are written every info_step_s: queries read them with
    last_over_time, so a coarser step only saves backfill time. dcgm_styles maps GPU UUID -> label style.
    """
    fams = _Families()
    t0, t1 = ds.start.timestamp(), ds.end.timestamp()
    styles = dcgm_styles or {}
    lifetimes: dict[tuple[str, str], tuple[float, float]] = {}
    for c in ds.containers:
        if c.timestamps.size:
            lo, hi = float(c.timestamps[0]), float(c.timestamps[-1])
            prev = lifetimes.get((c.namespace, c.pod), (lo, hi))
            lifetimes[(c.namespace, c.pod)] = (min(prev[0], lo), max(prev[1], hi))

    def grid(ns: str, pod: str) -> FloatArray:
        lo, hi = lifetimes.get((ns, pod), (t0, t1))
        g = np.arange(lo, hi + 1e-9, info_step_s)
        return g if g.size and g[-1] == hi else np.append(g, hi)

    nodes = {p.namespace + "/" + p.name: p.node for p in ds.pods}
    for c in ds.containers:
        node = nodes.get(f"{c.namespace}/{c.pod}", "")
        labels = {
            "container": c.container,
            "id": f"/kubepods/pod{_pod_uid(c.namespace, c.pod)}/{c.container}",
            "image": f"registry.example.com/{c.container}:latest",
            "instance": node,
            "job": "kubelet",
            "metrics_path": "/metrics/cadvisor",
            "name": f"k8s_{c.container}_{c.pod}_{c.namespace}_0",
            "namespace": c.namespace,
            "node": node,
            "pod": c.pod,
        }
        dt = np.diff(c.timestamps, prepend=c.timestamps[:1])
        counter = np.cumsum(np.nan_to_num(c.cpu_cores) * dt)
        counter[~np.isfinite(c.cpu_cores)] = np.nan
        fams.add(
            "container_cpu_usage_seconds",
            "counter",
            "Cumulative cpu time consumed in seconds.",
            Series(labels, c.timestamps, counter),
        )
        fams.add(
            "container_memory_working_set_bytes",
            "gauge",
            "Current working set in bytes.",
            Series(labels, c.timestamps, c.memory_bytes, integer=True),
        )

    for p in ds.pods:
        g = grid(p.namespace, p.name)
        uid = _pod_uid(p.namespace, p.name)
        base = {"namespace": p.namespace, "pod": p.name, "uid": uid}
        owner = {
            "owner_kind": p.owner_kind or "<none>",
            "owner_name": p.owner_name or "<none>",
            "owner_is_controller": "true" if p.owner_kind else "<none>",
        }
        fams.add("kube_pod_owner", "gauge", "Information about the Pod's owner.", _const(base | owner, g))
        plabels = base | {ksm_label_name(k): v for k, v in p.labels.items()}
        fams.add(
            "kube_pod_labels",
            "gauge",
            "Kubernetes labels converted to Prometheus labels.",
            _const(plabels, g),
        )
        for container in p.init_containers:
            fams.add(
                "kube_pod_init_container_info",
                "gauge",
                "Information about an init container in a pod.",
                _const(base | {"container": container, "image": f"registry.example.com/{container}"}, g),
            )
        if p.annotations:
            ann = base | {ksm_label_name(k, "annotation_"): v for k, v in p.annotations.items()}
            fams.add("kube_pod_annotations", "gauge", "Kubernetes annotations converted.", _const(ann, g))
        for kind, per_container in (("requests", p.requests), ("limits", p.limits)):
            for container, resources in per_container.items():
                for res, value in resources.items():
                    lab = base | {
                        "container": container,
                        "node": p.node,
                        "resource": ksm_resource(res),
                        "unit": _UNITS.get(res, "integer"),
                    }
                    fams.add(
                        f"kube_pod_container_resource_{kind}",
                        "gauge",
                        f"The number of {kind} resource requested by a container.",
                        _const(lab, g, value),
                    )

    for o in ds.ooms:
        lab = {
            "namespace": o.namespace,
            "pod": o.pod,
            "uid": _pod_uid(o.namespace, o.pod),
            "container": o.container,
            "reason": "OOMKilled",
        }
        lo = o.at.timestamp()
        g = np.arange(lo, max(lo, lifetimes.get((o.namespace, o.pod), (t0, t1))[1]) + 1e-9, info_step_s)
        fams.add(
            "kube_pod_container_status_last_terminated_reason",
            "gauge",
            "Describes the last reason the container was in terminated state.",
            _const(lab, g),
        )

    full = np.arange(t0, t1 + 1e-9, info_step_s)
    for link in ds.owners:
        metric, label = _OWNER_SERIES.get(link.kind, _OWNER_SERIES["ReplicationController"])
        lab = {
            "namespace": link.namespace,
            label: link.name,
            "owner_kind": link.owner_kind or "<none>",  # a bare Job: KSM's "<none>"
            "owner_name": link.owner_name or "<none>",
            "owner_is_controller": "true" if link.owner_kind else "<none>",
        }
        fams.add(metric, "gauge", f"Information about the {link.kind}'s owner.", _const(lab, full))

    for a in ds.autoscalers:
        hpa = f"keda-hpa-{a.name}" if a.kind == "ScaledObject" else a.name
        base = {"namespace": a.workload.namespace, "horizontalpodautoscaler": hpa}
        info = base | {
            "scaletargetref_api_version": a.workload.api_version,
            "scaletargetref_kind": a.workload.kind,
            "scaletargetref_name": a.workload.name,
        }
        fams.add(
            "kube_horizontalpodautoscaler_info",
            "gauge",
            "Information about this autoscaler.",
            _const(info, full),
        )
        for metric_name, frac in a.target_utilization.items():
            lab = base | {"metric_name": metric_name, "metric_target_type": "utilization"}
            fams.add(
                "kube_horizontalpodautoscaler_spec_target_metric",
                "gauge",
                "The metric specifications used by this autoscaler.",
                _const(lab, full, frac * 100.0),
            )
        replicas: tuple[tuple[str, int | None], ...] = (
            ("spec_min_replicas", a.min_replicas),
            ("spec_max_replicas", a.max_replicas),
            ("status_current_replicas", a.current_replicas),
        )
        for metric, count in replicas:
            if count is not None:
                fams.add(
                    f"kube_horizontalpodautoscaler_{metric}",
                    "gauge",
                    f"HPA {metric.replace('_', ' ')}.",
                    _const(base, full, float(count)),
                )

    for n in ds.nodes:
        nl = dict(n.labels)
        if n.instance_type:
            nl.setdefault("node.kubernetes.io/instance-type", n.instance_type)
        if n.capacity_type == "spot" and not nl:
            nl["karpenter.sh/capacity-type"] = "spot"
        elif n.capacity_type == "spot":
            nl.setdefault("karpenter.sh/capacity-type", "spot")
        if n.gpu_product:
            nl.setdefault("nvidia.com/gpu.product", n.gpu_product)
        if n.gpu_count:
            nl.setdefault("nvidia.com/gpu.count", str(n.gpu_count))
        if n.gpu_memory_mib:
            nl.setdefault("nvidia.com/gpu.memory", str(int(n.gpu_memory_mib)))
        if n.region:
            nl.setdefault("topology.kubernetes.io/region", n.region)
        lab = {"node": n.name} | {ksm_label_name(k): v for k, v in nl.items()}
        fams.add(
            "kube_node_labels",
            "gauge",
            "Kubernetes labels converted to Prometheus labels.",
            _const(lab, full),
        )
        info = {"node": n.name, "kernel_version": "5.14.0", "os_image": "Red Hat Enterprise Linux CoreOS"}
        fams.add("kube_node_info", "gauge", "Information about a cluster node.", _const(info, full))
        for res, value in sorted(n.allocatable.items()):
            alloc = {"node": n.name, "resource": ksm_resource(res), "unit": _UNITS.get(res, "integer")}
            fams.add(
                "kube_node_status_allocatable",
                "gauge",
                "The allocatable for different resources of a node that are available for scheduling.",
                _const(alloc, full, value),
            )

    for gs in ds.gpus:
        style: DcgmStyle = styles.get(gs.uuid, "current")
        lab = _dcgm_labels(gs, style)
        metrics: list[tuple[str, FloatArray | None, bool]] = [
            ("DCGM_FI_DEV_FB_USED", gs.fb_used_mib, True),
            ("DCGM_FI_DEV_FB_FREE", gs.fb_free_mib, True),
            ("DCGM_FI_DEV_FB_RESERVED", np.full(gs.timestamps.size, gs.fb_reserved_mib), True),
            ("DCGM_FI_PROF_SM_ACTIVE", gs.sm_active, False),
            ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", gs.gr_engine_active, False),
            ("DCGM_FI_DEV_GPU_UTIL", gs.gpu_util_percent, True),
            ("DCGM_FI_PROF_DRAM_ACTIVE", gs.dram_active, False),
        ]
        for metric, values, integer in metrics:
            if values is None:
                continue
            name = metric.lower() if style == "old" else metric
            fams.add(name, "gauge", _DCGM_HELP[metric], Series(lab, gs.timestamps, values, integer))

    return list(fams.by_name.values())


def write_dataset(
    ds: RawDataset,
    out_dir: Path,
    *,
    workers: int = 2,
    info_step_s: float = 300.0,
    dcgm_styles: Mapping[str, DcgmStyle] | None = None,
) -> list[Path]:
    """Writes ds as per-2h OpenMetrics files under out_dir; returns them for backfill()."""
    families = dataset_families(ds, info_step_s=info_step_s, dcgm_styles=dcgm_styles)
    return write_families(families, out_dir, ds.start.timestamp(), ds.end.timestamp(), workers=workers)


__all__ = [
    "BLOCK_SECONDS",
    "DcgmStyle",
    "Family",
    "Series",
    "backfill",
    "dataset_families",
    "format_rows",
    "write_dataset",
    "write_families",
]
