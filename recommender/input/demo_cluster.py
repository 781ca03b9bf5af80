"""A deterministic, realistic demo cluster (RawDataset) so podsizer can be tried without a cluster.

Contents (namespaces and workloads; every series has daily + weekly seasonality and noise):

- shop: Deployment `storefront` (over-provisioned web frontend, 3 replicas), Deployment `checkout-api`
  (under-provisioned; one pod OOMKilled near its 512Mi limit), StatefulSet `postgres` (2 replicas,
  `metrics-exporter` sidecar, `init-chmod` init container), Deployment `search` (HPA, cpu target 0.7;
  replica count follows the daily load, per-replica usage stays steady; a new pod per scale-up).
- platform: DaemonSet `fluent-bit` (log agent, one pod per node), Argo Rollout `api-gateway` (two
  ReplicaSet revisions owned by the Rollout, label rollouts-pod-template-hash), Deployment
  `feature-flags` (started 6 hours ago: too little history, low confidence).
- legacy (OpenShift): DeploymentConfig `billing` (RCs `billing-6` then `billing-7`, rolled out two days
  ago), its deployer pod `billing-7-deploy` and hook pod `billing-7-hook-pre` with big short-lived usage
  (both must be excluded from every aggregate).
- ml (GPUs): StatefulSet `llm-pretrain` (2 pods x 8 H100 on p5.48xlarge spot nodes, SM_ACTIVE exported),
  StatefulSet `bert-finetune` (4 A100 on a p4d.24xlarge on-demand node, default counters:
  GR_ENGINE_ACTIVE only, ~0.35 active), Deployment `reranker` (1 A100, ~3 GiB framebuffer and ~0.06
  activity: fits a 1g.5gb MIG slice), Deployment `embeddings` (2 pods on L40S g6e.xlarge nodes whose
  exporter has no profiling metrics: GPU_UTIL fallback), Deployment `notebook` (an L40S whose SM
  activity is ~0.01 for the last 30 hours: idle). Three A100s of the p4d node are not attached to pods.
- analytics (batch): CronJob `nightly-report` (one Job `nightly-report-<minute>` a day, on the first
  whole UTC hour at least an hour into each day of the window, ~45 minutes of ~1.2 busy cores, memory
  climbing to ~1.6Gi; asks for 2 cores / 3Gi); the pods exist only while a run is active.
- ml (batch): Job `train-resnet` (no CronJob: its own workload), running for the last 10 hours on A100
  GPU 5 (~0.7 active, ~30 GiB framebuffer; unattached before); one run: low confidence.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt

from podsizer.api.identity import WorkloadRef
from podsizer.resources import GPU
from recommender.model import Autoscaler, FloatArray, NodeInfo, Progress, UsageSnapshot
from recommender.model.aggregate import aggregate
from recommender.model.raw import ContainerSamples, GpuSamples, OomKill, OwnerLink, PodInfo, RawDataset
from recommender.model.recency import DEFAULT as DEFAULT_RECENCY
from recommender.model.recency import Recency
from recommender.model.samples import clip
from recommender.model.timegrid import bucket_index, floor_to

MIB = float(1024 * 1024)
GIB = 1024 * MIB
DAY = 86400.0
HOUR = 3600.0
_GPU = GPU
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' name-suffix alphabet
_Resources = dict[str, tuple[dict[str, float], dict[str, float]]]  # container -> (requests, limits)


@dataclass(frozen=True)
class _GpuNode:
    name: str
    instance_type: str
    spot: bool
    product: str  # GFD label value
    model: str  # DCGM modelName
    count: int
    memory_mib: float
    reserved_mib: float
    signals: tuple[str, ...]  # which activity fields this node's exporter exports


_GENERAL_NODES = (
    ("ip-10-0-1-11.ec2.internal", "m6i.4xlarge", False),
    ("ip-10-0-1-12.ec2.internal", "m6i.4xlarge", False),
    ("ip-10-0-1-13.ec2.internal", "m6i.4xlarge", False),
    ("ip-10-0-1-14.ec2.internal", "m6i.4xlarge", True),
)
_A100 = _GpuNode(
    "ip-10-0-2-21.ec2.internal",
    "p4d.24xlarge",
    False,
    "NVIDIA-A100-SXM4-40GB",
    "NVIDIA A100-SXM4-40GB",
    8,
    40960.0,
    512.0,
    ("GR_ENGINE_ACTIVE", "GPU_UTIL"),
)
_H100 = tuple(
    _GpuNode(
        f"ip-10-0-3-3{i}.ec2.internal",
        "p5.48xlarge",
        True,
        "NVIDIA-H100-80GB-HBM3",
        "NVIDIA H100 80GB HBM3",
        8,
        81559.0,
        579.0,
        ("SM_ACTIVE", "GR_ENGINE_ACTIVE", "GPU_UTIL"),
    )
    for i in (1, 2)
)
_L40S_SM = _GpuNode(
    "ip-10-0-4-41.ec2.internal",
    "g6e.xlarge",
    False,
    "NVIDIA-L40S",
    "NVIDIA L40S",
    1,
    46068.0,
    608.0,
    ("SM_ACTIVE", "GR_ENGINE_ACTIVE", "GPU_UTIL"),
)
_L40S_UTIL = tuple(
    _GpuNode(
        f"ip-10-0-4-4{i}.ec2.internal",
        "g6e.xlarge",
        False,
        "NVIDIA-L40S",
        "NVIDIA L40S",
        1,
        46068.0,
        608.0,
        ("GPU_UTIL",),
    )
    for i in (2, 3)
)
_GPU_NODES = (_A100, *_H100, _L40S_SM, *_L40S_UTIL)
_GIB = 2**30
# Allocatable cpu cores and memory bytes per instance type (capacity less EKS' kube/system reserved).
_ALLOCATABLE: dict[str, tuple[float, float]] = {
    "m6i.4xlarge": (15.89, 57.5 * _GIB),
    "p4d.24xlarge": (95.69, 1085.0 * _GIB),
    "p5.48xlarge": (191.45, 1938.0 * _GIB),
    "g6e.xlarge": (3.92, 28.5 * _GIB),
}


def _allocatable(instance_type: str, gpus: int = 0) -> dict[str, float]:
    cpu, memory = _ALLOCATABLE[instance_type]
    return {"cpu": cpu, "memory": memory} | ({_GPU: float(gpus)} if gpus else {})


@dataclass
class _Builder:
    rng: np.random.Generator
    ts: FloatArray
    pods: list[PodInfo] = field(default_factory=list)
    owners: list[OwnerLink] = field(default_factory=list)
    containers: list[ContainerSamples] = field(default_factory=list)
    gpus: list[GpuSamples] = field(default_factory=list)
    ooms: list[OomKill] = field(default_factory=list)
    autoscalers: list[Autoscaler] = field(default_factory=list)
    nodes: list[NodeInfo] = field(default_factory=list)
    gpu_serial: int = 0

    # -- names ---------------------------------------------------------------------------------
    def suffix(self, n: int) -> str:
        return "".join(_ALPHABET[i] for i in self.rng.integers(0, len(_ALPHABET), n))

    def uuid(self) -> str:
        h = "".join(f"{b:02x}" for b in self.rng.integers(0, 256, 16))
        return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"

    # -- shapes --------------------------------------------------------------------------------
    def load(self, mask: slice | FloatArray | None = None) -> FloatArray:
        """0..1 load: low at 02:00 UTC, peak at 14:00 UTC, weekends at 55 %."""
        ts = self.ts if mask is None else self.ts[mask]
        hour = (ts % DAY) / HOUR
        diurnal = 0.5 - 0.5 * np.cos(2 * np.pi * (hour - 2.0) / 24.0)
        weekday = (bucket_index(ts, 0.0, DAY) + 3) % 7  # 1970-01-01 was a Thursday; 0 = Monday
        return np.asarray(diurnal * np.where(weekday >= 5, 0.55, 1.0), dtype=np.float64)

    def noisy(self, values: FloatArray, rel: float, spikes: float = 0.0) -> FloatArray:
        out = values * (1.0 + self.rng.normal(0.0, rel, values.size))
        if spikes:
            out = out * np.where(self.rng.random(values.size) < spikes, 1.8, 1.0)
        return np.asarray(np.maximum(out, 0.0), dtype=np.float64)

    def steady(self, value: float, rel: float, size: int | None = None) -> FloatArray:
        """A flat `value` with relative noise `rel`, over `size` samples (default: the whole window)."""
        return self.noisy(np.full(self.ts.size if size is None else size, value), rel)

    # -- objects -------------------------------------------------------------------------------
    def pod(
        self,
        namespace: str,
        name: str,
        node: str,
        owner: tuple[str, str] | None,
        resources: _Resources,
        *,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        init_containers: tuple[str, ...] = (),
    ) -> None:
        self.pods.append(
            PodInfo(
                namespace=namespace,
                name=name,
                node=node,
                owner_kind=owner[0] if owner else None,
                owner_name=owner[1] if owner else None,
                labels=labels or {},
                annotations=annotations or {},
                requests={c: r for c, (r, _) in resources.items()},
                limits={c: lim for c, (_, lim) in resources.items()},
                init_containers=init_containers,
            )
        )

    def series(
        self, namespace: str, pod: str, container: str, ts: FloatArray, cpu: FloatArray, mem: FloatArray
    ) -> None:
        self.containers.append(ContainerSamples(namespace, pod, container, ts, cpu, mem))

    def steady_series(
        self,
        namespace: str,
        pod: str,
        container: str,
        ts: FloatArray,
        cpu: tuple[float, float],
        mem: tuple[float, float],
    ) -> None:
        """A container at flat cpu and memory levels over `ts`, each given as (value, relative noise)."""
        self.series(namespace, pod, container, ts, self.steady(*cpu, ts.size), self.steady(*mem, ts.size))

    def gpu(
        self,
        node: _GpuNode,
        index: int,
        namespace: str,
        pod: str,
        container: str,
        activity: FloatArray,
        fb_used: FloatArray,
        uuid: str,
    ) -> None:
        n = self.ts.size
        act = np.clip(activity, 0.0, 1.0)
        used = np.clip(fb_used, 0.0, node.memory_mib - node.reserved_mib)
        self.gpus.append(
            GpuSamples(
                namespace=namespace,
                pod=pod,
                container=container,
                hostname=node.name,
                gpu_index=str(index),
                uuid=uuid,
                model_name=node.model,
                timestamps=self.ts,
                fb_used_mib=np.round(used),
                fb_free_mib=node.memory_mib - node.reserved_mib - np.round(used),
                fb_reserved_mib=node.reserved_mib,
                sm_active=act if "SM_ACTIVE" in node.signals else None,
                # The graphics engine is busy whenever any SM is; it reads a little higher.
                gr_engine_active=(
                    np.clip(act * 1.08 + 0.01, 0.0, 1.0) if "GR_ENGINE_ACTIVE" in node.signals else None
                ),
                gpu_util_percent=(
                    np.round(np.clip(act * 115.0, 0.0, 100.0)).astype(np.float64)
                    if "GPU_UTIL" in node.signals
                    else None
                ),
                dram_active=(
                    np.clip(act * 0.6 + self.rng.normal(0, 0.01, n), 0.0, 0.8)
                    if "GR_ENGINE_ACTIVE" in node.signals
                    else None
                ),
            )
        )


def _step(ts: FloatArray) -> float:
    return float(ts[1] - ts[0]) if ts.size > 1 else 300.0


def _cpu(req: float, mem: float, mem_limit: float | None = None) -> tuple[dict[str, float], dict[str, float]]:
    limits = {"memory": mem_limit if mem_limit is not None else mem}
    return {"cpu": req, "memory": mem}, limits


def _gpu(cpu: float, mem: float, gpus: float) -> tuple[dict[str, float], dict[str, float]]:
    """Requests and limits of a container holding `gpus` whole GPUs (limits: memory and GPUs)."""
    return {"cpu": cpu, "memory": mem, _GPU: gpus}, {"memory": mem, _GPU: gpus}


def _nodes(b: _Builder) -> list[str]:
    for name, itype, spot in _GENERAL_NODES:
        labels = {
            "kubernetes.io/hostname": name,
            "node.kubernetes.io/instance-type": itype,
            "topology.kubernetes.io/region": "us-east-1",
        }
        if spot:
            labels["eks.amazonaws.com/capacityType"] = "SPOT"
        b.nodes.append(
            NodeInfo(
                name,
                itype,
                "spot" if spot else "on-demand",
                region="us-east-1",
                labels=labels,
                allocatable=_allocatable(itype),
            )
        )
    for g in _GPU_NODES:
        labels = {
            "kubernetes.io/hostname": g.name,
            "node.kubernetes.io/instance-type": g.instance_type,
            "topology.kubernetes.io/region": "us-east-1",
            "karpenter.sh/capacity-type": "spot" if g.spot else "on-demand",
            "nvidia.com/gpu.product": g.product,
            "nvidia.com/gpu.count": str(g.count),
            "nvidia.com/gpu.memory": str(int(g.memory_mib)),
            "nvidia.com/mig.strategy": "mixed" if g is _A100 else "none",
        }
        b.nodes.append(
            NodeInfo(
                g.name,
                g.instance_type,
                "spot" if g.spot else "on-demand",
                gpu_product=g.product,
                gpu_count=g.count,
                gpu_memory_mib=g.memory_mib,
                region="us-east-1",
                labels=labels,
                allocatable=_allocatable(g.instance_type, g.count),
            )
        )
    return [n for n, _, _ in _GENERAL_NODES]


def _replicaset(b: _Builder, ns: str, owner_kind: str, owner: str) -> str:
    rs = f"{owner}-{b.suffix(10)}"
    b.owners.append(OwnerLink(ns, "ReplicaSet", rs, owner_kind, owner))
    return rs


def _rs_pod(b: _Builder, ns: str, rs: str, node: str, resources: _Resources, app: str) -> str:
    """A new pod of ReplicaSet `rs` (random name suffix; labels app and pod-template-hash); its name."""
    pod = f"{rs}-{b.suffix(5)}"
    b.pod(
        ns,
        pod,
        node,
        ("ReplicaSet", rs),
        resources,
        labels={"app": app, "pod-template-hash": rs.rsplit("-", 1)[1]},
    )
    return pod


def _gpu_server(
    b: _Builder,
    ns: str,
    rs: str,
    node: _GpuNode,
    index: int,
    app: str,
    cpu: tuple[float, float],
    mem: float,
    activity: tuple[float, float, float],
    fb_mib: float,
) -> None:
    """A pod of `rs` serving on GPU `index`: cpu (base, amplitude) and GPU activity (base, amplitude,
    noise) follow the load, memory and framebuffer stay flat."""
    pod = _rs_pod(b, ns, rs, node.name, {"server": _gpu(2.0, 8 * GIB, 1.0)}, app)
    b.series(ns, pod, "server", b.ts, b.noisy(cpu[0] + cpu[1] * b.load(), 0.1), b.steady(mem, 0.02))
    act = b.noisy(activity[0] + activity[1] * b.load(), activity[2])
    b.gpu(node, index, ns, pod, "server", act, b.steady(fb_mib, 0.02), b.uuid())


def _shop(b: _Builder, general: list[str]) -> None:
    ns, ts, n = "shop", b.ts, b.ts.size
    # storefront: asks for 2 cores / 4Gi, uses ~0.1-0.35 cores and ~400Mi.
    rs = _replicaset(b, ns, "Deployment", "storefront")
    for i in range(3):
        pod = _rs_pod(b, ns, rs, general[i], {"web": _cpu(2.0, 4 * GIB)}, "storefront")
        b.series(
            ns,
            pod,
            "web",
            ts,
            b.noisy(0.08 + 0.25 * b.load(), 0.12, 0.002),
            b.noisy(np.full(n, 380 * MIB) + 40 * MIB * b.load(), 0.03),
        )
    # checkout-api: asks for 250m / 256Mi (limit 512Mi), uses up to ~1.2 cores and ~480Mi; one OOM kill.
    rs = _replicaset(b, ns, "Deployment", "checkout-api")
    limit = 512 * MIB
    for i in range(2):
        pod = _rs_pod(b, ns, rs, general[i + 1], {"api": _cpu(0.25, 256 * MIB, limit)}, "checkout-api")
        mem = b.noisy(300 * MIB + 150 * MIB * b.load(), 0.02)
        if i == 0:
            # A leak after a bad request: memory climbs to the limit over 3 hours, then the kill.
            kill = int(np.clip(np.searchsorted(ts, ts[-1] - 1.5 * DAY), 1, n - 1))
            ramp_len = max(1, min(kill, int(3 * HOUR / _step(ts))))
            mem[kill - ramp_len : kill + 1] = np.linspace(mem[kill - ramp_len], 0.995 * limit, ramp_len + 1)
            b.ooms.append(
                OomKill(ns, pod, "api", datetime.fromtimestamp(float(ts[kill]), UTC), 0.998 * limit)
            )
            if kill + 1 < n:
                mem[kill + 1] = 180 * MIB  # the restarted container
        b.series(ns, pod, "api", ts, b.noisy(0.3 + 0.9 * b.load(), 0.1, 0.003), np.minimum(mem, limit))
    # postgres: two replicas, a metrics sidecar and an init container that ran once at start.
    for i in range(2):
        pod = f"postgres-{i}"
        b.pod(
            ns,
            pod,
            general[i],
            ("StatefulSet", "postgres"),
            {
                "postgres": _cpu(1.0, 2 * GIB),
                "metrics-exporter": _cpu(0.05, 64 * MIB),
                "init-chmod": _cpu(0.01, 16 * MIB),
            },
            labels={"app": "postgres", "statefulset.kubernetes.io/pod-name": pod},
            init_containers=("init-chmod",),
        )
        growth = np.linspace(0.0, 200 * MIB, n)
        b.series(
            ns,
            pod,
            "postgres",
            ts,
            b.noisy(0.2 + 0.4 * b.load() * (1.0 if i == 0 else 0.4), 0.1),
            b.noisy(1.3 * GIB + growth, 0.01),
        )
        b.steady_series(ns, pod, "metrics-exporter", ts, (0.01, 0.2), (30 * MIB, 0.02))
        b.series(ns, pod, "init-chmod", ts[:1], np.array([0.05]), np.array([8 * MIB]))
    # search: HPA on cpu 70 %; total load 1..6 cores over the day, replicas = ceil(load / 0.7).
    total = 1.0 + 5.0 * b.load()
    replicas = np.clip(np.ceil(total / 0.7), 2, 12).astype(np.int64)
    b.autoscalers.append(
        Autoscaler(
            WorkloadRef(ns, "Deployment", "search"),
            "HorizontalPodAutoscaler",
            "search",
            2,
            12,
            {"cpu": 0.7},
            current_replicas=int(replicas[-1]),
        )
    )
    rs = _replicaset(b, ns, "Deployment", "search")
    per_replica = total / replicas
    for slot in range(int(replicas.max())):
        active = replicas > slot
        edges = np.flatnonzero(np.diff(np.r_[0, active.astype(np.int8), 0]))
        for lo, hi in zip(edges[::2], edges[1::2], strict=True):
            pod = _rs_pod(b, ns, rs, general[slot % len(general)], {"search": _cpu(1.0, 1 * GIB)}, "search")
            b.series(
                ns,
                pod,
                "search",
                ts[lo:hi],
                b.noisy(per_replica[lo:hi], 0.06),
                b.steady(700 * MIB, 0.02, hi - lo),
            )


def _platform(b: _Builder, general: list[str]) -> None:
    ns, ts, n = "platform", b.ts, b.ts.size
    # fluent-bit on every node; its load follows the node's.
    for node in [*general, *(g.name for g in _GPU_NODES)]:
        pod = f"fluent-bit-{b.suffix(5)}"
        b.pod(
            ns,
            pod,
            node,
            ("DaemonSet", "fluent-bit"),
            {"fluent-bit": _cpu(0.1, 128 * MIB, 256 * MIB)},
            labels={"app.kubernetes.io/name": "fluent-bit", "controller-revision-hash": "7c9d8f6b4"},
        )
        b.series(
            ns,
            pod,
            "fluent-bit",
            ts,
            b.noisy(0.02 + 0.05 * b.load(), 0.15, 0.002),
            b.noisy(60 * MIB + 30 * MIB * b.load(), 0.03),
        )
    # api-gateway: Argo Rollout; revision 1 for the first 4 days, revision 2 since.
    cut = int(n * 4 / 7)
    for lo, hi in ((0, cut), (cut, n)):
        pth = b.suffix(10)
        rs = f"api-gateway-{pth}"
        b.owners.append(OwnerLink(ns, "ReplicaSet", rs, "Rollout", "api-gateway"))
        for i in range(3):
            pod = f"{rs}-{b.suffix(5)}"
            b.pod(
                ns,
                pod,
                general[i],
                ("ReplicaSet", rs),
                {"gateway": _cpu(0.5, 512 * MIB)},
                labels={"app": "api-gateway", "rollouts-pod-template-hash": pth},
            )
            b.series(
                ns,
                pod,
                "gateway",
                ts[lo:hi],
                b.noisy(0.2 + 0.5 * b.load(slice(lo, hi)), 0.1, 0.002),
                b.steady(200 * MIB, 0.03, hi - lo),
            )
    # feature-flags: deployed 6 hours ago.
    rs = _replicaset(b, ns, "Deployment", "feature-flags")
    pod = _rs_pod(b, ns, rs, general[3], {"flags": _cpu(0.1, 128 * MIB)}, "feature-flags")
    recent = ts >= ts[-1] - 6 * HOUR + 1
    b.steady_series(ns, pod, "flags", ts[recent], (0.03, 0.1), (50 * MIB, 0.02))


def _legacy(b: _Builder, general: list[str]) -> None:
    ns, ts, n = "legacy", b.ts, b.ts.size
    rollout = int(n * 5 / 7)  # billing-7 rolled out two days before the end
    step = _step(ts)
    resources = {"billing": _cpu(1.0, 1 * GIB)}
    for rev, lo, hi in ((6, 0, rollout), (7, rollout, n)):
        rc = f"billing-{rev}"
        b.owners.append(OwnerLink(ns, "ReplicationController", rc, "DeploymentConfig", "billing"))
        for i in range(2):
            pod = f"{rc}-{b.suffix(5)}"
            b.pod(
                ns,
                pod,
                general[(i + rev) % len(general)],
                ("ReplicationController", rc),
                resources,
                labels={"deploymentconfig": "billing", "deployment": rc, "app": "billing"},
                annotations={
                    "openshift.io/deployment.name": rc,
                    "openshift.io/deployment-config.name": "billing",
                    "openshift.io/deployment-config.latest-version": str(rev),
                },
            )
            b.series(
                ns,
                pod,
                "billing",
                ts[lo:hi],
                b.noisy(0.15 + 0.3 * b.load(slice(lo, hi)), 0.1),
                b.steady(600 * MIB, 0.02, hi - lo),
            )
    # The deployer pod runs ~20 minutes around the rollout, the pre hook (a DB migration) ~15 minutes.
    dep = slice(max(0, rollout - int(20 * 60 / step)), rollout + 1)
    b.pod(
        ns,
        "billing-7-deploy",
        general[0],
        ("ReplicationController", "billing-7"),
        {"deployment": _cpu(0.0, 0.0)},
        labels={"openshift.io/deployer-pod-for.name": "billing-7"},
        annotations={"openshift.io/deployment.name": "billing-7"},
    )
    b.steady_series(ns, "billing-7-deploy", "deployment", ts[dep], (2.5, 0.1), (3 * GIB, 0.05))
    hook = slice(max(0, rollout - int(35 * 60 / step)), max(1, rollout - int(20 * 60 / step)))
    b.pod(
        ns,
        "billing-7-hook-pre",
        general[1],
        None,
        resources,
        labels={
            "openshift.io/deployer-pod.type": "hook-pre",
            "openshift.io/deployer-pod-for.name": "billing-7",
        },
        annotations={"openshift.io/deployment.name": "billing-7"},
    )
    b.steady_series(ns, "billing-7-hook-pre", "billing", ts[hook], (3.5, 0.1), (2.5 * GIB, 0.05))


def _ml(b: _Builder) -> None:
    ns, ts, n = "ml", b.ts, b.ts.size
    # llm-pretrain: 2 pods x 8 H100, busy.
    for i, node in enumerate(_H100):
        pod = f"llm-pretrain-{i}"
        b.pod(
            ns,
            pod,
            node.name,
            ("StatefulSet", "llm-pretrain"),
            {"trainer": _gpu(32.0, 256 * GIB, 8.0)},
            labels={"app": "llm-pretrain"},
        )
        b.steady_series(ns, pod, "trainer", ts, (20.0, 0.05), (180 * GIB, 0.01))
        for g in range(8):
            act = b.steady(0.88, 0.04) * np.where(b.rng.random(n) < 0.01, 0.3, 1.0)
            b.gpu(node, g, ns, pod, "trainer", act, b.steady(72000.0, 0.01), b.uuid())
    # bert-finetune: 4 A100, ~0.35 active; reranker: 1 A100, ~3 GiB and ~0.06 active.
    node = _A100
    b.pod(
        ns,
        "bert-finetune-0",
        node.name,
        ("StatefulSet", "bert-finetune"),
        {"trainer": _gpu(16.0, 128 * GIB, 4.0)},
        labels={"app": "bert-finetune"},
    )
    b.steady_series(ns, "bert-finetune-0", "trainer", ts, (6.0, 0.08), (60 * GIB, 0.01))
    for g in range(4):
        b.gpu(
            node,
            g,
            ns,
            "bert-finetune-0",
            "trainer",
            b.steady(0.35, 0.15),
            b.steady(16000.0, 0.02),
            b.uuid(),
        )
    rs = _replicaset(b, ns, "Deployment", "reranker")
    _gpu_server(b, ns, rs, node, 4, "reranker", (0.2, 0.6), 3 * GIB, (0.02, 0.06, 0.1), 3000.0)
    for g in range(5, 8):  # free GPUs: the exporter still reports them, without pod labels
        b.gpu(node, g, "", "", "", np.zeros(n), np.zeros(n), b.uuid())
    # embeddings: 2 pods on L40S nodes exporting GPU_UTIL only.
    rs = _replicaset(b, ns, "Deployment", "embeddings")
    for node in _L40S_UTIL:
        _gpu_server(b, ns, rs, node, 0, "embeddings", (0.5, 1.0), 5 * GIB, (0.3, 0.45, 0.08), 21000.0)
    # notebook: used during the first days, idle (~0.01) for the last 30 hours.
    node = _L40S_SM
    rs = _replicaset(b, ns, "Deployment", "notebook")
    pod = _rs_pod(b, ns, rs, node.name, {"jupyter": _gpu(4.0, 16 * GIB, 1.0)}, "notebook")
    b.steady_series(ns, pod, "jupyter", ts, (0.3, 0.2), (6 * GIB, 0.02))
    idle = ts >= ts[-1] - 30 * HOUR
    act = np.where(idle, b.steady(0.01, 0.3), b.noisy(0.15 + 0.5 * b.load(), 0.15))
    b.gpu(node, 0, ns, pod, "jupyter", act, b.steady(12000.0, 0.01), b.uuid())


def _job_run(
    b: _Builder, ns: str, job: str, node: str, resources: _Resources, span: slice, app: str
) -> tuple[str, FloatArray]:
    """One pod of Job `job` (labels as the Job controller sets them) over `span`: its name and times."""
    pod = f"{job}-{b.suffix(5)}"
    labels = {"batch.kubernetes.io/job-name": job, "job-name": job, "app": app}
    b.pod(ns, pod, node, ("Job", job), resources, labels=labels)
    return pod, b.ts[span]


def _detach_until(b: _Builder, hostname: str, index: str, t: float) -> None:
    """The unattached GPU's series ends before `t` (a pod holds the GPU from then on)."""

    def cut(values: FloatArray | None, keep: npt.NDArray[np.bool_]) -> FloatArray | None:
        return None if values is None else values[keep]

    for i, g in enumerate(b.gpus):
        if (g.hostname, g.gpu_index, g.pod) == (hostname, index, ""):
            keep = g.timestamps < t
            b.gpus[i] = replace(
                g,
                timestamps=g.timestamps[keep],
                fb_used_mib=g.fb_used_mib[keep],
                fb_free_mib=g.fb_free_mib[keep],
                sm_active=cut(g.sm_active, keep),
                gr_engine_active=cut(g.gr_engine_active, keep),
                gpu_util_percent=cut(g.gpu_util_percent, keep),
                dram_active=cut(g.dram_active, keep),
            )


