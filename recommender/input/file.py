"""A metrics source reading a RawDataset from a JSON file, and the writer for that format.

Format (`podsizer-raw/v1`; a `.gz` file name means gzip). All times are epoch seconds (numbers);
sample arrays are JSON arrays of numbers where `null` is a missing sample (NaN). cpu in cores, memory in
bytes, framebuffer in MiB, activity ratios 0-1, GPU_UTIL in percent. Keys marked ? are optional.

    {
      "format": "podsizer-raw/v1",
      "start": 1764000000, "end": 1764604800,
      "pods": [{"namespace": "shop", "name": "web-7d9f8c6b5-x2x9z", "node": "node-1",
                "owner_kind": "ReplicaSet" | null, "owner_name": "web-7d9f8c6b5" | null,
                "labels"?: {...}, "annotations"?: {...},
                "requests"?: {"<container>": {"cpu": 0.25 | "250m", "memory": 536870912 | "512Mi"}},
                "limits"?: {...same...}, "init_containers"?: ["<container>"]}],
      "owners": [{"namespace", "kind": "ReplicaSet", "name", "owner_kind": "Deployment", "owner_name"}],
      "containers": [{"namespace", "pod", "container",
                      "timestamps": [...], "cpu_cores": [...], "memory_bytes": [...]}],
      "gpus"?: [{"namespace", "pod", "container", "hostname", "gpu_index", "uuid", "model_name",
                 "timestamps", "fb_used_mib", "fb_free_mib", "fb_reserved_mib"?: 0,
                 "sm_active"?, "gr_engine_active"?, "gpu_util_percent"?, "dram_active"?: [...] | null,
                 "mig_profile"?: "1g.10gb" | null, "mig_instance_id"?: "1" | null}],
      "ooms"?: [{"namespace", "pod", "container", "at": 1764300000, "memory_bytes": 536000000}],
      "autoscalers"?: [{"workload": {"namespace", "kind", "name"},
                        "kind": "HorizontalPodAutoscaler" | "ScaledObject", "name",
                        "min_replicas", "max_replicas", "target_utilization": {"cpu": 0.7},
                        "current_replicas"?: 3 | null}],
      "nodes"?: [{"name", "instance_type": "p4d.24xlarge" | null, "capacity_type": "on-demand" | "spot",
                  "gpu_product"?, "gpu_count"?: 0, "gpu_memory_mib"?, "region"?, "labels"?: {...},
                  "allocatable"?: {"cpu": 15.89, "memory": 61740154880, "nvidia.com/gpu": 8}}]
    }

Every array of one series must have the timestamps' length. A bad file raises SourceError naming the
file and the field (e.g. `containers[3].cpu_cores: 2016 values, timestamps has 2015`).
"""

from __future__ import annotations

import gzip
import math
from collections.abc import Mapping
from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import numpy as np
import orjson

from podsizer.api import quantity
from podsizer.api.identity import WorkloadRef
from recommender.model import Autoscaler, FloatArray, NodeInfo, Progress, SourceError, UsageSnapshot
from recommender.model.aggregate import aggregate
from recommender.model.raw import ContainerSamples, GpuSamples, OomKill, OwnerLink, PodInfo, RawDataset
from recommender.model.recency import DEFAULT as DEFAULT_RECENCY
from recommender.model.recency import Recency
from recommender.model.samples import clip

FORMAT = "podsizer-raw/v1"
_NUMERIC = {int, float, type(None)}


