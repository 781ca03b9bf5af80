"""The one owner resolver: pod -> workload through its controller chain (DESIGN.md "Workload identity").

Every part of podsizer resolves pods here. The input is what a pod says about itself (`PodFacts`: name,
controller reference, labels, annotations) and a `ControllerLookup` that answers "which controller owns
this ReplicaSet / ReplicationController / Job". Two lookups exist: the webhook's watched `OwnerCache` (from
ownerReferences, apiVersion included) and the recommender's `OwnerGraph` (kube-state-metrics series or the
Kubernetes API). `OwnerGraph.resolve` and `resolve_pod` (webhook, updater) are thin adapters over `resolve`.

The chain:

    Pod -> ReplicaSet (apps) -> Deployment (apps) | Rollout (argoproj.io)
    Pod -> ReplicationController (core group) -> DeploymentConfig (apps.openshift.io)
    Pod -> Job (batch) -> CronJob (batch)
    Pod -> StatefulSet | DaemonSet | Job (apps, batch: a Job without a CronJob is its own workload)

API groups: a reference with an apiVersion must name the group above for its kind ("v1" is the core
group; a JSON ownerReference without apiVersion reads as "", the core group). A reference whose
`api_version` is None comes from a source that does not carry one (kube-state-metrics' kube_pod_owner and
kube_replicaset_owner have owner_kind only): it matches on kind alone.

A lookup answers `UNCONTROLLED` for an object it knows that has no controller (a bare Job, kube_job_owner
with owner_kind "<none>"). When the lookup has no entry for the pod's ReplicaSet, ReplicationController or
Job (cache not synced yet, object already deleted, series missing), the pod's own labels decide:
- ReplicaSet `<name>-<hash>`: label rollouts-pod-template-hash=<hash> gives Rollout <name>, label
  pod-template-hash=<hash> gives Deployment <name>. With both or neither, the candidates (the stripped
  names, else the name without its last `-` part) are offered, Deployment before Rollout, to the
  caller's `exists` predicate (the webhook's Recommendation snapshot); without a match the pod is skipped.
- ReplicationController: annotation openshift.io/deployment-config.name, else label deploymentconfig.
- Job `<name>-<digits>` (the CronJob controller names its Jobs `<cronjob>-<scheduled minute>`): with the
  caller's `exists` predicate, CronJob <name> then Job `<job>` itself, the first that exists; without it
  the pod is skipped (a CronJob run must not become a workload of its own).

Not workloads, returned as `Skipped` with the reason: OpenShift deployer and hook pods
(`is_deployer_or_hook_pod`), mirror (static) pods, pods without a controller, pods of Argo Experiments
and AnalysisRuns, any other controller kind or API group (a Job controlled by anything but a CronJob).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from podsizer.api.identity import WorkloadRef, is_deployer_or_hook_pod
from podsizer.modes import MIRROR_ANNOTATION
from podsizer.subject import Subject

POD_TEMPLATE_HASH = "pod-template-hash"
ROLLOUT_TEMPLATE_HASH = "rollouts-pod-template-hash"
DC_NAME_ANNOTATION = "openshift.io/deployment-config.name"
DC_LABEL = "deploymentconfig"

DEPLOYER_OR_HOOK = "OpenShift deployer or hook pod"
NO_OWNER_INFORMATION = "no owner information for this pod"
NO_CONTROLLER = "pod has no controller (bare or static pod)"

_EMPTY: Mapping[str, str] = MappingProxyType({})
# API group of each kind a pod's controller may be, and of each workload an intermediate may belong to.
_POD_CONTROLLERS: Mapping[str, str] = MappingProxyType(
    {
        "ReplicaSet": "apps",
        "ReplicationController": "",
        "StatefulSet": "apps",
        "DaemonSet": "apps",
        "Job": "batch",
    }
)
_PARENTS: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "ReplicaSet": MappingProxyType({"Deployment": "apps", "Rollout": "argoproj.io"}),
        "ReplicationController": MappingProxyType({"DeploymentConfig": "apps.openshift.io"}),
        "Job": MappingProxyType({"CronJob": "batch"}),
    }
)
_ARGO_NOT_WORKLOADS = frozenset({"Experiment", "AnalysisRun"})
_CRONJOB_RUN = re.compile(r"^(.+)-\d+$")  # <cronjob>-<scheduled time in minutes>


@dataclass(frozen=True)
class Skipped:
    """Something a source or policy left out, or that failed (`failed`: a sizing error, not a skip), with
    a reason a person can read; code reads the subject's fields, never the reason's words."""

    subject: Subject
    reason: str
    failed: bool = False


@dataclass(frozen=True, slots=True)
class ControllerRef:
    """An object's controller owner reference; api_version None: the source did not say (kind-only match)."""

    api_version: str | None
    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class PodFacts:
    """What a pod says about itself. `name` may be the generateName at admission; `described` False: the
    source has no record of the pod beyond its name."""

    namespace: str
    name: str | None
    controller: ControllerRef | None
    labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    annotations: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    described: bool = True


UNCONTROLLED = ControllerRef(None, "", "")
"""A lookup's answer for an object it knows that has no controller (a Job no CronJob created)."""