def _batch(b: _Builder, general: list[str]) -> None:
    step = _step(b.ts)
    # nightly-report: a CronJob, once a day; each run is ~45 minutes, busy from start to end. Runs start
    # on the first whole UTC hour at least an hour into the window, then daily at that time (the window
    # follows the clock, the runs follow the window), so a run and the step after its last sample (a
    # server's max_over_time there still holds it) lie within one hour of the hourly demand's UTC grid.
    # The first sample is the nominal level: Prometheus cannot rate a pod's first point, and with it
    # neither the peak nor an hour's mean depends on it.
    ns, cron = "analytics", "nightly-report"
    run_len = max(2, int(45 * 60 / step))
    first_run = b.ts[(b.ts - b.ts[0] >= HOUR) & (b.ts % HOUR < step)][0]
    starts = np.flatnonzero((b.ts >= first_run) & np.isclose((b.ts - first_run) % DAY, 0))
    for i, lo in enumerate(int(x) for x in starts):
        hi = min(lo + run_len, b.ts.size)
        job = f"{cron}-{int(b.ts[lo] // 60)}"  # the CronJob controller's <name>-<scheduled minute>
        b.owners.append(OwnerLink(ns, "Job", job, "CronJob", cron))
        resources = {"report": _cpu(2.0, 3 * GIB, 3 * GIB)}
        pod, ts = _job_run(b, ns, job, general[i % len(general)], resources, slice(lo, hi), cron)
        climb = np.linspace(300 * MIB, 1.6 * GIB, ts.size)
        cpu = b.noisy(np.full(ts.size, 1.2), 0.08)
        cpu[0] = 1.2
        b.series(ns, pod, "report", ts, cpu, b.noisy(climb, 0.01))
    # train-resnet: a bare Job (no controller above it), running for the last 10 hours on A100 GPU 5, which
    # the exporter reported without a pod until then.
    ns, job = "ml", "train-resnet"
    b.owners.append(OwnerLink(ns, "Job", job, "", ""))
    lo = max(0, b.ts.size - int(10 * HOUR / step))
    span = slice(lo, b.ts.size)
    _detach_until(b, _A100.name, "5", float(b.ts[lo]))
    pod, ts = _job_run(b, ns, job, _A100.name, {"trainer": _gpu(8.0, 64 * GIB, 1.0)}, span, job)
    b.steady_series(ns, pod, "trainer", ts, (5.0, 0.06), (40 * GIB, 0.01))
    n = ts.size
    act = np.clip(b.steady(0.7, 0.05, n), 0.0, 1.0)
    used = np.clip(b.steady(30000.0, 0.01, n), 0.0, _A100.memory_mib - _A100.reserved_mib)
    free = _A100.memory_mib - _A100.reserved_mib - np.round(used)
    b.gpus.append(
        GpuSamples(
            ns, pod, "trainer", _A100.name, "5", b.uuid(), _A100.model, ts, np.round(used), free,
            fb_reserved_mib=_A100.reserved_mib, gr_engine_active=act,
            gpu_util_percent=np.round(np.clip(act * 115.0, 0.0, 100.0)).astype(np.float64),
        )
    )  # fmt: skip


