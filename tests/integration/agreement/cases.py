"""Random workloads for the agreement test: one podsizer-raw/v1 data set holding them all, the users'
bounds for the store, and each workload's newest pod as its controller creates it (what the webhook
admits) and as it runs (what the updater sees). Seeded: a seed and a count give the same cases."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from podsizer.api import ContainerPolicy, ContainerRecommendation, Recommendation, Window, WorkloadRef
from podsizer.api.quantity import format_resource
from podsizer.keys import (
    ALLOW_LARGE_CHANGE_KEY,
    ALLOW_SINGLE_REPLICA_KEY,
    EXCLUDE_KEY,
    GPU_KEY,
    MODE_KEY,
    UPDATE_MODE_KEY,
)
from podsizer.resources import GPU
from recommender.model import NodeInfo
from recommender.model.raw import ContainerSamples, GpuSamples, OwnerLink, PodInfo, RawDataset

STEP = 3600.0
MI = 2**20
NAMESPACES = ("shop", "ml", "platform", "batch", "legacy")
GPU_NODE = "gpu-node-1"
# Values a user or a bad script may set, valid or not (the plan must read them the same everywhere).
ANNOTATION_VALUES: Mapping[str, tuple[str, ...]] = {
    MODE_KEY: ("auto", "Auto", "dry-run", "DRY-RUN", "off", "sideways"),
    EXCLUDE_KEY: ("true", "TRUE", "false"),
    GPU_KEY: ("keep", "resize", "RESIZE", "garbage"),
    ALLOW_LARGE_CHANGE_KEY: ("true", "false", "maybe"),
    UPDATE_MODE_KEY: ("off", "initial", "recreate", "in-place-or-recreate"),
    ALLOW_SINGLE_REPLICA_KEY: ("true",),
}
CPU_MILLIS = (10, 50, 100, 250, 500, 1000, 2000, 4000, 8000)
MEMORY_MI = (32, 64, 128, 256, 512, 1024, 2048, 4096, 16384)


@dataclass(frozen=True)
class Case:
    """One workload: its identity, its newest pod as created (admission) and as running (the updater)."""

    workload: WorkloadRef
    pod: dict[str, Any]
    running: dict[str, Any]


@dataclass
class Cases:
    """The data set, the users' bounds per workload and the cases, for one seed."""

    end: datetime
    seed: int
    pods: list[PodInfo] = field(default_factory=list)
    owners: list[OwnerLink] = field(default_factory=list)
    containers: list[ContainerSamples] = field(default_factory=list)
    gpus: list[GpuSamples] = field(default_factory=list)
    bounds: dict[WorkloadRef, tuple[ContainerPolicy, ...]] = field(default_factory=dict)
    cases: list[Case] = field(default_factory=list)

    def dataset(self) -> RawDataset:
        node = NodeInfo(GPU_NODE, "p4d.24xlarge", "on-demand", "NVIDIA-A100-SXM4-40GB", 8, 40960.0)
        start = self.end - timedelta(days=7)
        return RawDataset(
            start,
            self.end,
            tuple(self.pods),
            tuple(self.owners),
            tuple(self.containers),
            tuple(self.gpus),
            nodes=(node,),
        )

    def seeded_store(self) -> list[Recommendation]:
        """A Recommendation per bounded workload carrying only the users' bounds (spec.resourcePolicy) and
        a low-confidence placeholder status: what `recommend --write` then keeps the spec of."""
        window = Window(self.end - timedelta(days=1), self.end, 1)
        out = []
        for ref, bounds in self.bounds.items():
            names = sorted({b.container for b in bounds} - {"*"}) or ["placeholder"]
            placeholder = tuple(ContainerRecommendation(n, {}, {}, 0.0, "placeholder", True) for n in names)
            out.append(Recommendation(ref, self.end, window, "static", placeholder, policy=bounds))
        return out


def _cpu(r: random.Random) -> float:
    return r.choice(CPU_MILLIS) / 1000.0


def _memory(r: random.Random) -> float:
    return float(r.choice(MEMORY_MI) * MI)


def _resources(r: random.Random, gpus: int) -> tuple[dict[str, float], dict[str, float]]:
    """Requests and limits as a pod spec might have them: some absent, limits at or above requests."""
    requests: dict[str, float] = {}
    limits: dict[str, float] = {}
    for resource, pick in (("cpu", _cpu), ("memory", _memory)):
        if r.random() < 0.85:
            requests[resource] = pick(r)
        if r.random() < 0.5:  # whole millicores or MiB, as a pod spec writes them
            unit = 0.001 if resource == "cpu" else float(MI)
            limits[resource] = (
                round(requests.get(resource, pick(r)) * r.choice((1.0, 1.5, 2.0)) / unit) * unit
            )
    if gpus:
        requests[GPU] = limits[GPU] = float(gpus)
    return requests, limits


