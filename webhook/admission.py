"""The pure admission decision: AdmissionReview in, (reply, decision) out; it never raises, never denies."""

from __future__ import annotations

import base64
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, runtime_checkable

import orjson

from podsizer.api import Recommendation, WorkloadRef, is_deployer_or_hook_pod
from podsizer.keys import APPLIED_KEY
from podsizer.limitrange import ClusterPolicy, ClusterPolicyLookup
from podsizer.modes import (
    MIRROR_ANNOTATION,
    MetadataLookup,
    Resolved,
    namespace_excluded,
    opted_out,
    resolve,
)
from podsizer.owners import ControllerLookup, resolve_pod
from podsizer.plan import EXCLUDED, mode_skip, plan_pod, pod_metadata
from podsizer.plausibility import Guard
from podsizer.podspec import Change, containers_shape
from podsizer.policy import PlanPolicy
from podsizer.snapshot import SnapshotProvider
from webhook.patch import Op, PatchBuilder
from webhook.wire import AdmissionRequest, AdmissionReview, build_response
from webhook.writer import changes_to_patch, roomy, write_record

log = logging.getLogger("podsizer.webhook")

DECISION_CACHE_SIZE = 4096
ActiveMode = Literal["auto", "dry-run"]
Outcome = Literal["applied", "dry-run", "skipped", "error"]
GuardSink = Callable[[str, str], None]  # (resource, rule) of a value the guard refused or clamped


@runtime_checkable
class NodeLookup(Protocol):
    """The largest node's allocatable (cpu cores, memory bytes, nvidia.com/gpu) from a watched cache; empty:
    no node known. A new mapping whenever it changes: callers may key on identity."""

    def largest_allocatable(self) -> Mapping[str, float]: ...


@dataclass(frozen=True)
class AdmissionConfig:
    """The configuration the decision depends on: the plan's policy (default mode included) and the
    namespaces never mutated (names or glob patterns such as `openshift-*`)."""

    policy: PlanPolicy = field(default_factory=PlanPolicy)
    excluded_namespaces: frozenset[str] = frozenset({"kube-system"})


@dataclass(frozen=True)
class Decision:
    """What happened to one review, for the reply, the metric and the log line."""

    outcome: Outcome
    reason: str
    patch: tuple[Op, ...] = ()
    workload: WorkloadRef | None = None
    recommendation: str | None = None
    changes: tuple[Change, ...] = ()
    guarded: tuple[Guard, ...] = ()  # values the plausibility guard refused or clamped


@dataclass(frozen=True, slots=True)
class _Cached:
    """A decision for one (Recommendation object, mode, GPU opt-in, pod shape), its patch already encoded."""

    rec: Recommendation  # held, so id(rec) in the key cannot be reused by another object
    decision: Decision
    encoded_patch: str | None
    cluster: ClusterPolicy | None = None  # held for the same reason: id(cluster) is in the key


