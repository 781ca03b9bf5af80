"""Raw, per-pod time series as a cluster would expose them: what every source produces (demo, file,
DCGM scrape, Prometheus) and the one aggregation (aggregate.py) consumes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from podsizer.owners import Skipped
from recommender.model import Autoscaler, FloatArray, NodeInfo


@dataclass(frozen=True)
class PodInfo:
    """A pod's identity: owner reference, labels, node, and the resources its spec asks for (base units)."""

    namespace: str
    name: str
    node: str
    owner_kind: str | None
    owner_name: str | None
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    requests: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    limits: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    init_containers: tuple[str, ...] = ()


@dataclass(frozen=True)
class OwnerLink:
    """A controller link above the pod: ReplicaSet -> Deployment|Rollout, ReplicationController -> DC,
    Job -> CronJob; an empty owner_kind: the object is known and has no controller (a bare Job)."""

    namespace: str
    kind: str
    name: str
    owner_kind: str
    owner_name: str


@dataclass(frozen=True, eq=False)
class ContainerSamples:
    """CPU (cores, instantaneous rate) and memory working set (bytes) of one container of one pod.

    Either the raw samples (samples=None: one per timestamp with a value) or a pre-reduced series, one
    point per step: the step's CPU rate and peak working set, from `samples` raw samples (Prometheus).
    """

    namespace: str
    pod: str
    container: str
    timestamps: FloatArray
    cpu_cores: FloatArray
    memory_bytes: FloatArray
    samples: int | None = None
    cpu_resets: int = 0
    """Decreases of the CPU counter among the raw samples behind the series (each a reset); 0 where the
    source cannot tell (range queries: Prometheus' rate() hides them)."""


@dataclass(frozen=True, eq=False)
class GpuSamples:
    """dcgm-exporter series for one GPU (or MIG instance) attached to one container; None = not exported."""

    namespace: str
    pod: str
    container: str
    hostname: str
    gpu_index: str
    uuid: str
    model_name: str
    timestamps: FloatArray
    fb_used_mib: FloatArray
    fb_free_mib: FloatArray
    fb_reserved_mib: float = 0.0
    sm_active: FloatArray | None = None
    gr_engine_active: FloatArray | None = None
    gpu_util_percent: FloatArray | None = None
    dram_active: FloatArray | None = None
    mig_profile: str | None = None
    mig_instance_id: str | None = None


@dataclass(frozen=True)
class OomKill:
    """A container terminated with reason OOMKilled, and its working set just before."""

    namespace: str
    pod: str
    container: str
    at: datetime
    memory_bytes: float


@dataclass(frozen=True)
class RawDataset:
    """Everything a cluster would tell us, before aggregation."""

    start: datetime
    end: datetime
    pods: tuple[PodInfo, ...]
    owners: tuple[OwnerLink, ...]
    containers: tuple[ContainerSamples, ...]
    gpus: tuple[GpuSamples, ...] = ()
    ooms: tuple[OomKill, ...] = ()
    autoscalers: tuple[Autoscaler, ...] = ()
    nodes: tuple[NodeInfo, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    """What the source itself left out (an empty namespace), passed on to the snapshot."""
    cluster: str = ""
    """The cluster these series come from (aggregate puts every workload in it); "" for one cluster."""