class ControllerLookup(Protocol):
    """Answers which controller owns a ReplicaSet, ReplicationController or Job, from memory (None: the
    object is not known; UNCONTROLLED: known, without a controller)."""

    def get(self, namespace: str, kind: str, name: str) -> ControllerRef | None: ...


def controller_ref(
    controller: object, api_version: object, kind: object, name: object
) -> ControllerRef | None:
    """One owner reference's fields -> a ControllerRef when it is the controller (controller True, string
    kind and name); a missing or non-string apiVersion reads as "" (the API server always sets one)."""
    if controller is True and isinstance(kind, str) and isinstance(name, str):
        return ControllerRef(api_version if isinstance(api_version, str) else "", kind, name)
    return None


def controller_of(obj: Mapping[str, object]) -> ControllerRef | None:
    """The controller ownerReference of an API object in its JSON form (metadata.ownerReferences)."""
    meta = obj.get("metadata")
    refs = meta.get("ownerReferences") if isinstance(meta, Mapping) else None
    for r in refs if isinstance(refs, list) else ():
        if isinstance(r, Mapping):
            ref = controller_ref(r.get("controller"), r.get("apiVersion"), r.get("kind"), r.get("name"))
            if ref is not None:
                return ref
    return None


def _text_map(raw: object) -> Mapping[str, str]:
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}


def pod_facts(pod: Mapping[str, object], namespace: str) -> PodFacts:
    """What a pod in its JSON form says about itself (name, or generateName at admission)."""
    meta = pod.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name = meta.get("name") or meta.get("generateName")
    return PodFacts(
        namespace,
        name if isinstance(name, str) else None,
        controller_of(pod),
        _text_map(meta.get("labels")),
        _text_map(meta.get("annotations")),
    )


def resolve_pod(
    pod: Mapping[str, object],
    namespace: str,
    lookup: ControllerLookup,
    exists: Callable[[WorkloadRef], bool] | None = None,
) -> WorkloadRef | None:
    """The workload of a pod in its JSON form (the webhook at admission, the updater for running pods), or
    None for every pod the resolver skips. In memory only: `lookup` is a watched cache."""
    found = resolve(pod_facts(pod, namespace), lookup, exists)
    return found if isinstance(found, WorkloadRef) else None


def _in_group(ref: ControllerRef, group: str) -> bool:
    """True when `ref` is in API group `group` ("" is the core group) or does not say (no apiVersion)."""
    v = ref.api_version
    if v is None:
        return True
    return v[len(group) : len(group) + 1] == "/" and v.startswith(group) if group else "/" not in v


def _not_in_group(ref: ControllerRef, expected: str) -> str:
    group, slash, _ = (ref.api_version or "").partition("/")
    group = group if slash else ""
    return f"{ref.kind}/{ref.name} is in API group {group or 'core'!r}, expected {expected or 'core'!r}"


def resolve(
    pod: PodFacts, lookup: ControllerLookup, exists: Callable[[WorkloadRef], bool] | None = None
) -> WorkloadRef | Skipped:
    """The pod's workload, or a Skipped saying why it is not one of ours."""
    if is_deployer_or_hook_pod(pod.name, pod.labels, pod.annotations):
        return _skip(pod, DEPLOYER_OR_HOOK)
    if not pod.described:
        return _skip(pod, NO_OWNER_INFORMATION)
    if MIRROR_ANNOTATION in pod.annotations:
        return _skip(pod, "mirror pod (a static pod the kubelet runs)")
    ref = pod.controller
    if ref is None or not ref.kind or not ref.name:
        return _skip(pod, NO_CONTROLLER)
    expected = _POD_CONTROLLERS.get(ref.kind)
    if expected is None:
        return _skip(pod, _unsupported_pod_controller(ref.kind))
    if not _in_group(ref, expected):
        return _skip(pod, f"owner {_not_in_group(ref, expected)}")
    if ref.kind in _PARENTS:
        return _via_intermediate(pod, ref, lookup, exists)
    return WorkloadRef(pod.namespace, ref.kind, ref.name)


def _unsupported_pod_controller(kind: str) -> str:
    if kind in _ARGO_NOT_WORKLOADS:
        return f"Argo {kind} pod: not a workload"
    return f"unsupported owner kind {kind}"


def _via_intermediate(
    pod: PodFacts, ref: ControllerRef, lookup: ControllerLookup, exists: Callable[[WorkloadRef], bool] | None
) -> WorkloadRef | Skipped:
    parent = lookup.get(pod.namespace, ref.kind, ref.name)
    if parent == UNCONTROLLED and ref.kind == "Job":
        return WorkloadRef(pod.namespace, "Job", ref.name)
    if parent is None or parent == UNCONTROLLED:
        if ref.kind == "ReplicaSet":
            found = _from_hash_labels(pod.namespace, ref.name, pod.labels, exists)
        elif ref.kind == "Job":
            found = _from_job_name(pod.namespace, ref.name, exists)
        else:
            found = _from_dc_marker(pod.namespace, pod.labels, pod.annotations)
        return found or _skip(pod, f"owner {ref.kind}/{ref.name} has no known controller")
    expected = _PARENTS[ref.kind].get(parent.kind)
    if expected is None:
        why = " (Argo Experiment pods are not workloads)" if parent.kind in _ARGO_NOT_WORKLOADS else ""
        return _skip(pod, f"owner {ref.kind}/{ref.name} is controlled by unsupported kind {parent.kind}{why}")
    if not _in_group(parent, expected):
        return _skip(pod, f"owner {ref.kind}/{ref.name} is controlled by {_not_in_group(parent, expected)}")
    return WorkloadRef(pod.namespace, parent.kind, parent.name)