class _Bad(Exception):
    """A problem at a field path; turned into SourceError with the file name."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")


def _type_name(v: object) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(v), type(v).__name__
    )


class _Obj:
    """A JSON object at a path, with typed getters that raise _Bad naming the field."""

    def __init__(self, value: object, where: str) -> None:
        if not isinstance(value, dict):
            raise _Bad(where, f"expected an object, got {_type_name(value)}")
        self.d: dict[str, Any] = value
        self.where = where

    def _at(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def get(self, key: str, *, optional: bool = False, default: object = None) -> Any:
        if key not in self.d:
            if optional:
                return default
            raise _Bad(self._at(key), "missing key")
        return self.d[key]

    def str_(self, key: str, *, optional: bool = False, nullable: bool = False) -> str | None:
        v = self.get(key, optional=optional)
        if v is None and (optional or nullable):
            return None
        if not isinstance(v, str):
            raise _Bad(self._at(key), f"expected a string, got {_type_name(v)}")
        return v

    def req_str(self, key: str) -> str:
        v = self.str_(key)
        assert v is not None
        return v

    def num(self, key: str, *, optional: bool = False, default: float | None = None) -> float | None:
        v = self.get(key, optional=optional, default=default)
        if v is None:
            if optional:
                return default
            raise _Bad(self._at(key), "expected a number, got null")
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise _Bad(self._at(key), f"expected a number, got {_type_name(v)}")
        return float(v)

    def req_num(self, key: str) -> float:
        v = self.num(key)
        assert v is not None
        return v

    def int_(self, key: str, *, optional: bool = False) -> int | None:
        v = self.num(key, optional=optional)
        if v is None:
            return None
        if v != int(v):
            raise _Bad(self._at(key), f"expected a whole number, got {v}")
        return int(v)

    def list_(self, key: str, *, optional: bool = False) -> list[Any]:
        v = self.get(key, optional=optional, default=[])
        if not isinstance(v, list):
            raise _Bad(self._at(key), f"expected an array, got {_type_name(v)}")
        return v

    def objs(self, key: str, *, optional: bool = False) -> list[_Obj]:
        return [
            _Obj(item, f"{self._at(key)}[{i}]") for i, item in enumerate(self.list_(key, optional=optional))
        ]

    def str_map(self, key: str) -> dict[str, str]:
        v = self.get(key, optional=True, default={})
        if not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values()):
            raise _Bad(self._at(key), "expected an object of strings")
        return cast(dict[str, str], v)

    def array(self, key: str, *, optional: bool = False) -> FloatArray | None:
        v = self.get(key, optional=optional)
        if v is None:
            if optional:
                return None
            raise _Bad(self._at(key), "expected an array of numbers, got null")
        if not isinstance(v, list):
            raise _Bad(self._at(key), f"expected an array of numbers, got {_type_name(v)}")
        kinds = set(map(type, v))
        if not kinds <= _NUMERIC:
            bad = next(i for i, x in enumerate(v) if type(x) not in _NUMERIC)
            raise _Bad(f"{self._at(key)}[{bad}]", f"expected a number or null, got {_type_name(v[bad])}")
        return np.array(v, dtype=np.float64)

    def resources(self, key: str) -> dict[str, dict[str, float]]:
        raw = self.get(key, optional=True, default={})
        if not isinstance(raw, dict):
            raise _Bad(self._at(key), f"expected an object, got {_type_name(raw)}")
        out: dict[str, dict[str, float]] = {}
        for container, per in raw.items():
            res = _Obj(per, f"{self._at(key)}.{container}")
            out[container] = {}
            for name, value in res.d.items():
                if isinstance(value, bool) or not isinstance(value, int | float | str):
                    raise _Bad(f"{res.where}.{name}", f"expected a quantity, got {_type_name(value)}")
                try:
                    out[container][name] = quantity.parse(value)
                except ValueError as exc:
                    raise _Bad(f"{res.where}.{name}", str(exc)) from None
        return out


def _same_length(o: _Obj, ts: FloatArray, arrays: Mapping[str, FloatArray | None]) -> None:
    for name, a in arrays.items():
        if a is not None and a.size != ts.size:
            raise _Bad(f"{o.where}.{name}", f"{a.size} values, timestamps has {ts.size}")


def _epoch(o: _Obj, key: str) -> datetime:
    v = o.req_num(key)
    if not math.isfinite(v):
        raise _Bad(o._at(key), "not a finite time")
    return datetime.fromtimestamp(v, UTC)


def _pod(o: _Obj) -> PodInfo:
    return PodInfo(
        namespace=o.req_str("namespace"),
        name=o.req_str("name"),
        node=o.str_("node", optional=True) or "",
        owner_kind=o.str_("owner_kind", nullable=True, optional=True),
        owner_name=o.str_("owner_name", nullable=True, optional=True),
        labels=o.str_map("labels"),
        annotations=o.str_map("annotations"),
        requests=o.resources("requests"),
        limits=o.resources("limits"),
        init_containers=tuple(str(x) for x in o.list_("init_containers", optional=True)),
    )


def _container(o: _Obj) -> ContainerSamples:
    ts = o.array("timestamps")
    cpu, mem = o.array("cpu_cores"), o.array("memory_bytes")
    assert ts is not None and cpu is not None and mem is not None
    _same_length(o, ts, {"cpu_cores": cpu, "memory_bytes": mem})
    return ContainerSamples(o.req_str("namespace"), o.req_str("pod"), o.req_str("container"), ts, cpu, mem)


def _gpu(o: _Obj) -> GpuSamples:
    ts, used, free = o.array("timestamps"), o.array("fb_used_mib"), o.array("fb_free_mib")
    assert ts is not None and used is not None and free is not None
    optional = {
        k: o.array(k, optional=True)
        for k in ("sm_active", "gr_engine_active", "gpu_util_percent", "dram_active")
    }
    _same_length(o, ts, {"fb_used_mib": used, "fb_free_mib": free, **optional})
    return GpuSamples(
        namespace=o.str_("namespace", optional=True) or "",
        pod=o.str_("pod", optional=True) or "",
        container=o.str_("container", optional=True) or "",
        hostname=o.req_str("hostname"),
        gpu_index=o.req_str("gpu_index"),
        uuid=o.req_str("uuid"),
        model_name=o.req_str("model_name"),
        timestamps=ts,
        fb_used_mib=used,
        fb_free_mib=free,
        fb_reserved_mib=o.num("fb_reserved_mib", optional=True, default=0.0) or 0.0,
        sm_active=optional["sm_active"],
        gr_engine_active=optional["gr_engine_active"],
        gpu_util_percent=optional["gpu_util_percent"],
        dram_active=optional["dram_active"],
        mig_profile=o.str_("mig_profile", optional=True),
        mig_instance_id=o.str_("mig_instance_id", optional=True),
    )


def _autoscaler(o: _Obj) -> Autoscaler:
    w = _Obj(o.get("workload"), o._at("workload"))
    try:
        workload = WorkloadRef(w.req_str("namespace"), w.req_str("kind"), w.req_str("name"))
    except ValueError as exc:
        raise _Bad(w._at("kind"), str(exc)) from None
    kind = o.req_str("kind")
    if kind not in ("HorizontalPodAutoscaler", "ScaledObject"):
        raise _Bad(o._at("kind"), f"expected HorizontalPodAutoscaler or ScaledObject, got {kind!r}")
    target = _Obj(o.get("target_utilization"), o._at("target_utilization"))
    return Autoscaler(
        workload=workload,
        kind=cast(Any, kind),
        name=o.req_str("name"),
        min_replicas=o.int_("min_replicas") or 0,
        max_replicas=o.int_("max_replicas") or 0,
        target_utilization={k: target.req_num(k) for k in target.d},
        current_replicas=o.int_("current_replicas", optional=True),
    )


def _node(o: _Obj) -> NodeInfo:
    capacity = o.req_str("capacity_type")
    if capacity not in ("on-demand", "spot"):
        raise _Bad(o._at("capacity_type"), f"expected on-demand or spot, got {capacity!r}")
    return NodeInfo(
        name=o.req_str("name"),
        instance_type=o.str_("instance_type", optional=True, nullable=True),
        capacity_type=cast(Any, capacity),
        gpu_product=o.str_("gpu_product", optional=True),
        gpu_count=o.int_("gpu_count", optional=True) or 0,
        gpu_memory_mib=o.num("gpu_memory_mib", optional=True),
        region=o.str_("region", optional=True),
        labels=o.str_map("labels"),
        allocatable=_allocatable(o),
    )


def _allocatable(o: _Obj) -> dict[str, float]:
    """The node's allocatable cpu cores, memory bytes and GPUs ({} when absent: ceilings stay configured)."""
    alloc = _Obj(o.get("allocatable", optional=True, default={}), o._at("allocatable"))
    return {k: alloc.req_num(k) for k in alloc.d}