def build_demo_dataset(
    now: datetime, *, days: int = 7, step_seconds: int = 300, seed: int = 42
) -> RawDataset:
    """The demo cluster's raw samples for the `days` before `now` (on the step's grid, every one within
    [now - days, now), so a window of `days` ending at `now` holds them all); deterministic."""
    if days < 1 or step_seconds < 1 or step_seconds > 3600:
        raise ValueError(f"days must be >= 1 and step_seconds in 1..3600, got {days}, {step_seconds}")
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    n = days * 86400 // step_seconds
    start_epoch = int(floor_to(now.timestamp(), step_seconds)) - n * step_seconds
    if start_epoch < now.timestamp() - days * 86400:  # `now` off the grid: 1st point before the window
        start_epoch += step_seconds
    end_epoch = min(start_epoch + n * step_seconds, now.timestamp())
    ts = start_epoch + step_seconds * np.arange(n, dtype=np.float64)
    b = _Builder(np.random.default_rng(seed), ts)
    general = _nodes(b)
    _shop(b, general)
    _platform(b, general)
    _legacy(b, general)
    _ml(b)
    _batch(b, general)  # last: the workloads above keep their random draws
    return RawDataset(
        start=datetime.fromtimestamp(start_epoch, UTC),
        end=datetime.fromtimestamp(end_epoch, UTC),
        pods=tuple(b.pods),
        owners=tuple(b.owners),
        containers=tuple(b.containers),
        gpus=tuple(b.gpus),
        ooms=tuple(b.ooms),
        autoscalers=tuple(b.autoscalers),
        nodes=tuple(b.nodes),
    )


class DemoSource:
    """MetricsSource over the demo cluster; the dataset ends at `now` and covers `days`."""

    name = "demo"

    def __init__(
        self,
        now: datetime,
        *,
        days: int = 7,
        step_seconds: int = 300,
        seed: int = 42,
        recency: Recency = DEFAULT_RECENCY,
    ) -> None:
        self.now = now
        self.days = days
        self.step_seconds = step_seconds
        self.seed = seed
        self.recency = recency

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
        if progress:
            progress(0, 2, "building demo dataset")
        raw = build_demo_dataset(self.now, days=self.days, step_seconds=self.step_seconds, seed=self.seed)
        if progress:
            progress(1, 2, "aggregating")
        snap = aggregate(clip(raw, start, end), source=self.name, recency=self.recency)
        if progress:
            progress(2, 2, "done")
        return snap
