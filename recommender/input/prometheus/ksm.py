"""kube-state-metrics answers as the raw model: pods and owner links, OOM kills, autoscalers, nodes."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from podsizer.api.identity import WorkloadRef
from podsizer.owners import Skipped
from podsizer.subject import Subject
from recommender.input.prometheus import queries as q
from recommender.input.prometheus.client import InstantResult, Labels
from recommender.input.prometheus.labels import decode_labels, is_spot, resource_name
from recommender.model import Autoscaler, NodeInfo
from recommender.model.raw import OwnerLink, PodInfo

ContainerKey = tuple[str, str, str]
_NONE = {"", "<none>"}
_KEY = ("namespace", "pod", "container")
MAX_SAMPLE_COUNT = 2**53  # more raw samples than any window holds; and every count below is exact in a float


def _key(lab: Labels) -> ContainerKey:
    return (lab.get("namespace", ""), lab.get("pod", ""), lab.get("container", ""))


@dataclass
class _Pod:
    owner: tuple[str | None, str | None, bool] = (None, None, False)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    init: set[str] = field(default_factory=set)
    node: str = ""
    requests: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(dict))
    limits: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(dict))


@dataclass(frozen=True)
class Identity:
    """What one namespace's KSM series say about its pods."""

    pods: list[PodInfo]
    owners: list[OwnerLink]
    oom_killed: set[ContainerKey]
    samples: dict[ContainerKey, int]


def _pod_owner(pod: _Pod, lab: Labels) -> None:
    kind, name = lab.get("owner_kind", ""), lab.get("owner_name", "")
    controller = lab.get("owner_is_controller") == "true"
    if pod.owner == (None, None, False) or (controller and not pod.owner[2]):
        pod.owner = (None if kind in _NONE else kind, None if name in _NONE else name, controller)


# Identity part -> (the intermediate's kind, the KSM label holding its name).
_LINKS = {
    "rs_owner": ("ReplicaSet", "replicaset"),
    "rc_owner": ("ReplicationController", "replicationcontroller"),
    "job_owner": ("Job", "job_name"),
}


def _link(part: str, lab: Labels) -> OwnerLink | None:
    """The controller link of one owner series. A Job's series with owner_kind "<none>" says the Job has
    no controller (a bare Job: an OwnerLink with an empty owner_kind); for ReplicaSets and RCs, nothing."""
    kind, label = _LINKS[part]
    name = lab.get(label, "")
    okind, oname = lab.get("owner_kind", ""), lab.get("owner_name", "")
    if okind in _NONE or lab.get("owner_is_controller") == "false":
        return OwnerLink(lab.get("namespace", ""), kind, name, "", "") if kind == "Job" and name else None
    return OwnerLink(lab.get("namespace", ""), kind, name, okind, oname)


def _add_link(links: dict[tuple[str, str, str], OwnerLink], link: OwnerLink | None) -> None:
    """Keep `link`; a controller wins over "<none>" (several series of one Job over the window)."""
    if link is None:
        return
    at = (link.namespace, link.kind, link.name)
    if link.owner_kind or at not in links:
        links[at] = link


def identity(series: Iterable[Labels], facts: InstantResult) -> Identity:
    """Pods (owner reference, labels, annotations, init containers, node, requests and limits), the
    ReplicaSet/ReplicationController/Job links, OOM-killed containers and raw working-set sample counts."""
    pods: dict[tuple[str, str], _Pod] = defaultdict(_Pod)
    links: dict[tuple[str, str, str], OwnerLink] = {}
    oom: set[ContainerKey] = set()
    for lab in series:
        part = q.IDENTITY_SERIES.get(lab.get("__name__", ""))
        key = (lab.get("namespace", ""), lab.get("pod", ""))
        if part == "pod_owner":
            _pod_owner(pods[key], lab)
        elif part in _LINKS:
            _add_link(links, _link(part, lab))
        elif part == "pod_labels":
            pods[key].labels.update(decode_labels(lab))
        elif part == "pod_annotations":
            pods[key].annotations.update(decode_labels(lab, "annotation_"))
        elif part == "init_container":
            pods[key].init.add(lab.get("container", ""))
        elif part == "oom":
            oom.add(_key(lab))
    samples: dict[ContainerKey, int] = {}
    for lab, v in facts:
        if not math.isfinite(v):
            continue
        ns, pod, container = _key(lab)
        mark = lab.get(q.MARK)
        if mark == "count":
            if 0 <= v <= MAX_SAMPLE_COUNT:  # an impossible count is unknown, not a huge int
                samples[(ns, pod, container)] = int(v)
        elif mark in ("requests", "limits") and (ns, pod) in pods:
            p = pods[(ns, pod)]
            p.node = p.node or lab.get("node", "")
            table = p.requests if mark == "requests" else p.limits
            table[container][resource_name(lab.get("resource", ""))] = v
    infos = [
        PodInfo(
            ns, name, p.node, p.owner[0], p.owner[1], p.labels, p.annotations,
            {c: dict(r) for c, r in p.requests.items()}, {c: dict(r) for c, r in p.limits.items()},
            tuple(sorted(p.init)),
        )
        for (ns, name), p in sorted(pods.items())
    ]  # fmt: skip
    return Identity(infos, list(links.values()), oom, samples)