def _metadata(r: random.Random) -> tuple[dict[str, str], dict[str, str]]:
    """Labels (an opt-out now and then) and a random set of podsizer.io/ annotations."""
    labels = {"app": "x"}
    if r.random() < 0.05:
        labels[EXCLUDE_KEY] = r.choice(("true", "false"))
    annotations = {k: r.choice(v) for k, v in ANNOTATION_VALUES.items() if r.random() < 0.4}
    annotations["example.com/owner"] = "team-a"  # not podsizer's: never read, never kept
    return labels, annotations


def _bounds(r: random.Random, names: list[str]) -> tuple[ContainerPolicy, ...]:
    """A "*" entry, a container's own entry, or both (VPA's rule decides which applies)."""
    out: list[ContainerPolicy] = []
    for name in ("*", r.choice(names)):
        if r.random() < 0.6:
            lo_cpu, hi_cpu = sorted(r.sample(CPU_MILLIS, 2))
            lo_mem, hi_mem = sorted(r.sample(MEMORY_MI, 2))
            low = {"cpu": lo_cpu / 1000.0} if r.random() < 0.5 else {"memory": float(lo_mem * MI)}
            high = {"cpu": hi_cpu / 1000.0} if r.random() < 0.5 else {"memory": float(hi_mem * MI)}
            out.append(ContainerPolicy(name, low, high))
    return tuple({p.container: p for p in out}.values())


def _series(r: random.Random, base: float, hours: int, level: float | None = None) -> np.ndarray:
    level = base * (level if level is not None else r.choice((0.05, 0.2, 0.6, 1.0, 1.5, 3.0, 6.0)))
    rng = np.random.default_rng(r.randrange(2**32))
    return np.maximum(level * (1.0 + 0.2 * rng.standard_normal(hours)), 0.0)


@dataclass(frozen=True)
class Pinned:
    """A workload with chosen annotations: one container c0 (4 cores, 4Gi; `gpus` GPUs) using `level`
    times its requests over 7 days, GPUs at `gpu_activity`."""

    annotations: Mapping[str, str]
    gpus: int = 0
    level: float = 1.0
    gpu_activity: float = 0.9


