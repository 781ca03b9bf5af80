"""The pure admission decision: AdmissionReview in, (reply, decision) out; it never raises, never denies."""

from __future__ import annotations

import base64
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from podsizer.api import Recommendation, WorkloadRef, is_deployer_or_hook_pod
from webhook.calculators import (
    AnnotationsCalculator,
    CalcOptions,
    Calculator,
    Change,
    ContainerSlot,
    GpuCalculator,
    ResourcesCalculator,
    changes_to_patch,
    default_calculators,
)
from webhook.calculators.base import SlotCalculator, container_slots, containers_shape
from webhook.modes import MIRROR_ANNOTATION, MetadataLookup, Mode, effective_mode, excluded
from webhook.owners import OwnerLookup, resolve_workload
from webhook.patch import Op, PatchBuilder
from webhook.store import SnapshotProvider
from webhook.wire import AdmissionRequest, AdmissionReview, build_response

log = logging.getLogger("podsizer.webhook")

DECISION_CACHE_SIZE = 4096
_CACHEABLE_CALCULATORS = (ResourcesCalculator, GpuCalculator)
ActiveMode = Literal["auto", "dry-run"]
Outcome = Literal["applied", "dry-run", "skipped", "error"]


@dataclass(frozen=True)
class AdmissionConfig:
    """The configuration the decision depends on."""

    default_mode: Mode = "dry-run"
    excluded_namespaces: frozenset[str] = frozenset({"kube-system"})
    options: CalcOptions = field(default_factory=CalcOptions)


@dataclass(frozen=True)
class Decision:
    """What happened to one review, for the reply, the metric and the log line."""

    outcome: Outcome
    reason: str
    patch: tuple[Op, ...] = ()
    workload: WorkloadRef | None = None
    recommendation: str | None = None
    changes: tuple[Change, ...] = ()


@dataclass(frozen=True, slots=True)
class _Cached:
    """A decision for one (Recommendation object, mode, pod shape), with its patch already encoded."""

    rec: Recommendation  # held, so id(rec) in the key cannot be reused by another object
    decision: Decision
    encoded_patch: str | None


class DecisionCache:
    """Bounded LRU of decisions; keys carry everything a decision after the store lookup depends on.

    Pods of one ReplicaSet differ only in names and uids, which the decision does not read, so replicas
    share one entry. A new store snapshot brings new Recommendation objects, hence new keys. Entries are
    shared between replies: a Decision's patch ops must be read, never changed.
    """

    def __init__(self, size: int = DECISION_CACHE_SIZE) -> None:
        self.size = size
        self._entries: OrderedDict[Hashable, _Cached] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> _Cached | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key: Hashable, entry: _Cached) -> None:
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


SlotFn = Callable[[Mapping[str, Any], Sequence[ContainerSlot], Recommendation, CalcOptions], list[Change]]


def _slot_fn(calc: Calculator) -> SlotFn:
    if isinstance(calc, SlotCalculator):
        changes_for = calc.changes_for
        return lambda pod, slots, rec, opts: changes_for(slots, rec, opts)
    changes = calc.changes
    return lambda pod, slots, rec, opts: changes(pod, rec, opts)


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


