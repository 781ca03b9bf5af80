"""The pure admission decision: AdmissionReview in, (reply, decision) out; it never raises, never denies."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from recommender.api import WorkloadRef, is_deployer_or_hook_pod
from webhook.calculators import (
    AnnotationsCalculator,
    CalcOptions,
    Calculator,
    Change,
    changes_to_patch,
    default_calculators,
    pod_containers,
)
from webhook.modes import MIRROR_ANNOTATION, MetadataLookup, Mode, effective_mode, excluded
from webhook.owners import OwnerLookup, resolve_workload
from webhook.patch import Op, PatchBuilder
from webhook.store import SnapshotProvider
from webhook.wire import AdmissionRequest, AdmissionReview, build_response

log = logging.getLogger("podsizer.webhook")

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


def _skip(reason: str, workload: WorkloadRef | None = None) -> Decision:
    return Decision("skipped", reason, workload=workload)


def _str_map(value: Any) -> dict[str, str]:
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
    ) -> None:
        self.config = config
        self.snapshots = snapshots
        self.owners = owners
        self.metadata = metadata
        self.calculators = list(calculators) if calculators is not None else default_calculators()
        self.annotations = annotations or AnnotationsCalculator()

    def decide(self, req: AdmissionRequest) -> Decision:
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
        names = {slot.name for slot in pod_containers(pod)}
        matched = [c for c in rec.containers if c.name in names]
        if not matched:
            return _skip("no-matching-container", workload)
        opts = self.config.options
        if all(c.low_confidence or c.confidence < opts.min_confidence for c in matched):
            return _skip("low-confidence", workload)
        changes = [ch for calc in self.calculators for ch in calc.changes(pod, rec, opts)]
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
        try:
            decision = self.decide(review["request"])
        except Exception as exc:
            log.exception(
                "admission: internal error, allowing without a patch (uid %s)", review["request"].get("uid")
            )
            decision = Decision("error", type(exc).__name__)
        return build_response(review, decision.patch), decision