def parse_dataset(data: bytes, name: str) -> RawDataset:
    """Parse the JSON text of a dataset; `name` appears in every error."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise SourceError(f"{name}: not JSON: {exc}") from None
    try:
        root = _Obj(doc, "")
        fmt = root.get("format", optional=True, default=FORMAT)
        if fmt != FORMAT:
            raise _Bad("format", f"expected {FORMAT!r}, got {fmt!r}")
        return RawDataset(
            start=_epoch(root, "start"),
            end=_epoch(root, "end"),
            pods=tuple(_pod(o) for o in root.objs("pods")),
            owners=tuple(
                OwnerLink(
                    o.req_str("namespace"),
                    o.req_str("kind"),
                    o.req_str("name"),
                    o.req_str("owner_kind"),
                    o.req_str("owner_name"),
                )
                for o in root.objs("owners")
            ),
            containers=tuple(_container(o) for o in root.objs("containers")),
            gpus=tuple(_gpu(o) for o in root.objs("gpus", optional=True)),
            ooms=tuple(
                OomKill(
                    o.req_str("namespace"),
                    o.req_str("pod"),
                    o.req_str("container"),
                    _epoch(o, "at"),
                    o.req_num("memory_bytes"),
                )
                for o in root.objs("ooms", optional=True)
            ),
            autoscalers=tuple(_autoscaler(o) for o in root.objs("autoscalers", optional=True)),
            nodes=tuple(_node(o) for o in root.objs("nodes", optional=True)),
        )
    except _Bad as exc:
        raise SourceError(f"{name}: {exc}") from None


def load_dataset(path: str | Path) -> RawDataset:
    """Read a dataset file (gzip when the name ends in .gz)."""
    p = Path(path)
    try:
        data = p.read_bytes()
        if p.suffix == ".gz":
            data = gzip.decompress(data)
    except (OSError, EOFError) as exc:
        raise SourceError(f"{p}: cannot read: {exc}") from None
    return parse_dataset(data, str(p))


def _plain(value: object) -> object:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, WorkloadRef):
        return {"namespace": value.namespace, "kind": value.kind, "name": value.name}
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _record(obj: object) -> dict[str, object]:
    return {f.name: _plain(getattr(obj, f.name)) for f in fields(cast(Any, obj))}


def dataset_to_json(raw: RawDataset) -> bytes:
    """The dataset in the file format (NaN and infinities written as null)."""
    doc = {
        "format": FORMAT,
        "start": raw.start.timestamp(),
        "end": raw.end.timestamp(),
        "pods": [_record(p) for p in raw.pods],
        "owners": [_record(o) for o in raw.owners],
        "containers": [_record(c) for c in raw.containers],
        "gpus": [_record(g) for g in raw.gpus],
        "ooms": [_record(o) for o in raw.ooms],
        "autoscalers": [_record(a) for a in raw.autoscalers],
        "nodes": [_record(n) for n in raw.nodes],
    }
    return orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY)


def dump_dataset(raw: RawDataset, path: str | Path) -> None:
    """Write the dataset to `path` (gzip when the name ends in .gz)."""
    p = Path(path)
    data = dataset_to_json(raw)
    p.write_bytes(gzip.compress(data, compresslevel=6) if p.suffix == ".gz" else data)


class FileSource:
    """MetricsSource over a dataset file; the file is read once, on the first collect."""

    name = "file"

    def __init__(self, path: str | Path, *, recency: Recency = DEFAULT_RECENCY) -> None:
        self.path = Path(path)
        self.recency = recency
        self._raw: RawDataset | None = None

    def dataset(self) -> RawDataset:
        if self._raw is None:
            self._raw = load_dataset(self.path)
        return self._raw

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
        if progress:
            progress(0, 2, f"reading {self.path}")
        raw = self.dataset()
        if progress:
            progress(1, 2, "aggregating")
        snap = aggregate(clip(raw, start, end), source=f"file:{self.path}", recency=self.recency)
        if progress:
            progress(2, 2, "done")
        return snap
