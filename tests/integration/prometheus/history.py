"""Seven days of known cluster history (cAdvisor, KSM, DCGM) whose aggregates the tests can predict."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

import numpy as np

from podsizer.api import WorkloadRef
from recommender.model import Autoscaler, FloatArray, NodeInfo
from recommender.model.raw import ContainerSamples, GpuSamples, OomKill, OwnerLink, PodInfo, RawDataset
from tests.support.openmetrics import DcgmStyle, Family, dataset_families

MI = 2**20
GI = 2**30
STEP = 60.0
DAYS = 7
REPORT_RUNS = 4
REPORT_RUN_MINUTES = 30
NOTEBOOK_UUID = "GPU-0c1d2e3f-aaaa-bbbb-cccc-000000000002"
CLUSTER_LABEL = "cluster"
CLUSTER_CPU_SCALE: dict[str, float] = {"east": 1.0, "west": 2.0}
"""Two clusters running the same workloads under the same names; west's containers use twice east's CPU."""


@dataclass
class History:
    """The dataset plus the exact generated arrays the tests compare against."""

    start: datetime
    end: datetime
    pods: list[PodInfo] = field(default_factory=list)
    owners: list[OwnerLink] = field(default_factory=list)
    containers: list[ContainerSamples] = field(default_factory=list)
    gpus: list[GpuSamples] = field(default_factory=list)
    ooms: list[OomKill] = field(default_factory=list)
    autoscalers: list[Autoscaler] = field(default_factory=list)
    nodes: list[NodeInfo] = field(default_factory=list)
    dcgm_styles: dict[str, DcgmStyle] = field(default_factory=dict)

    def dataset(self) -> RawDataset:
        return RawDataset(
            self.start,
            self.end,
            tuple(self.pods),
            tuple(self.owners),
            tuple(self.containers),
            tuple(self.gpus),
            tuple(self.ooms),
            tuple(self.autoscalers),
            tuple(self.nodes),
        )

    def samples(self, ns: str, pod: str, container: str) -> ContainerSamples:
        return next(c for c in self.containers if (c.namespace, c.pod, c.container) == (ns, pod, container))


def build_history(end: datetime, seed: int = 7) -> History:
    rng = np.random.default_rng(seed)
    start = end - timedelta(days=DAYS)
    ts: FloatArray = np.arange(start.timestamp(), end.timestamp() + 1, STEP)
    n = ts.size
    day = 2 * np.pi * (ts - ts[0]) / 86400.0
    h = History(start, end)

    def pod(ns: str, name: str, node: str, kind: str | None, owner: str | None, **kw: object) -> None:
        h.pods.append(PodInfo(ns, name, node, kind, owner, **kw))  # type: ignore[arg-type]

    def usage(ns: str, p: str, c: str, cpu: FloatArray, mem: FloatArray) -> None:
        h.containers.append(ContainerSamples(ns, p, c, ts, cpu, mem))

    # shop/web: Deployment with an HPA, 2 replicas at a steady 200m CPU with 5% noise.
    h.owners.append(OwnerLink("shop", "ReplicaSet", "web-7d9f8c6b5", "Deployment", "web"))
    for suffix in ("x2x9z", "q8w7e"):
        name = f"web-7d9f8c6b5-{suffix}"
        pod(
            "shop",
            name,
            "node-1",
            "ReplicaSet",
            "web-7d9f8c6b5",
            labels={"app": "web"},
            requests={"app": {"cpu": 0.5, "memory": 512.0 * MI}},
            limits={"app": {"memory": 1024.0 * MI}},
        )
        usage(
            "shop",
            name,
            "app",
            0.2 * (1 + 0.05 * rng.standard_normal(n)),
            256 * MI + rng.normal(0, 4 * MI, n),
        )
    h.autoscalers.append(
        Autoscaler(
            WorkloadRef("shop", "Deployment", "web"), "HorizontalPodAutoscaler", "web", 2, 10, {"cpu": 0.7}, 2
        )
    )

    # shop/db: StatefulSet, daily CPU cycle, memory ramp 1 -> 2 GiB, OOM kill at day 5 (spike 2.5 GiB).
    db_mem = np.linspace(1 * GI, 2 * GI, n) + rng.normal(0, 8 * MI, n)
    oom_at = int(5 * 86400 / STEP)
    db_mem[oom_at] = 2.5 * GI
    pod(
        "shop", "db-0", "node-1", "StatefulSet", "db", requests={"postgres": {"cpu": 1.0, "memory": 2.0 * GI}}
    )
    usage("shop", "db-0", "postgres", 0.5 + 0.3 * np.sin(day) + rng.normal(0, 0.02, n), db_mem)
    h.ooms.append(
        OomKill("shop", "db-0", "postgres", datetime.fromtimestamp(ts[oom_at], end.tzinfo), 2.5 * GI)
    )

    # legacy: an OpenShift DeploymentConfig app pod, its deployer pod and a pre hook pod (both huge);
    # legacy-clean holds the identical app pod alone, to compare with and without deployer/hook pods.
    cart_cpu = 0.1 * (1 + 0.05 * rng.standard_normal(n))
    cart_mem = 128 * MI + rng.normal(0, 2 * MI, n)
    for ns in ("legacy", "legacy-clean"):
        h.owners.append(OwnerLink(ns, "ReplicationController", "cart-3", "DeploymentConfig", "cart"))
        pod(
            ns,
            "cart-3-abcde",
            "node-1",
            "ReplicationController",
            "cart-3",
            labels={"deploymentconfig": "cart", "deployment": "cart-3"},
            annotations={"openshift.io/deployment.name": "cart-3"},
            requests={"cart": {"cpu": 0.25, "memory": 256.0 * MI}},
        )
        usage(ns, "cart-3-abcde", "cart", cart_cpu, cart_mem)
    pod(
        "legacy",
        "cart-3-deploy",
        "node-1",
        "ReplicationController",
        "cart-3",
        labels={"openshift.io/deployer-pod-for.name": "cart-3"},
    )
    usage("legacy", "cart-3-deploy", "deployment", np.full(n, 8.0), np.full(n, 16.0 * GI))
    pod(
        "legacy",
        "cart-3-hook-pre",
        "node-1",
        None,
        None,
        labels={"openshift.io/deployer-pod.type": "hook-pre", "openshift.io/deployer-pod-for.name": "cart-3"},
    )
    usage("legacy", "cart-3-hook-pre", "cart", np.full(n, 6.0), np.full(n, 12.0 * GI))

    # batch: twenty small Deployments, so query counts can be compared with container counts.
    for i in range(20):
        rs = f"job{i:02d}-6c8d"
        h.owners.append(OwnerLink("batch", "ReplicaSet", rs, "Deployment", f"job{i:02d}"))
        pod("batch", f"{rs}-aaaaa", "node-1", "ReplicaSet", rs)
        usage(
            "batch",
            f"{rs}-aaaaa",
            "worker",
            np.abs(rng.normal(0.05 * (i + 1), 0.01, n)),
            np.full(n, 64.0 * MI),
        )

    # sparse: a Deployment scraped every 5 minutes, at the multiples of 300 s (the rate window is 300 s).
    h.owners.append(OwnerLink("sparse", "ReplicaSet", "slow-4b7d", "Deployment", "slow"))
    pod("sparse", "slow-4b7d-ccccc", "node-1", "ReplicaSet", "slow-4b7d")
    every5 = ts % 300 == 0
    h.containers.append(
        ContainerSamples(
            "sparse",
            "slow-4b7d-ccccc",
            "app",
            ts[every5],
            np.full(int(every5.sum()), 0.3),
            np.full(int(every5.sum()), 100.0 * MI),
        )
    )

    # ml: GPUs. trainer (SM_ACTIVE present, current labels), notebook (SM_ACTIVE absent -> GR_ENGINE_ACTIVE,
    # scraped without honor_labels), infer (MIG 3g.40gb, --use-old-namespace labels, GR_ENGINE only).
    h.owners.append(OwnerLink("ml", "ReplicaSet", "trainer-5f6", "Deployment", "trainer"))
    h.owners.append(OwnerLink("ml", "ReplicaSet", "notebook-7c9", "Deployment", "notebook"))
    gpu_req = {"cpu": 2.0, "memory": 8.0 * GI, "nvidia.com/gpu": 1.0}
    for p, node, kind, owner, c in (
        ("trainer-5f6-aaaaa", "gpu-node-1", "ReplicaSet", "trainer-5f6", "train"),
        ("notebook-7c9-bbbbb", "gpu-node-2", "ReplicaSet", "notebook-7c9", "jupyter"),
        ("infer-0", "gpu-node-3", "StatefulSet", "infer", "server"),
    ):
        pod("ml", p, node, kind, owner, requests={c: gpu_req}, limits={c: {"nvidia.com/gpu": 1.0}})
        usage("ml", p, c, np.abs(rng.normal(1.0, 0.05, n)), np.full(n, 4.0 * GI))
    sm = np.clip(rng.normal(0.85, 0.03, n), 0, 1)
    h.gpus.append(
        GpuSamples(
            "ml", "trainer-5f6-aaaaa", "train", "gpu-node-1", "0", "GPU-5b4e07f6-3a86-4340-039d-25f2a83cdc43",
            "NVIDIA L40S", ts, np.full(n, 30000.0), np.full(n, 15459.0), 608.0,
            sm_active=sm, gr_engine_active=np.clip(sm + 0.05, 0, 1),
            gpu_util_percent=np.round(np.clip(sm + 0.1, 0, 1) * 100), dram_active=np.full(n, 0.4),
        )
    )  # fmt: skip
    idle = np.abs(rng.normal(0.02, 0.005, n))
    h.gpus.append(
        GpuSamples(
            "ml", "notebook-7c9-bbbbb", "jupyter", "gpu-node-2", "0", NOTEBOOK_UUID,
            "NVIDIA L40S", ts, np.full(n, 2000.0), np.full(n, 43459.0), 608.0,
            gr_engine_active=idle, gpu_util_percent=np.round(idle * 100),
        )
    )  # fmt: skip
    h.dcgm_styles[NOTEBOOK_UUID] = "exported"
    mig = np.clip(rng.normal(0.5, 0.05, n), 0, 1)
    h.gpus.append(
        GpuSamples(
            "ml", "infer-0", "server", "gpu-node-3", "0", "GPU-ed1353d6-52ba-8793-7230-4d5d3eb68167",
            "NVIDIA A100 80GB PCIe", ts, np.full(n, 20000.0), np.full(n, 20000.0), 0.0,
            gr_engine_active=mig, mig_profile="3g.40gb", mig_instance_id="1",
        )
    )  # fmt: skip
    h.dcgm_styles["GPU-ed1353d6-52ba-8793-7230-4d5d3eb68167"] = "old"

    # batch/report: a CronJob's runs, one Job a day on days 2..5 (REPORT_RUNS), each REPORT_RUN_MINUTES
    # long at a busy 1.5 cores with memory climbing to 900Mi; the pods exist only while a run is active.
    # batch/migrate: a bare Job (kube_job_owner owner_kind "<none>"), one 30-minute run on day 6.
    for day_no in range(2, 2 + REPORT_RUNS):
        lo = int(day_no * 86400 / STEP)
        hi = lo + REPORT_RUN_MINUTES
        job = f"report-{int(ts[lo] // 60)}"
        h.owners.append(OwnerLink("batch", "Job", job, "CronJob", "report"))
        asks = {"report": {"cpu": 4.0, "memory": 4.0 * GI}}
        pod("batch", f"{job}-zzzzz", "node-1", "Job", job, requests=asks)
        h.containers.append(
            ContainerSamples(
                "batch", f"{job}-zzzzz", "report", ts[lo:hi],
                np.abs(rng.normal(1.5, 0.03, hi - lo)), np.linspace(300 * MI, 900 * MI, hi - lo),
            )
        )  # fmt: skip
    h.owners.append(OwnerLink("batch", "Job", "migrate", "", ""))
    pod("batch", "migrate-yyyyy", "node-1", "Job", "migrate")
    lo = int(6 * 86400 / STEP)
    h.containers.append(
        ContainerSamples(
            "batch", "migrate-yyyyy", "migrate", ts[lo : lo + 30], np.full(30, 0.5), np.full(30, 200.0 * MI)
        )
    )

    h.nodes += [
        NodeInfo("node-1", "m6i.large", "on-demand", region="us-east-1"),
        NodeInfo(
            "gpu-node-1",
            None,
            "on-demand",
            labels={"node.kubernetes.io/instance-type": "g6e.xlarge", "karpenter.sh/capacity-type": "spot"},
            gpu_product="NVIDIA-L40S",
            gpu_count=1,
        ),
        NodeInfo("gpu-node-2", None, "on-demand", labels={"eks.amazonaws.com/capacityType": "ON_DEMAND"}),
        NodeInfo("gpu-node-3", "p4d.24xlarge", "on-demand", labels={"lifecycle": "EC2Spot"}),
    ]
    return h


def scaled_cpu(h: History, factor: float) -> History:
    """h with every container's CPU use times factor; memory, GPUs, owners and OOM kills as they are."""
    return replace(h, containers=[replace(c, cpu_cores=c.cpu_cores * factor) for c in h.containers])


def cluster_history(end: datetime, cluster: str) -> History:
    """The history of one of the CLUSTER_CPU_SCALE clusters (same seed, so only the CPU scale differs)."""
    return scaled_cpu(build_history(end), CLUSTER_CPU_SCALE[cluster])


def history_families(h: History, cluster: str | None = None) -> list[Family]:
    """The exporter families of h; with a cluster, every series carries CLUSTER_LABEL=cluster, as a
    multi-cluster store (Thanos, Mimir, VictoriaMetrics) adds it from each Prometheus's external labels."""
    families = dataset_families(h.dataset(), dcgm_styles=h.dcgm_styles)
    if cluster is None:
        return families
    return [
        replace(f, series=[replace(s, labels={**s.labels, CLUSTER_LABEL: cluster}) for s in f.series])
        for f in families
    ]


def series_count(families: list[Family]) -> int:
    """Distinct series with samples the families hold (what a TSDB lists after importing them)."""
    return len(
        {
            (f.name, tuple(sorted(s.labels.items())))
            for f in families
            for s in f.series
            if np.isfinite(s.values).any()
        }
    )
