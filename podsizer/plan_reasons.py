"""Why a pod plan writes other values than the Recommendation's estimate: each rule that moved one, typed.

Every rendering of a plan (recommend's tables and documents, explain, the console) shows these next to
the sizing reason, so a clamped value never stands beside a reason that names another number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from podsizer.bounds import BoundsError, clip, policy_for
from podsizer.plan import usable
from podsizer.plan_view import GPU_OPT_IN, ContainerPlan, WorkloadPlan
from podsizer.plausibility import Guard
from podsizer.podspec import Field, quantity
from podsizer.resources import CPU_MEMORY, GPU

if TYPE_CHECKING:
    from podsizer.api import ContainerRecommendation

Rule = Literal[
    "low-confidence",
    "bounds",
    "max-change",
    "ceiling",
    "invalid",
    "limit-policy",
    "cluster-policy",
    "gpu-opt-in",
]


@dataclass(frozen=True)
class Step:
    """One rule of the plan that moved a value away from the estimate, in words."""

    rule: Rule
    text: str


@dataclass(frozen=True)
class Adjustment:
    """A container's value that the plan writes (or keeps) other than the Recommendation says, and why."""

    container: str
    field: Field
    resource: str
    estimate: str | None  # the Recommendation's value
    planned: str | None  # what the pod gets (the current value where the plan keeps it)
    steps: tuple[Step, ...]

    def describe(self) -> str:
        """`cpu request 1 instead of 1800m: clamped ...`: what a reason column shows."""
        what = f"{self.resource} {self.field.removesuffix('s')} {self.planned or '(unset)'}"
        return f"{what} instead of {self.estimate or '(unset)'}: " + "; ".join(s.text for s in self.steps)

    def to_json(self) -> dict[str, object]:
        return {
            "container": self.container,
            "field": self.field,
            "resource": self.resource,
            "estimate": self.estimate,
            "planned": self.planned,
            "why": [{"rule": s.rule, "text": s.text} for s in self.steps],
        }


def _guard_step(g: Guard, cp: ContainerPlan, wp: WorkloadPlan) -> Step:
    if g.rule == "invalid":
        return Step("invalid", "not a finite, non-negative amount: not written")
    if g.rule == "ceiling":
        return Step("ceiling", f"capped at {wp.policy.ceilings.where}")
    current = cp.before("requests", g.resource) or cp.before("limits", g.resource) or "-"
    factor = f"{wp.policy.max_change_factor or 0:g}x"
    return Step("max-change", f"clamped by the maximum change factor {factor} of today's {current}")


def _cluster_steps(wp: WorkloadPlan) -> tuple[Step, ...]:
    """The plan's notes that are not the plausibility guard's: LimitRange, pod-level resources, quota."""
    guards = {g.describe() for g in wp.plan.guarded}
    return tuple(Step("cluster-policy", n) for n in wp.plan.notes if n not in guards)


def _request_steps(
    wp: WorkloadPlan, cp: ContainerPlan, cr: ContainerRecommendation, resource: str
) -> tuple[Step, ...]:
    """The rules that moved a cpu/memory request from the estimate to the plan's value, in plan order."""
    estimate, planned = quantity(cr.requests.get(resource)), quantity(cp.after("requests", resource))
    if estimate is None or planned == estimate:
        return ()
    if not usable(cr, wp.policy):  # the other containers' values are applied, this one's never
        return (Step("low-confidence", f"confidence {cr.confidence:.2f}: never applied"),)
    steps: list[Step] = []
    user = policy_for(cr.name, wp.rec.policy) if wp.rec.policy else None
    try:
        note = clip(resource, float(estimate), user, cr.name).note
    except BoundsError as exc:
        note = str(exc)
    if note is not None:
        steps.append(Step("bounds", f"bounds: {note}"))
    limit = cp.before("limits", resource)
    held = quantity(limit)
    if wp.policy.limit_policy == "leave" and held is not None and planned == held and held < estimate:
        steps.append(Step("limit-policy", f"held at the current limit {limit} (limit policy leave)"))
    steps += [
        _guard_step(g, cp, wp)
        for g in wp.plan.guarded
        if (g.container, g.field, g.resource) == (cr.name, "requests", resource)
    ]
    return tuple(steps) or _cluster_steps(wp)


def _limit_adjustments(wp: WorkloadPlan, cp: ContainerPlan, cr: ContainerRecommendation) -> list[Adjustment]:
    """Limits the guard refused or capped (limits derive from the request by the limit policy otherwise)."""
    out: list[Adjustment] = []
    for g in wp.plan.guarded:
        if (g.container, g.field) == (cr.name, "limits") and g.resource != GPU:
            steps = (_guard_step(g, cp, wp),)
            estimate, planned = cr.limits.get(g.resource, g.value), cp.after("limits", g.resource)
            out.append(Adjustment(cr.name, "limits", g.resource, estimate, planned, steps))
    return out


def _gpu_adjustment(wp: WorkloadPlan, cp: ContainerPlan, cr: ContainerRecommendation) -> Adjustment | None:
    """GPUs held back by the opt-in, or a count the guard clamped."""
    g = wp.gpu(cr.name)
    if g.held is None:
        return None
    if g.needs_opt_in:
        step = Step("gpu-opt-in", f"held back: GPU counts change only with {GPU_OPT_IN}")
        return Adjustment(cr.name, "limits", g.held, g.recommended, g.current, (step,))
    guarded = [x for x in wp.plan.guarded if (x.container, x.resource) == (cr.name, GPU)]
    if not guarded:
        return None
    steps = (_guard_step(guarded[0], cp, wp),)
    return Adjustment(cr.name, "limits", GPU, g.recommended, cp.after("limits", GPU) or g.current, steps)


def adjustments(wp: WorkloadPlan, name: str) -> tuple[Adjustment, ...]:
    """Container `name`'s values the plan writes other than the estimate, with the rules that moved them;
    none when the plan does not apply at all (opt-out, mode off, low confidence: the mode says so)."""
    cp, cr = wp.container(name), wp.rec.container(name)
    if cp is None or cr is None or wp.plan.skip not in (None, "no-change", "policy-limited"):
        return ()
    out: list[Adjustment] = []
    for resource in CPU_MEMORY:
        steps = _request_steps(wp, cp, cr, resource)
        if steps:
            estimate, planned = cr.requests.get(resource), cp.after("requests", resource)
            out.append(Adjustment(name, "requests", resource, estimate, planned, steps))
    out += _limit_adjustments(wp, cp, cr)
    gpu = _gpu_adjustment(wp, cp, cr)
    return (*out, gpu) if gpu is not None else tuple(out)


def shown_reason(reason: str, plan: WorkloadPlan | None, name: str) -> str:
    """The sizing reason, then `plan: ...` for each value the plan writes other than the estimate."""
    moved = adjustments(plan, name) if plan is not None else ()
    if not moved:
        return reason
    said = "plan: " + "; ".join(a.describe() for a in moved)
    return f"{reason}; {said}" if reason else said
