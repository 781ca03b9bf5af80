"""The pod plan: (pod or template, Recommendation, policy, modes) -> exactly the changes the pod gets.

Steps, in order (docs/webhook.md): mode and exclusion, low confidence, bounds, limit policy, the GPU
opt-in, then over every change the `plausible` hook: plausibility limits (podsizer.plausibility) and
cluster policy (LimitRange, pod-level resources, ResourceQuota headroom).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from functools import lru_cache
from typing import Literal

from podsizer.api import ContainerRecommendation, Recommendation
from podsizer.api.quantity import format_resource
from podsizer.baseline import Baseline, original_pod, rebase
from podsizer.bounds import BoundsError, clip, clip_count, policy_for
from podsizer.kube.times import format_time
from podsizer.limitrange import NO_CLUSTER_POLICY, ClusterPolicy, fit
from podsizer.modes import Meta, Metadata, Resolved, Scope, resolve
from podsizer.plausibility import Guard, Replan, guard_changes
from podsizer.podspec import FIELDS, Change, ContainerSlot, CurrentResources, container_slots, quantity
from podsizer.policy import LimitPolicy, Mode, PlanPolicy
from podsizer.resources import CPU_MEMORY, GPU, is_mig

SkipReason = Literal[
    "excluded-pod",
    "excluded-workload",
    "excluded-namespace",
    "mode-off",
    "no-matching-container",
    "low-confidence",
    "invalid-bounds",
    "no-change",
    "policy-limited",  # every change was dropped by plausibility limits or the cluster's policy (see detail)
]
EXCLUDED: dict[Scope, SkipReason] = {
    "pod": "excluded-pod",
    "workload": "excluded-workload",
    "namespace": "excluded-namespace",
}


@dataclass(frozen=True)
class PodPlan:
    """The effective mode and either a skip reason or the exact changes (auto patches, dry-run records)."""

    mode: Mode
    gpu_resize: bool
    changes: tuple[Change, ...] = ()
    skip: SkipReason | None = None
    detail: str = ""
    notes: tuple[str, ...] = ()  # changes adjusted or dropped by plausibility limits or cluster policy
    guarded: tuple[
        Guard, ...
    ] = ()  # values the plausibility guard refused or clamped (counted by the webhook)
    recorded: tuple[Change, ...] | None = None  # from the pod's original values (podsizer.baseline): what
    # podsizer.io/applied keeps; None: the pod is as it was first admitted, `changes` are that

    @property
    def record(self) -> tuple[Change, ...]:
        """The changes the podsizer.io/applied (or dry-run) record holds: from the original values."""
        return self.changes if self.recorded is None else self.recorded


def mode_skip(resolved: Resolved) -> SkipReason | None:
    """Step 1: an opt-out anywhere, or mode off, means no change at all."""
    if resolved.excluded_by is not None:
        return EXCLUDED[resolved.excluded_by]
    return "mode-off" if resolved.mode == "off" else None


def _str_map(value: object) -> Mapping[str, str]:
    """Labels/annotations as text; a decoded JSON object of strings is used as it is (read only)."""
    if type(value) is dict:
        for k, v in value.items():
            if type(k) is not str or type(v) is not str:
                break
        else:
            return value
    if not isinstance(value, Mapping):
        return {}
    return {str(k): str(v) for k, v in value.items()}


def pod_metadata(pod: Mapping[str, object]) -> Meta:
    """The pod's (or template's) own labels and annotations."""
    meta = pod.get("metadata")
    if not isinstance(meta, Mapping):
        return Meta({}, {})
    return Meta(_str_map(meta.get("labels")), _str_map(meta.get("annotations")))


def usable(cr: ContainerRecommendation | None, policy: PlanPolicy) -> bool:
    """Step 2: a low-confidence container recommendation is never applied."""
    return cr is not None and not cr.low_confidence and cr.confidence >= policy.min_confidence


def plan_pod(
    pod: Mapping[str, object],
    rec: Recommendation,
    policy: PlanPolicy,
    resolved: Resolved | None = None,
    *,
    workload: Metadata | None = None,
    namespace: Metadata | None = None,
    cluster: ClusterPolicy | None = None,
    template: Sequence[CurrentResources] | None = None,
) -> PodPlan:
    """The one pure function every consumer calls; `resolved` defaults to resolving the pod's own
    metadata with `workload` and `namespace` (see podsizer.modes.resolve). `cluster` is the namespace's
    LimitRanges and quota headroom (the webhook's watched cache); None when not known (reports, console).
    `template`: the workload's pod template's containers, where known (the updater).

    The plan is made for the pod as it was originally (podsizer.baseline: its podsizer.io/applied record,
    else the template), so the maximum change factor is one budget per workload; `changes` then bring
    the pod as it is now to that target, `recorded` states them from the original values. A record whose
    target would be wider than the template (else the pod's own values) allows is not believed."""
    own = pod_metadata(pod)
    if resolved is None:
        resolved = resolve(policy, own, workload, namespace)
    skip = mode_skip(resolved)
    if skip is not None:
        return PodPlan(resolved.mode, resolved.gpu_resize, skip=skip)
    current = container_slots(pod)
    baseline = Baseline.of(own.annotations, rec.name, template, cluster)
    plan = _from_original(pod, current, baseline, rec, policy, resolved, cluster)
    if not baseline.from_record or plan.skip not in (None, "no-change", "policy-limited"):
        return plan
    factor = None if resolved.allow_large_change else policy.max_change_factor
    widened = baseline.widened(current, plan.changes, factor, policy.ceilings)
    if widened is None:
        return plan
    plan = _from_original(pod, current, baseline.without_record(), rec, policy, resolved, cluster)
    return replace(plan, notes=(*plan.notes, f"podsizer.io/applied not believed: it would widen {widened}"))


def _from_original(
    pod: Mapping[str, object],
    current: Sequence[ContainerSlot],
    baseline: Baseline,
    rec: Recommendation,
    policy: PlanPolicy,
    resolved: Resolved,
    cluster: ClusterPolicy | None,
) -> PodPlan:
    """The plan made for the pod with `baseline`'s originals put back, as changes from the pod now."""
    restored = baseline.restored(current)
    if not restored:
        return _plan(pod, current, rec, policy, resolved, cluster)
    original = original_pod(pod, restored)
    slots = container_slots(original)
    plan = _plan(original, slots, rec, policy, resolved, cluster)
    if plan.skip not in (None, "no-change", "policy-limited"):
        return plan
    by_name = {c.name: c for c in rec.containers}
    managed = frozenset((s.section, s.index) for s in slots if usable(by_name.get(s.name), policy))
    changes = rebase(plan.changes, slots, current, managed)  # the target: planned, else the original
    if not changes:
        return (
            plan
            if plan.skip is not None
            else replace(plan, changes=(), skip="no-change", recorded=plan.changes)
        )
    return replace(plan, changes=changes, skip=None, detail="", recorded=plan.changes)


def _plan(
    pod: Mapping[str, object],
    slots: Sequence[ContainerSlot],
    rec: Recommendation,
    policy: PlanPolicy,
    resolved: Resolved,
    cluster: ClusterPolicy | None,
) -> PodPlan:
    """Steps 2-7 and the plausibility hook over `pod` as given."""
    by_name = {c.name: c for c in rec.containers}
    matched = [by_name[s.name] for s in slots if s.name in by_name]
    if not matched:
        return PodPlan(resolved.mode, resolved.gpu_resize, skip="no-matching-container")
    if not any(usable(c, policy) for c in matched):
        return PodPlan(resolved.mode, resolved.gpu_resize, skip="low-confidence")
    notes: list[str] = []
    guarded: list[Guard] = []
    try:
        changes = _cpu_memory(slots, by_name, rec, policy)
        if resolved.gpu_resize:  # before the plausibility limits, which guard GPU counts too
            changes.extend(_gpu(slots, by_name, rec, policy))
        changes = plausible(
            changes,
            slots,
            rec,
            policy,
            pod=pod,
            cluster=cluster,
            notes=notes,
            allow_large_change=resolved.allow_large_change,
            guarded=guarded,
        )
    except BoundsError as exc:
        return PodPlan(resolved.mode, resolved.gpu_resize, skip="invalid-bounds", detail=str(exc))
    if not changes:
        why: SkipReason = "policy-limited" if notes else "no-change"
        return PodPlan(
            resolved.mode, resolved.gpu_resize, skip=why, detail="; ".join(notes), guarded=tuple(guarded)
        )
    return PodPlan(
        resolved.mode, resolved.gpu_resize, tuple(changes), notes=tuple(notes), guarded=tuple(guarded)
    )


def plausible(
    changes: list[Change],
    slots: Sequence[ContainerSlot],
    rec: Recommendation,
    policy: PlanPolicy,
    *,
    pod: Mapping[str, object],
    cluster: ClusterPolicy | None = None,
    notes: list[str] | None = None,
    allow_large_change: bool = False,
    guarded: list[Guard] | None = None,
) -> list[Change]:
    """Plausibility limits (largest node's allocatable, maximum change factor: podsizer.plausibility),
    then the cluster's policy (podsizer.limitrange: LimitRange, pod-level resources, quota headroom); why
    a change was adjusted or dropped goes to `notes`, each value the plausibility guard refused or clamped
    to `guarded`. It runs after bounds, the limit policy and the GPU opt-in, over every change.
    """
    changes = guard_changes(changes, slots, rec, policy, allow_large_change, _REPLAN, notes, guarded)
    fitted = fit(pod, changes, slots, cluster or NO_CLUSTER_POLICY)  # pod-level resources count always
    if notes is not None:
        notes.extend(fitted.reasons)
    return list(fitted.changes)


@lru_cache(maxsize=4096)
def _fmt_cached(resource: str, value: float) -> tuple[str, Decimal]:
    text = format_resource(resource, value)
    parsed = quantity(text)
    assert parsed is not None
    return text, parsed


def _fmt(resource: str, value: Decimal | float) -> tuple[str, Decimal]:
    """Canonical text (millicores, Mi) and its exact value; memoised, pods repeat the same values."""
    return _fmt_cached(resource, float(value))


def _cpu_memory(
    slots: Sequence[ContainerSlot],
    by_name: Mapping[str, ContainerRecommendation],
    rec: Recommendation,
    policy: PlanPolicy,
) -> list[Change]:
    """Steps 3-4 for cpu and memory: requests from the Recommendation within bounds, limits per policy."""
    out: list[Change] = []
    for slot in slots:
        cr = by_name.get(slot.name)
        if cr is None or not usable(cr, policy):
            continue
        user = policy_for(slot.name, rec.policy) if rec.policy else None
        for resource in CPU_MEMORY:
            target = quantity(cr.requests.get(resource))
            if target is None or target <= 0:
                continue
            value = float(target)
            if value == math.inf:
                continue  # beyond any float: the plausibility guard names it
            value = clip(resource, value, user, slot.name).value  # raises BoundsError for min > max
            recommended = quantity(cr.limits.get(resource))
            out.extend(_one(slot, resource, value, recommended, policy.limit_policy))
    return out


def _new_limit(
    policy: LimitPolicy,
    resource: str,
    new_req: Decimal,
    old_req: Decimal | None,
    old_lim: Decimal | None,
    recommended: Decimal | None,
) -> str | None:
    """Step 4: the limit to write, or None to keep the current one (never below the new request)."""
    if policy == "recommended" and recommended is not None and recommended > 0:
        return _fmt(resource, max(recommended, new_req))[0]
    if old_lim is None or policy == "leave":
        return None
    if policy == "keep-ratio":  # a missing request defaults to the limit, so the ratio is 1
        base = old_req if old_req is not None else old_lim
        if base > 0:
            return _fmt(resource, max(new_req * old_lim / base, new_req))[0]
    # cap; keep-ratio over a zero base; recommended without a recommended limit
    return _fmt(resource, new_req)[0] if new_req > old_lim else None


def _one(
    slot: ContainerSlot, resource: str, value: float, recommended: Decimal | None, policy: LimitPolicy
) -> list[Change]:
    old_req_s, old_lim_s = slot.current("requests", resource), slot.current("limits", resource)
    old_req, old_lim = quantity(old_req_s), quantity(old_lim_s)
    if (old_req_s is not None and old_req is None) or (old_lim_s is not None and old_lim is None):
        return []  # a value we cannot read is left exactly as it is
    new_req_s, new_req = _fmt(resource, value)
    if policy == "leave" and old_lim is not None and new_req > old_lim:
        new_req_s, new_req = str(old_lim_s), old_lim  # a request above its limit is invalid: stop there
    new_lim_s = _new_limit(policy, resource, new_req, old_req, old_lim, recommended)
    out: list[Change] = []
    if old_req is None or new_req != old_req:
        out.append(Change(slot.section, slot.index, slot.name, "requests", resource, old_req_s, new_req_s))
    if new_lim_s is not None and quantity(new_lim_s) != old_lim:
        out.append(Change(slot.section, slot.index, slot.name, "limits", resource, old_lim_s, new_lim_s))
    return out


def _gpu(
    slots: Sequence[ContainerSlot],
    by_name: Mapping[str, ContainerRecommendation],
    rec: Recommendation,
    policy: PlanPolicy,
) -> list[Change]:
    """Step 7, only with the GPU opt-in: the recommended whole count (requests == limits) for containers
    that already hold GPUs, as the suggested MIG slice when `allow_mig_swap` is on."""
    suggested = rec.gpu.suggested_resource if rec.gpu is not None else None
    swap = bool(policy.allow_mig_swap and suggested and is_mig(suggested))
    resource = suggested if swap and suggested else GPU
    out: list[Change] = []
    for slot in slots:
        held_req, held_lim = slot.current("requests", GPU), slot.current("limits", GPU)
        if quantity(held_req) is None and quantity(held_lim) is None:
            continue  # only containers that already hold GPUs change
        cr = by_name.get(slot.name)
        if cr is None or not usable(cr, policy):
            continue
        wanted = quantity(cr.limits.get(GPU, cr.requests.get(GPU)))
        if wanted is None or wanted < 1 or wanted != wanted.to_integral_value():
            continue
        user = policy_for(slot.name, rec.policy) if rec.policy else None
        wanted = Decimal(clip_count(GPU, int(wanted), user)[0])  # bounds, as for cpu and memory
        if wanted < 1:
            continue
        count = str(int(wanted))
        if resource != GPU:
            for field in FIELDS:
                held = slot.current(field, GPU)
                if held is not None:
                    out.append(Change(slot.section, slot.index, slot.name, field, GPU, held, None))
        for field in FIELDS:
            current = slot.current(field, resource)
            if current is None or quantity(current) != wanted:
                out.append(Change(slot.section, slot.index, slot.name, field, resource, current, count))
    return out


_REPLAN = Replan(_one, quantity, lambda resource, value: _fmt(resource, value)[0])


def change_record(changes: Sequence[Change], rec: Recommendation) -> dict[str, object]:
    """What podsizer.io/applied and podsizer.io/dry-run hold: the changes and their Recommendation."""
    return {
        "recommendation": rec.name,
        "generatedAt": format_time(rec.generated_at),
        "sizingMode": rec.sizing_mode,
        "changes": [c.to_json() for c in changes],
    }
