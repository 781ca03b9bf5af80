"""dcgm-exporter series: one label normalisation for every label style, and one way to make GpuSamples.

Styles (FACTS.md): `Hostname`/`hostname` and `UUID`/`uuid` in any case; the GPU user as `namespace`/`pod`/
`container`, or `pod_namespace`/`pod_name`/`container_name` (--use-old-namespace), or `exported_*` when
Prometheus scraped the exporter without honor_labels (then `namespace`/`pod`/`container` name the
exporter itself and are ignored); MIG `GPU_I_PROFILE`/`GPU_I_ID`; time-slicing `vgpu`. A series labelled
only with the exporter's own pod is a GPU attached to no pod. In a multi-cluster store the cluster label
(named exactly as configured, case-sensitive like every PromQL label) is kept as canonical `cluster`, so
two clusters' GPUs with the same host and UUID never become one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

import numpy as np

from recommender.model import FloatArray
from recommender.model.raw import GpuSamples

# Metric (canonical, upper case; old exporters write it in lower case) -> GpuSamples field.
METRICS: Mapping[str, str] = {
    "DCGM_FI_PROF_SM_ACTIVE": "sm_active",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "gr_engine_active",
    "DCGM_FI_DEV_GPU_UTIL": "gpu_util_percent",
    "DCGM_FI_PROF_DRAM_ACTIVE": "dram_active",
    "DCGM_FI_DEV_FB_USED": "fb_used_mib",
    "DCGM_FI_DEV_FB_FREE": "fb_free_mib",
    "DCGM_FI_DEV_FB_RESERVED": "fb_reserved_mib",
}

# Canonical label -> exporter spellings (lower case), first non-empty wins.
_ALIASES: Mapping[str, tuple[str, ...]] = {
    "hostname": ("hostname",),
    "uuid": ("uuid",),
    "gpu": ("gpu",),
    "model": ("modelname",),
    "mig_profile": ("gpu_i_profile",),
    "mig_instance": ("gpu_i_id",),
    "vgpu": ("vgpu",),
}
_POD_LABELS = ("namespace", "pod", "container")
_OLD = {"namespace": "pod_namespace", "pod": "pod_name", "container": "container_name"}
_EXPORTED = ("exported_namespace", "exported_pod", "exported_container")
# dcgm-exporter's own pod names: series carrying them were labelled with the scrape target, not a GPU user.
_EXPORTER_PODS = ("nvidia-dcgm-exporter", "dcgm-exporter")

GPU_IDENTITY = ("hostname", "uuid", "gpu", "mig_instance", "namespace", "pod", "container", "vgpu", "cluster")
"""The canonical labels that tell one GPU (or MIG instance / time slice) of one container apart."""


def _first(lower: Mapping[str, str], names: tuple[str, ...]) -> str:
    return next((lower[n] for n in names if lower.get(n)), "")


def _pod_labels(lower: Mapping[str, str]) -> dict[str, str]:
    if any(k in lower for k in _EXPORTED):
        own: tuple[str, ...] = ()
        names = {k: (f"exported_{k}", _OLD[k]) for k in _POD_LABELS}
    else:
        own = (lower.get("pod", ""),)
        names = {k: (k, _OLD[k]) for k in _POD_LABELS}
    got = {k: _first(lower, n) for k, n in names.items()}
    if own and own[0].startswith(_EXPORTER_PODS) and got["pod"] == own[0]:
        return {}
    return {k: v for k, v in got.items() if v}


def normalize_labels(labels: Mapping[str, str], cluster_label: str = "") -> dict[str, str]:
    """The canonical label set of one dcgm-exporter series (absent or empty labels left out); with
    cluster_label, that label's value as `cluster`."""
    lower: dict[str, str] = {}
    for k, v in labels.items():
        lower.setdefault(k.lower(), v)
    out = {c: v for c, names in _ALIASES.items() if (v := _first(lower, names))}
    cluster = {"cluster": labels[cluster_label]} if cluster_label and labels.get(cluster_label) else {}
    return out | _pod_labels(lower) | cluster


def gpu_key(canonical: Mapping[str, str]) -> tuple[str, ...]:
    """The identity of one GPU series from its canonical labels (see GPU_IDENTITY)."""
    return tuple(canonical.get(k, "") for k in GPU_IDENTITY)


Series = tuple[str, Mapping[str, str], FloatArray, FloatArray]
"""(metric, canonical labels, timestamps, values) of one dcgm-exporter series."""


def _on_grid(grid: FloatArray, got: tuple[FloatArray, FloatArray] | None) -> FloatArray | None:
    if got is None:
        return None
    ts, vs = got
    out = np.full(grid.size, np.nan)
    out[np.searchsorted(grid, ts)] = vs
    return out


def _one_gpu(labels: Mapping[str, str], fields: Mapping[str, tuple[FloatArray, FloatArray]]) -> GpuSamples:
    grid = np.unique(np.concatenate([ts for ts, _ in fields.values()]))
    nan = np.full(grid.size, np.nan)
    reserved = _on_grid(grid, fields.get("fb_reserved_mib"))
    finite_reserved = reserved[np.isfinite(reserved)] if reserved is not None else np.empty(0)
    used, free = _on_grid(grid, fields.get("fb_used_mib")), _on_grid(grid, fields.get("fb_free_mib"))
    return GpuSamples(
        namespace=labels.get("namespace", ""),
        pod=labels.get("pod", ""),
        container=labels.get("container", ""),
        hostname=labels.get("hostname", ""),
        gpu_index=labels.get("gpu", ""),
        uuid=labels.get("uuid", ""),
        model_name=labels.get("model", ""),
        timestamps=grid,
        fb_used_mib=nan if used is None else used,
        fb_free_mib=nan if free is None else free,
        fb_reserved_mib=float(np.median(finite_reserved)) if finite_reserved.size else 0.0,
        sm_active=_on_grid(grid, fields.get("sm_active")),
        gr_engine_active=_on_grid(grid, fields.get("gr_engine_active")),
        gpu_util_percent=_on_grid(grid, fields.get("gpu_util_percent")),
        dram_active=_on_grid(grid, fields.get("dram_active")),
        mig_profile=labels.get("mig_profile"),
        mig_instance_id=labels.get("mig_instance"),
    )


def gpu_samples(series: Iterable[Series]) -> list[GpuSamples]:
    """One GpuSamples per GPU (or MIG instance / slice) and container, its metrics on one time grid.

    metric is upper or lower case; series of metrics the recommender does not read are ignored."""
    groups: dict[tuple[str, ...], dict[str, tuple[FloatArray, FloatArray]]] = defaultdict(dict)
    meta: dict[tuple[str, ...], Mapping[str, str]] = {}
    for metric, labels, ts, vs in series:
        name = METRICS.get(metric.upper())
        if name is None or ts.size == 0:
            continue
        key = gpu_key(labels)
        prev = groups[key].get(name)
        if prev is not None:  # the same GPU under two series (exporter restart): one time line
            ts, vs = np.concatenate([prev[0], ts]), np.concatenate([prev[1], vs])
            order = np.argsort(ts, kind="stable")
            ts, vs = ts[order], vs[order]
        groups[key][name] = (ts, vs)
        meta.setdefault(key, labels)
    return [_one_gpu(meta[key], groups[key]) for key in sorted(groups)]