def _autoscaler(ns: str, hpa: str, rows: list[tuple[Labels, float]]) -> Autoscaler | Skipped:
    subject = Subject.of_autoscaler(ns, hpa)
    info = next((lab for lab, _ in rows if lab.get(q.MARK) == "info"), None)
    if info is None:
        return Skipped(subject, "no kube_horizontalpodautoscaler_info series (target unknown)")
    kind, target = info.get("scaletargetref_kind", ""), info.get("scaletargetref_name", "")
    try:
        wl = WorkloadRef(ns, kind, target)
    except ValueError:
        return Skipped(subject, f"scales unsupported kind {kind or '(none)'}")
    values = {
        lab.get(q.MARK): v
        for lab, v in rows
        if lab.get(q.MARK) in ("min", "max", "current") and math.isfinite(v)
    }
    targets = {
        lab.get("metric_name", ""): v / 100.0
        for lab, v in rows
        if lab.get(q.MARK) == "target"
        and lab.get("metric_target_type") == "utilization"
        and lab.get("metric_name") in ("cpu", "memory")
        and math.isfinite(v)
    }
    keda = hpa.startswith("keda-hpa-")
    kind_name: Literal["HorizontalPodAutoscaler", "ScaledObject"] = (
        "ScaledObject" if keda else "HorizontalPodAutoscaler"
    )
    cur = values.get("current")
    return Autoscaler(
        workload=wl,
        kind=kind_name,
        name=hpa[len("keda-hpa-") :] if keda else hpa,
        min_replicas=int(values.get("min", 1)),
        max_replicas=int(values.get("max", 0)),
        target_utilization=targets,
        current_replicas=None if cur is None else int(cur),
    )


def autoscalers(result: InstantResult, namespaces: set[str]) -> tuple[list[Autoscaler], list[Skipped]]:
    """HPAs (KEDA ScaledObjects show up as keda-hpa-<name>) of the given namespaces, and those skipped."""
    per: dict[tuple[str, str], list[tuple[Labels, float]]] = defaultdict(list)
    for lab, v in result:
        per[(lab.get("namespace", ""), lab.get("horizontalpodautoscaler", ""))].append((lab, v))
    found: list[Autoscaler] = []
    skipped: list[Skipped] = []
    for (ns, hpa), rows in sorted(per.items()):
        if ns not in namespaces:
            continue
        got = _autoscaler(ns, hpa, rows)
        if isinstance(got, Skipped):
            skipped.append(got)
        else:
            found.append(got)
    return found, skipped


def nodes(result: InstantResult) -> list[NodeInfo]:
    """NodeInfo from kube_node_labels (instance type, spot, GPU product/count/memory, region) and
    kube_node_status_allocatable (cpu cores, memory bytes, nvidia.com/gpu; other resources are ignored)."""
    labels: dict[str, dict[str, str]] = defaultdict(dict)
    allocatable: dict[str, dict[str, float]] = defaultdict(dict)
    for lab, value in result:
        node = lab.get("node", "")
        if not node:
            continue
        labels[node].update(decode_labels(lab) if lab.get(q.MARK) == "labels" else {})
        resource = lab.get("resource", "")
        wanted = lab.get(q.MARK) == "allocatable" and resource in q.ALLOCATABLE_RESOURCES
        if wanted and math.isfinite(value) and value > 0:
            allocatable[node][resource_name(resource)] = value
    out = []
    for node, nl in sorted(labels.items()):
        count = nl.get("nvidia.com/gpu.count", "0")
        memory = nl.get("nvidia.com/gpu.memory")
        out.append(
            NodeInfo(
                name=node,
                instance_type=nl.get("node.kubernetes.io/instance-type")
                or nl.get("beta.kubernetes.io/instance-type"),
                capacity_type="spot" if is_spot(nl) else "on-demand",
                gpu_product=nl.get("nvidia.com/gpu.product"),
                gpu_count=int(count) if count.isdigit() else 0,
                gpu_memory_mib=float(memory) if memory and memory.isdigit() else None,
                region=nl.get("topology.kubernetes.io/region")
                or nl.get("failure-domain.beta.kubernetes.io/region"),
                labels=nl,
                allocatable=allocatable.get(node, {}),
            )
        )
    return out