def _strip_suffix(name: str, suffix: str | None) -> str | None:
    if suffix and name.endswith("-" + suffix) and len(name) > len(suffix) + 1:
        return name[: -(len(suffix) + 1)]
    return None


def _from_hash_labels(
    namespace: str, rs: str, labels: Mapping[str, str], exists: Callable[[WorkloadRef], bool] | None
) -> WorkloadRef | None:
    rollout = _strip_suffix(rs, labels.get(ROLLOUT_TEMPLATE_HASH))
    deployment = _strip_suffix(rs, labels.get(POD_TEMPLATE_HASH))
    if rollout and not deployment:
        return WorkloadRef(namespace, "Rollout", rollout)
    if deployment and not rollout:
        return WorkloadRef(namespace, "Deployment", deployment)
    if exists is None:
        return None
    candidates = [c for c in (rollout, deployment) if c] or ([rs.rsplit("-", 1)[0]] if "-" in rs else [])
    for name in candidates:
        for kind in ("Deployment", "Rollout"):
            ref = WorkloadRef(namespace, kind, name)
            if exists(ref):
                return ref
    return None


def _from_job_name(
    namespace: str, job: str, exists: Callable[[WorkloadRef], bool] | None
) -> WorkloadRef | None:
    """A Job the lookup does not know: its CronJob (by the run's name) or the Job, whichever `exists`."""
    if exists is None:
        return None
    run = _CRONJOB_RUN.match(job)
    candidates = [WorkloadRef(namespace, "CronJob", run.group(1))] if run else []
    candidates.append(WorkloadRef(namespace, "Job", job))
    return next((c for c in candidates if exists(c)), None)


def _from_dc_marker(
    namespace: str, labels: Mapping[str, str], annotations: Mapping[str, str]
) -> WorkloadRef | None:
    dc = annotations.get(DC_NAME_ANNOTATION) or labels.get(DC_LABEL)
    return WorkloadRef(namespace, "DeploymentConfig", dc) if dc else None


def _skip(pod: PodFacts, reason: str) -> Skipped:
    return Skipped(Subject.of_pod(pod.namespace, pod.name or ""), reason)


@dataclass(frozen=True)
class PodOwner:
    """A pod as kube-state-metrics describes it: controller owner kind and name (no apiVersion), labels,
    annotations."""

    namespace: str
    pod: str
    owner_kind: str | None
    owner_name: str | None
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)

    def facts(self) -> PodFacts:
        """The resolver's view: a kind-only controller reference."""
        kind, name = self.owner_kind, self.owner_name
        ref = ControllerRef(None, kind, name) if kind and name else None
        return PodFacts(self.namespace, self.pod, ref, self.labels, self.annotations)


@dataclass(frozen=True)
class OwnerGraph:
    """Pods and ReplicaSet/ReplicationController/Job controller links of one cluster snapshot; immutable
    once built. It is the `ControllerLookup` of the recommender's sources."""

    pods: Mapping[tuple[str, str], PodFacts]
    links: Mapping[tuple[str, str, str], ControllerRef]

    @staticmethod
    def build(
        pods: list[PodOwner],
        links: list[tuple[str, str, str, str, str]],
    ) -> OwnerGraph:
        """kube-state-metrics-style data; links: (namespace, kind, name, owner_kind, owner_name), an empty
        owner_kind for a known object without a controller (a bare Job: UNCONTROLLED)."""
        return OwnerGraph.of(
            (p.facts() for p in pods),
            (
                (ns, kind, name, ControllerRef(None, ok, on) if ok else UNCONTROLLED)
                for ns, kind, name, ok, on in links
            ),
        )

    @staticmethod
    def of(pods: Iterable[PodFacts], links: Iterable[tuple[str, str, str, ControllerRef]]) -> OwnerGraph:
        """Resolver facts; links: (namespace, kind, name, controller) of ReplicaSets, RCs and Jobs."""
        return OwnerGraph(
            pods=MappingProxyType({(p.namespace, p.name or ""): p for p in pods}),
            links=MappingProxyType({(ns, kind, name): ref for ns, kind, name, ref in links}),
        )

    def get(self, namespace: str, kind: str, name: str) -> ControllerRef | None:
        return self.links.get((namespace, kind, name))

    def resolve(self, namespace: str, pod: str) -> WorkloadRef | Skipped:
        """The pod's workload, or a Skipped saying why it is not one of ours."""
        facts = self.pods.get((namespace, pod)) or PodFacts(namespace, pod, None, described=False)
        return resolve(facts, self)