def _str_map(value: Any) -> Mapping[str, str]:
    """The labels/annotations as text; a decoded JSON object of strings is used as it is (read only)."""
    if type(value) is dict:
        for k, v in value.items():
            if type(k) is not str or type(v) is not str:
                break
        else:
            return value
    if not isinstance(value, Mapping):
        return {}
    return {str(k): str(v) for k, v in value.items()}


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
    """Owner resolver + calculators + annotation, reading only in-memory caches."""

    def __init__(
        self,
        config: AdmissionConfig,
        snapshots: SnapshotProvider,
        owners: OwnerLookup,
        metadata: MetadataLookup,
        calculators: Sequence[Calculator] | None = None,
        annotations: AnnotationsCalculator | None = None,
        cache_size: int = DECISION_CACHE_SIZE,
    ) -> None:
        """`cache_size` 0 turns the decision cache off; it is only used with the built-in calculators."""
        self.config = config
        self.snapshots = snapshots
        self.owners = owners
        self.metadata = metadata
        self.annotations = annotations or AnnotationsCalculator()
        self.cache = DecisionCache(cache_size) if cache_size > 0 else None
        self.calculators = list(calculators) if calculators is not None else default_calculators()

    @property
    def calculators(self) -> list[Calculator]:
        return self._calculators

    @calculators.setter
    def calculators(self, value: Sequence[Calculator]) -> None:
        self._calculators = list(value)
        self._slot_fns = [_slot_fn(c) for c in self._calculators]
        # Only the built-in calculators are known to read nothing but the slots the cache key holds.
        self._cacheable = all(type(c) in _CACHEABLE_CALCULATORS for c in self._calculators)

    def decide(self, req: AdmissionRequest) -> Decision:
        return self._decide(req)[0]

    def _decide(self, req: AdmissionRequest) -> tuple[Decision, str | None]:
        """The decision and, when it came from or went to the cache, its patch already encoded."""
        decision = self._decide_uncached_prefix(req)
        if isinstance(decision, Decision):
            return decision, None
        pod, workload, mode, rec = decision
        cache = self.cache if self._cacheable and type(self.annotations) is AnnotationsCalculator else None
        shape = containers_shape(pod) if cache is not None else None
        key: Hashable | None = None
        if cache is not None and shape is not None:
            # The pod's annotations and labels are not in the key: they only decide the skips and the mode
            # above, and the annotation op is the same whether or not podsizer.io/* keys already exist.
            key = (id(rec), mode, self.config.options, _annotations_state(pod), shape)
            hit = cache.get(key)
            if hit is not None and hit.rec is rec and hit.decision.workload == workload:
                return hit.decision, hit.encoded_patch
        result = self._calculate(pod, container_slots(pod), workload, mode, rec)
        if key is None or cache is None:
            return result, None
        encoded = _encode(result.patch)
        cache.put(key, _Cached(rec, result, encoded))
        return result, encoded

    def _decide_uncached_prefix(
        self, req: AdmissionRequest
    ) -> Decision | tuple[Mapping[str, Any], WorkloadRef, ActiveMode, Recommendation]:
        """Everything up to the store lookup: a skip, or what the calculators need."""
        if not _is_pod_create(req):
            return _skip("not-a-pod-create")
        pod: Mapping[str, Any] = req["object"] or {}
        meta = pod.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        namespace = req.get("namespace") or meta.get("namespace")
        if not isinstance(namespace, str) or not namespace:
            return _skip("no-namespace")
        labels, annotations = _str_map(meta.get("labels")), _str_map(meta.get("annotations"))
        if namespace in self.config.excluded_namespaces:
            return _skip("excluded-namespace")
        if MIRROR_ANNOTATION in annotations:
            return _skip("mirror-pod")
        name = meta.get("name") or meta.get("generateName")
        if is_deployer_or_hook_pod(name if isinstance(name, str) else None, labels, annotations):
            return _skip("deployer-or-hook-pod")
        if excluded(annotations, labels):
            return _skip("excluded-pod")
        ns_meta = self.metadata.namespace(namespace)
        if ns_meta is not None and excluded(ns_meta.labels, ns_meta.annotations):
            return _skip("excluded-namespace")
        snapshot = self.snapshots.current()
        workload = resolve_workload(pod, namespace, self.owners, snapshot)
        if workload is None:
            return _skip("no-workload")
        wl_meta = self.metadata.workload(workload)
        if wl_meta is not None and excluded(wl_meta.annotations, wl_meta.labels):
            return _skip("excluded-workload", workload)
        mode = effective_mode(
            self.config.default_mode,
            annotations,
            wl_meta,
            ns_meta,
            ("pod", str(workload), f"namespace {namespace}"),
        )
        if mode == "off":
            return _skip("mode-off", workload)
        if snapshot is None:
            return _skip("store-not-loaded", workload)
        rec = snapshot.get(workload)
        if rec is None:
            return _skip("no-recommendation", workload)
        return pod, workload, mode, rec

    def _calculate(
        self,
        pod: Mapping[str, Any],
        slots: Sequence[ContainerSlot],
        workload: WorkloadRef,
        mode: ActiveMode,
        rec: Recommendation,
    ) -> Decision:
        names = {slot.name for slot in slots}
        matched = [c for c in rec.containers if c.name in names]
        if not matched:
            return _skip("no-matching-container", workload)
        opts = self.config.options
        if all(c.low_confidence or c.confidence < opts.min_confidence for c in matched):
            return _skip("low-confidence", workload)
        changes = [ch for fn in self._slot_fns for ch in fn(pod, slots, rec, opts)]
        if not changes:
            return _skip("no-change", workload)
        builder = PatchBuilder(pod)
        if mode == "auto":
            changes_to_patch(builder, changes)
        self.annotations.apply(builder, changes, rec, mode)
        outcome: Outcome = "applied" if mode == "auto" else "dry-run"
        return Decision(outcome, outcome, tuple(builder.ops), workload, rec.name, tuple(changes))

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
        return build_response(review, decision.patch, encoded_patch=encoded), decision
