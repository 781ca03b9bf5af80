"""A workload's pod plan as `recommend` and the console show it: current values in, values after out.

Both build a pod template from the current requests/limits (and the pod's labels/annotations where
known), run the one pod plan on it and show its changes, so what they show is what the webhook writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from podsizer.api import ContainerRecommendation, Recommendation
from podsizer.keys import GPU_KEY
from podsizer.modes import Metadata, Resolved, resolve
from podsizer.plan import EXCLUDED, PodPlan, change_record, plan_pod, pod_metadata
from podsizer.podspec import Change, CurrentResources, Field, pod_template, quantity
from podsizer.policy import PlanPolicy
from podsizer.resources import GPU, is_mig

GPU_OPT_IN = f"{GPU_KEY}: resize"


@dataclass(frozen=True)
class ContainerPlan:
    """One container: its values today and the plan's changes to it."""

    current: CurrentResources
    changes: tuple[Change, ...] = ()

    @property
    def section(self) -> str:
        return "initContainers" if self.current.init else "containers"

    def before(self, field: Field, resource: str) -> str | None:
        return self.current.current(field, resource)

    def change(self, field: Field, resource: str) -> Change | None:
        return next((c for c in self.changes if c.field == field and c.resource == resource), None)

    def after(self, field: Field, resource: str) -> str | None:
        """The value once the plan is applied: the change's `to`, else the value as it is."""
        c = self.change(field, resource)
        return self.before(field, resource) if c is None else c.new


@dataclass(frozen=True)
class GpuStatement:
    """GPUs of one container: held now, recommended, and what the plan writes (nothing without opt-in)."""

    held: str | None  # the resource held now: nvidia.com/gpu or a MIG slice (None: no GPUs)
    current: str | None  # the count held now
    recommended: str | None  # the Recommendation's count for that resource
    resource: str | None  # the resource the plan writes (None: GPUs unchanged)
    new: str | None  # the count the plan writes
    needs_opt_in: bool  # a different count is recommended, but podsizer.io/gpu is not resize


@dataclass(frozen=True)
class WorkloadPlan:
    """The plan of one workload's pod and its containers (in the template's order)."""

    rec: Recommendation
    plan: PodPlan
    containers: tuple[ContainerPlan, ...]
    resolved: Resolved  # what the pod template's metadata decided (mode and where from, opt-ins)
    policy: PlanPolicy  # the policy it was planned under (the reasons name its factor and ceilings)

    def container(self, name: str) -> ContainerPlan | None:
        return next((c for c in self.containers if c.current.name == name), None)

    @property
    def shown_mode(self) -> str:
        """off, dry-run or auto as the webhook resolves it; "excluded" for an opt-out."""
        return "excluded" if self.plan.skip in EXCLUDED.values() else self.plan.mode

    def record(self) -> dict[str, object]:
        """The plan as JSON: mode, skip reason, current values, and the change record that the webhook
        writes into podsizer.io/dry-run and podsizer.io/applied (same keys, same values)."""
        return {
            "mode": self.shown_mode,
            "gpuResize": self.plan.gpu_resize,
            "skip": self.plan.skip,
            "current": [
                {
                    "container": c.current.name,
                    "containerType": c.section,
                    "requests": dict(c.current.requests),
                    "limits": dict(c.current.limits),
                }
                for c in self.containers
            ],
            **change_record(self.plan.changes, self.rec),
        }

    def gpu(self, name: str) -> GpuStatement:
        """The GPU statement of container `name` (all None when it holds and gets no GPUs)."""
        cp = self.container(name)
        cr = self.rec.container(name)
        if cp is None:
            return GpuStatement(None, None, _recommended_gpu(cr, None), None, None, False)
        held = _held_gpu(cp)
        current = None
        if cp is not None and held is not None:
            current = cp.before("limits", held) or cp.before("requests", held)
        recommended = _recommended_gpu(cr, held)
        written = [c for c in cp.changes if c.new is not None and (c.resource == GPU or is_mig(c.resource))]
        new = written[0] if written else None
        differs = (
            recommended is not None and current is not None and quantity(recommended) != quantity(current)
        )
        return GpuStatement(
            held,
            current,
            recommended,
            new.resource if new is not None else None,
            new.new if new is not None else None,
            differs and not self.plan.gpu_resize and self.plan.skip in (None, "no-change"),
        )


def _held_gpu(cp: ContainerPlan | None) -> str | None:
    if cp is None:
        return None
    names = [*cp.current.limits, *cp.current.requests]
    return GPU if GPU in names else next((n for n in names if is_mig(n)), None)


def _recommended_gpu(cr: ContainerRecommendation | None, held: str | None) -> str | None:
    if cr is None:
        return None
    resource = held or GPU
    return cr.limits.get(resource, cr.requests.get(resource))


def plan_workload(
    rec: Recommendation,
    current: Sequence[CurrentResources],
    policy: PlanPolicy,
    meta: Metadata | None = None,
) -> WorkloadPlan:
    """The plan for a pod with `current` containers and the pod template's labels/annotations `meta`."""
    template = pod_template(
        current, meta.annotations if meta is not None else None, meta.labels if meta is not None else None
    )
    resolved = resolve(policy, pod_metadata(template))
    plan = plan_pod(template, rec, policy, resolved)
    by_name: Mapping[str, list[Change]] = {c.name: [] for c in current}
    for change in plan.changes:
        by_name[change.container].append(change)
    ordered = sorted(current, key=lambda c: not c.init)  # init containers first, as in the template
    containers = tuple(ContainerPlan(c, tuple(by_name[c.name])) for c in ordered)
    return WorkloadPlan(rec, plan, containers, resolved, policy)