class _Builder:
    """Adds one workload at a time to a Cases."""

    def __init__(self, cases: Cases, r: random.Random) -> None:
        self.c, self.r = cases, r

    def workload(self, i: int) -> None:
        r = self.r
        kind = r.choices(("Deployment", "StatefulSet", "DaemonSet"), (7, 2, 1))[0]
        ref = WorkloadRef(r.choice(NAMESPACES), kind, f"w{i}")
        names = [f"c{k}" for k in range(r.randint(1, 3))]
        init = ["init"] if r.random() < 0.25 else []
        gpus = r.choice((1, 2, 4)) if r.random() < 0.15 else 0
        if r.random() < 0.3:
            self.c.bounds[ref] = _bounds(r, names)
        hours = int(24 * r.choice((0.5, 1, 2, 4, 7)))
        pods = [self._pod(ref, names, init, gpus, hours, newest=True)]
        if r.random() < 0.3:  # an older pod of the workload: its spec and metadata are not the template
            pods.insert(0, self._pod(ref, names, init, gpus, max(2, hours // 2), newest=False))
        self.c.cases.append(case_of(ref, pods[-1], self.c.end))

    def pinned(self, i: int, p: Pinned) -> None:
        ref = WorkloadRef("shop", "Deployment", f"pinned-{i}")
        spec = {"c0": ({"cpu": 4.0, "memory": 4.0 * 2**30}, {"memory": 4.0 * 2**30})}
        if p.gpus:
            spec["c0"][0][GPU] = spec["c0"][1][GPU] = float(p.gpus)
        pod = self._pod(ref, ["c0"], [], p.gpus, 7 * 24, True, ({"app": "x"}, dict(p.annotations)), spec, p)
        self.c.cases.append(case_of(ref, pod, self.c.end))

    def _pod(
        self,
        ref: WorkloadRef,
        names: list[str],
        init: list[str],
        gpus: int,
        hours: int,
        newest: bool,
        meta: tuple[dict[str, str], dict[str, str]] | None = None,
        fixed: Mapping[str, tuple[dict[str, float], dict[str, float]]] | None = None,
        pinned: Pinned | None = None,
    ) -> PodInfo:
        r, c = self.r, self.c
        template = f"{r.randrange(16**8):08x}"
        owner_kind, owner = (
            ("ReplicaSet", f"{ref.name}-{template}")
            if ref.kind == "Deployment"
            else (
                ref.kind,
                ref.name,
            )
        )
        if ref.kind == "Deployment":
            c.owners.append(OwnerLink(ref.namespace, "ReplicaSet", owner, "Deployment", ref.name))
        labels, annotations = meta or _metadata(r)
        if ref.kind == "Deployment":
            labels["pod-template-hash"] = template
        name = f"{owner}-{r.randrange(36**5):05x}" if ref.kind != "StatefulSet" else f"{owner}-{len(c.pods)}"
        specs = (
            dict(fixed) if fixed else {n: _resources(r, gpus if n == "c0" else 0) for n in [*names, *init]}
        )
        node = GPU_NODE if gpus else f"node-{r.randrange(20)}"
        pod = PodInfo(
            ref.namespace,
            name,
            node,
            owner_kind,
            owner,
            labels,
            annotations,
            {n: s[0] for n, s in specs.items()},
            {n: s[1] for n, s in specs.items()},
            tuple(init),
        )
        c.pods.append(pod)
        last = c.end.timestamp() - STEP * (1 if newest else hours)
        ts = last - STEP * np.arange(hours, dtype=np.float64)[::-1]
        for n in [*names, *init]:
            req = specs[n][0]
            level = pinned.level if pinned is not None else None
            cpu = _series(r, req.get("cpu", 0.25), ts.size, level)
            memory = _series(r, req.get("memory", 256.0 * MI), ts.size, level)
            c.containers.append(ContainerSamples(ref.namespace, name, n, ts, cpu, memory))
        for g in range(gpus):
            busy = pinned.gpu_activity if pinned is not None else r.choice((0.02, 0.3, 0.9))
            activity = np.full(ts.size, busy)
            c.gpus.append(
                GpuSamples(
                    ref.namespace, name, "c0", GPU_NODE, str(g), f"GPU-{name}-{g}", "NVIDIA A100-SXM4-40GB",
                    ts, np.full(ts.size, 8000.0), np.full(ts.size, 32000.0), sm_active=activity,
                )
            )  # fmt: skip
        return pod


def _quantities(values: Mapping[str, float]) -> dict[str, str]:
    return {k: format_resource(k, v) for k, v in values.items()}


def _container(name: str, pod: PodInfo) -> dict[str, Any]:
    resources = {}
    if pod.requests.get(name):
        resources["requests"] = _quantities(pod.requests[name])
    if pod.limits.get(name):
        resources["limits"] = _quantities(pod.limits[name])
    return {"name": name, "image": f"registry.example.com/{name}:1", "resources": resources}


def case_of(ref: WorkloadRef, pod: PodInfo, end: datetime) -> Case:
    """The pod as its controller sends it to admission, and the same pod running."""
    api = "apps/v1"
    meta: dict[str, Any] = {
        "namespace": ref.namespace,
        "labels": dict(pod.labels),
        "annotations": dict(pod.annotations),
        "ownerReferences": [
            {
                "apiVersion": api,
                "kind": pod.owner_kind,
                "name": pod.owner_name,
                "uid": "u",
                "controller": True,
            }
        ],
    }
    if ref.kind == "StatefulSet":
        meta["name"] = pod.name
    else:
        meta["generateName"] = f"{pod.owner_name}-"
    app = [n for n in pod.requests if n not in pod.init_containers]
    spec: dict[str, Any] = {"containers": [_container(n, pod) for n in app]}
    if pod.init_containers:
        spec["initContainers"] = [_container(n, pod) for n in pod.init_containers]
    created = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    started = (end - timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    running = {
        **created,
        "metadata": {**meta, "name": pod.name, "uid": f"uid-{pod.name}", "creationTimestamp": started},
        "status": {
            "phase": "Running",
            "startTime": started,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    return Case(ref, created, running)


def generate(seed: int, n: int, end: datetime, pinned: Sequence[Pinned] = ()) -> Cases:
    """`n` random workloads (seeded) whose data ends at `end`, then the `pinned` ones."""
    cases = Cases(end, seed)
    builder = _Builder(cases, random.Random(seed))
    for i in range(n):
        builder.workload(i)
    for i, p in enumerate(pinned):
        builder.pinned(i, p)
    return cases