class DecisionCache:
    """LRU of decisions bounded in entries and in approximate bytes; keys carry everything a decision after
    the store lookup depends on.

    Pods of one ReplicaSet differ only in names and uids, which the decision does not read, so replicas
    share one entry. A new store snapshot brings new Recommendation objects, hence new keys. Entries are
    shared between replies: a Decision's patch ops must be read, never changed. The byte size of an entry is
    estimated from its key (the pod's container shape) and its decision (patch, changes, encoded patch);
    the Recommendation it holds belongs to the store snapshot and is not counted. An entry larger than
    `max_bytes // OVERSIZED_FRACTION` is not cached, so one huge pod cannot flush everything else.
    """

    DEFAULT_MAX_BYTES = 32 * 1024 * 1024
    OVERSIZED_FRACTION = 16
    _OBJECT_BYTES = 64  # rough cost of a small object or container header

    def __init__(self, size: int = DECISION_CACHE_SIZE, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.size = size
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, tuple[_Cached, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> _Cached | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            self._entries.move_to_end(key)
            return found[0]

    def put(self, key: Hashable, entry: _Cached) -> None:
        cost = self.approx_bytes(key) + self.approx_bytes((entry.decision.patch, entry.decision.changes))
        cost += len(entry.encoded_patch or "") + self._OBJECT_BYTES * 4
        if cost > self.max_bytes // self.OVERSIZED_FRACTION:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._entries[key] = (entry, cost)
            self._bytes += cost
            while self._entries and (len(self._entries) > self.size or self._bytes > self.max_bytes):
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped

    @property
    def bytes(self) -> int:
        """The approximate bytes of what is cached now."""
        return self._bytes

    @classmethod
    def approx_bytes(cls, value: object, depth: int = 0) -> int:
        """A rough size of JSON-like data (text, numbers, tuples, lists, dicts); other objects: a little."""
        if isinstance(value, str | bytes):
            return cls._OBJECT_BYTES // 2 + len(value)
        if depth > 16:
            return cls._OBJECT_BYTES
        if isinstance(value, tuple | list | frozenset):
            return cls._OBJECT_BYTES + sum(cls.approx_bytes(v, depth + 1) + 8 for v in value)
        if isinstance(value, Mapping):
            items = value.items()
            return cls._OBJECT_BYTES * 2 + sum(
                cls.approx_bytes(k, depth + 1) + cls.approx_bytes(v, depth + 1) + 16 for k, v in items
            )
        return cls._OBJECT_BYTES // 2

    def __len__(self) -> int:
        return len(self._entries)


def _annotations_state(pod: Mapping[str, Any]) -> int:
    """What the annotation op needs created: 0 /metadata and below, 1 /metadata/annotations, 2 nothing."""
    meta = pod.get("metadata")
    if not isinstance(meta, Mapping):
        return 0
    return 2 if isinstance(meta.get("annotations"), Mapping) else 1


def _encode(patch: Sequence[Op]) -> str | None:
    return base64.b64encode(orjson.dumps(list(patch))).decode("ascii") if patch else None


def _skip(reason: str, workload: WorkloadRef | None = None) -> Decision:
    return Decision("skipped", reason, workload=workload)


def _is_pod_create(req: Mapping[str, Any]) -> bool:
    kind = req.get("kind")
    return (
        isinstance(kind, Mapping)
        and kind.get("group", "") == ""
        and kind.get("version") == "v1"
        and kind.get("kind") == "Pod"
        and req.get("operation") == "CREATE"
        and not req.get("subResource")
        and isinstance(req.get("object"), Mapping)
    )


class Admitter:
    """Owner resolver + pod plan + patch, reading only in-memory caches."""

    def __init__(
        self,
        config: AdmissionConfig,
        snapshots: SnapshotProvider,
        owners: ControllerLookup,
        metadata: MetadataLookup,
        cache_size: int = DECISION_CACHE_SIZE,
        policies: ClusterPolicyLookup | None = None,
        nodes: NodeLookup | None = None,
    ) -> None:
        """`cache_size` 0 turns the decision cache off. `policies` (LimitRanges, quota headroom) and `nodes`
        (the largest node's allocatable, which lowers the policy's ceilings) default to `metadata` when it has
        them (the watched MetadataCache does)."""
        self.config = config
        self.snapshots = snapshots
        self.owners = owners
        self.metadata = metadata
        self.policies = policies or (metadata if isinstance(metadata, ClusterPolicyLookup) else None)
        self.nodes = nodes or (metadata if isinstance(metadata, NodeLookup) else None)
        self._node_policy: tuple[Mapping[str, float], PlanPolicy] | None = None
        self.cache = DecisionCache(cache_size) if cache_size > 0 else None
        self.on_guard: GuardSink | None = None  # e.g. WebhookMetrics.guarded: counts (resource, rule)

    def decide(self, req: AdmissionRequest) -> Decision:
        return self._decide(req)[0]

    def policy(self) -> PlanPolicy:
        """The configured policy, its ceilings lowered to the largest node's allocatable where nodes are known
        (min of the two per resource: podsizer.plausibility.Ceilings.from_nodes)."""
        largest = self.nodes.largest_allocatable() if self.nodes is not None else None
        if not largest:
            return self.config.policy
        memo = self._node_policy
        if memo is not None and memo[0] is largest:
            return memo[1]
        base = self.config.policy
        policy = replace(base, ceilings=base.ceilings.from_nodes([largest]))
        self._node_policy = (largest, policy)
        return policy

    def _decide(self, req: AdmissionRequest) -> tuple[Decision, str | None]:
        """The decision and, when it came from or went to the cache, its patch already encoded."""
        decision = self._decide_uncached_prefix(req)
        if isinstance(decision, Decision):
            return decision, None
        pod, workload, resolved, rec, cluster = decision
        policy = self.policy()
        cache = self.cache
        shape = containers_shape(pod) if cache is not None and roomy(pod) else None
        key: Hashable | None = None
        if cache is not None and shape is not None:
            # The plan reads the pod's containers, the policy, the Recommendation and what the metadata
            # resolved to (mode, GPU opt-in); the pod's labels/annotations only decide those, and the
            # annotation op is the same whether or not podsizer.io/* keys already exist (and the record is
            # the same for every pod whose other annotations leave it room: `roomy`). The namespace's
            # ClusterPolicy is a new object whenever a LimitRange or quota there changes; the policy (a value)
            # carries the ceilings, so a Node event that changes the largest allocatable changes the key.
            mode, gpu, large = resolved.mode, resolved.gpu_resize, resolved.allow_large_change
            applied = pod_metadata(pod).annotations.get(APPLIED_KEY)  # the original values (re-invocation)
            key = (id(rec), id(cluster), mode, gpu, large, policy, _annotations_state(pod), shape, applied)
            hit = cache.get(key)
            if (
                hit is not None
                and hit.rec is rec
                and hit.cluster is cluster
                and hit.decision.workload == workload
            ):
                return hit.decision, hit.encoded_patch
        result = self._apply(pod, workload, resolved, rec, cluster, policy)
        if key is None or cache is None:
            return result, None
        encoded = _encode(result.patch)
        cache.put(key, _Cached(rec, result, encoded, cluster))
        return result, encoded

    def _decide_uncached_prefix(
        self, req: AdmissionRequest
    ) -> Decision | tuple[Mapping[str, Any], WorkloadRef, Resolved, Recommendation, ClusterPolicy | None]:
        """Everything up to the store lookup: a skip, or what the plan needs."""
        if not _is_pod_create(req):
            return _skip("not-a-pod-create")
        pod: Mapping[str, Any] = req["object"] or {}
        meta = pod.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        namespace = req.get("namespace") or meta.get("namespace")
        if not isinstance(namespace, str) or not namespace:
            return _skip("no-namespace")
        own = pod_metadata(pod)
        if namespace_excluded(namespace, self.config.excluded_namespaces):
            return _skip("excluded-namespace")
        if MIRROR_ANNOTATION in own.annotations:
            return _skip("mirror-pod")
        name = meta.get("name") or meta.get("generateName")
        if is_deployer_or_hook_pod(name if isinstance(name, str) else None, own.labels, own.annotations):
            return _skip("deployer-or-hook-pod")
        if opted_out(own):  # before owner resolution: an opted-out pod costs nothing more
            return _skip(EXCLUDED["pod"])
        ns_meta = self.metadata.namespace(namespace)
        if opted_out(ns_meta):
            return _skip(EXCLUDED["namespace"])
        snapshot = self.snapshots.current()
        workload = resolve_pod(pod, namespace, self.owners, snapshot.has if snapshot is not None else None)
        if workload is None:
            return _skip("no-workload")
        resolved = resolve(self.config.policy, own, self.metadata.workload(workload), ns_meta)
        skip = mode_skip(resolved)
        if skip is not None:
            return _skip(skip, workload)
        if snapshot is None:
            return _skip("store-not-loaded", workload)
        rec = snapshot.get(workload)
        if rec is None:
            return _skip("no-recommendation", workload)
        cluster = self.policies.cluster_policy(namespace) if self.policies is not None else None
        return pod, workload, resolved, rec, cluster

    def _apply(
        self,
        pod: Mapping[str, Any],
        workload: WorkloadRef,
        resolved: Resolved,
        rec: Recommendation,
        cluster: ClusterPolicy | None = None,
        policy: PlanPolicy | None = None,
    ) -> Decision:
        """The plan's changes as a patch (auto) and the record of them (auto and dry-run)."""
        plan = plan_pod(pod, rec, self.policy() if policy is None else policy, resolved, cluster=cluster)
        if plan.skip is not None:
            if plan.detail:
                log.warning("%s: %s: %s", workload, plan.skip, plan.detail)
            return Decision("skipped", plan.skip, workload=workload, guarded=plan.guarded)
        if plan.notes:
            log.info("%s: %s", workload, "; ".join(plan.notes))
        mode: ActiveMode = "auto" if plan.mode == "auto" else "dry-run"
        builder = PatchBuilder(pod)
        if mode == "auto":
            changes_to_patch(builder, plan.changes)
        write_record(builder, plan.record, rec, mode)  # from the original values: re-invocation keeps them
        outcome: Outcome = "applied" if mode == "auto" else "dry-run"
        ops = tuple(builder.ops)
        return Decision(outcome, outcome, ops, workload, rec.name, plan.changes, plan.guarded)

    def review(self, review: AdmissionReview) -> tuple[AdmissionReview, Decision]:
        """The reply for an envelope-checked review; any internal error becomes allowed without a patch."""
        encoded: str | None = None
        try:
            decision, encoded = self._decide(review["request"])
        except Exception as exc:
            log.exception(
                "admission: internal error, allowing without a patch (uid %s)", review["request"].get("uid")
            )
            decision = Decision("error", type(exc).__name__)
        if decision.guarded and self.on_guard is not None:  # per review: cached decisions count too
            for g in decision.guarded:
                self.on_guard(g.resource, g.rule)
        return build_response(review, decision.patch, encoded_patch=encoded), decision
