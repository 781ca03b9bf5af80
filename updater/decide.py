"""The updater's decision for one running pod: resize in place, evict, or skip with a reason (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Literal

from podsizer.api import Recommendation, WorkloadRef
from podsizer.baseline import from_template, key_of
from podsizer.limitrange import ClusterPolicy
from podsizer.modes import Resolved, UpdatePermission
from podsizer.plan import plan_pod
from podsizer.podspec import Change, CurrentResources
from podsizer.policy import PlanPolicy
from podsizer.settings.updater import DEFAULT_RESIZE_TIMEOUT_SECONDS, DEFAULT_SETTLING_SECONDS
from updater.budget import Budgets, Ledger, eviction_blocker
from updater.podstate import running
from updater.replacement import NOT_SIZED, SAME_ON_RECREATE, comes_back_the_same, not_sized_at_admission
from updater.resize import ResizeStatus, in_place_blocker, resize_body, resize_status, restarts
from updater.threshold import Band, Threshold, running_changes, significant

ActionKind = Literal["resized", "evicted", "skipped"]


@dataclass(frozen=True)
class UpdaterPolicy:
    """What shapes the updater's decisions: the pod plan's policy, the threshold, the eviction budgets,
    how long an in-place resize may stay pending, deferred or in progress before falling back to eviction,
    and how long a workload's target must hold before another is acted on (updater.damping; 0: no damping)."""

    plan: PlanPolicy = field(default_factory=PlanPolicy)
    threshold: Threshold = field(default_factory=Threshold)
    budgets: Budgets = field(default_factory=Budgets)
    resize_timeout_seconds: float = DEFAULT_RESIZE_TIMEOUT_SECONDS
    settling_seconds: float = DEFAULT_SETTLING_SECONDS


@dataclass(frozen=True)
class PodFacts:
    """Everything the decision reads about one running pod, gathered from the watched caches."""

    pod: Mapping[str, Any]
    workload: WorkloadRef
    rec: Recommendation
    resolved: Resolved
    permission: UpdatePermission
    siblings: Sequence[Mapping[str, Any]] = ()
    replicas: int | None = None
    usage: Mapping[str, Decimal] | None = None  # container -> memory working set bytes (None: unknown)
    cluster: ClusterPolicy | None = None
    bands: Mapping[str, Band] = field(default_factory=dict)
    in_place_rejected: bool = False  # the apiserver refused this pod's last resize: recreate instead
    pdb_allows: int | None = None  # fewest disruptions its PodDisruptionBudgets allow (None: not covered)
    template: tuple[CurrentResources, ...] | None = None  # the workload's pod template (None: not known)
    last_eviction: datetime | None = None  # the updater's last eviction of this workload (None: none known)


@dataclass(frozen=True)
class Action:
    """resized (with the resize patch body), evicted, or skipped; `reason` names the rule that chose it."""

    kind: ActionKind
    reason: str
    changes: tuple[Change, ...] = ()
    body: Mapping[str, Any] = field(default_factory=dict)
    restarts: tuple[str, ...] = ()
    detail: str = ""


def skip(reason: str, detail: str = "", changes: tuple[Change, ...] = ()) -> Action:
    return Action("skipped", reason, changes, detail=detail)


def _stuck(status: ResizeStatus, now: datetime, timeout: float) -> str | None:
    """The fallback reason of a resize the kubelet cannot or did not finish in time, else None."""
    if status.state == "infeasible":
        return "resize-infeasible"
    if status.state == "none":
        return None
    if status.since is not None and now - status.since >= timedelta(seconds=timeout):
        return f"resize-{status.state}-timeout"
    return None


def anchored(facts: PodFacts, changes: Sequence[Change]) -> bool:
    """Whether each change's original value is known from the workload's template: an in-place resize of
    a value known only from the pod itself (its own values, or its podsizer.io/applied record, which
    whoever may write the pod may write) would make the next pass measure the change factor from the
    resized value, or a rewritten record; such a pod is recreated (admission plans its replacement)."""
    known = from_template(facts.template, facts.cluster) if facts.template is not None else {}
    return all(key_of(c) in known for c in changes)


def decide(facts: PodFacts, policy: UpdaterPolicy, ledger: Ledger, now: datetime) -> Action:
    """Mode, running, resize status, the pod plan (podsizer.plan.plan_pod), threshold, then in place when
    the mode and the changes allow it, else eviction within the budgets, unless the replacement would come
    back as the pod runs now (updater.replacement)."""
    perm = facts.permission
    if not perm.recreate:
        return skip(f"update-mode-{perm.mode}", perm.source)
    if not running(facts.pod):
        return skip("not-running")
    status = resize_status(facts.pod)
    stuck = _stuck(status, now, policy.resize_timeout_seconds)
    if stuck is not None:
        if not perm.in_place:
            return skip(stuck, status.message)
        return _evict(facts, policy, ledger, now, stuck, (), status.message)
    if status.state != "none":
        return skip(f"resize-{status.state}", status.message)
    plan = plan_pod(
        facts.pod, facts.rec, policy.plan, facts.resolved, cluster=facts.cluster, template=facts.template
    )
    if plan.skip is not None:
        return skip(plan.skip, plan.detail)
    changes = significant(running_changes(facts.pod, plan.changes), policy.threshold, facts.bands)
    if not changes:
        return skip("within-threshold")
    reason = "recreate"
    if perm.in_place:
        blocker = (
            "resize-rejected"
            if facts.in_place_rejected
            else in_place_blocker(facts.pod, changes, facts.usage)
        )
        if blocker is None and not anchored(facts, changes):
            blocker = "no-baseline"
        if blocker is None:
            body = resize_body(facts.pod, changes)
            return Action("resized", "in-place", changes, body, restarts(facts.pod, changes))
        if blocker == "memory-below-usage":
            return skip(blocker, "a memory limit would drop below the container's current usage", changes)
        reason = blocker
    futile = _futile(facts, policy)
    if futile is not None:
        return skip(futile, f"eviction for {reason} would bring the pod back as it runs", changes)
    return _evict(facts, policy, ledger, now, reason, changes)


def _futile(facts: PodFacts, policy: UpdaterPolicy) -> str | None:
    """Why evicting this pod would change nothing (updater.replacement), or None."""
    if not_sized_at_admission(facts.pod, facts.rec.name, facts.last_eviction):
        return NOT_SIZED
    if comes_back_the_same(facts, policy):
        return SAME_ON_RECREATE
    return None


def _evict(
    facts: PodFacts,
    policy: UpdaterPolicy,
    ledger: Ledger,
    now: datetime,
    reason: str,
    changes: tuple[Change, ...],
    detail: str = "",
) -> Action:
    """Eviction for `reason`, unless a budget says not now (then skipped with the budget's reason)."""
    blocked = eviction_blocker(
        facts.pod,
        facts.workload,
        facts.siblings or (facts.pod,),
        facts.replicas,
        facts.permission.allow_single_replica,
        ledger,
        policy.budgets,
        now,
        facts.pdb_allows,
    )
    if blocked is not None:
        return skip(blocked, f"eviction for {reason} not allowed now", changes)
    return Action("evicted", reason, changes, detail=detail)
