"""One pass of the updater over the watched pods: resolve, decide, act (or record in dry-run), record."""

from __future__ import annotations

import logging
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from podsizer.api import Recommendation, WorkloadRef
from podsizer.limitrange import ClusterPolicy
from podsizer.modes import MetadataLookup, UpdateMode, namespace_excluded, resolve, resolve_update
from podsizer.owners import ControllerLookup, resolve_pod
from podsizer.plan import pod_metadata
from podsizer.podspec import CurrentResources
from podsizer.policy import PlanPolicy
from podsizer.snapshot import SnapshotProvider
from updater.budget import MINUTE, Eviction, Ledger
from updater.damping import Damper, Settling
from updater.decide import Action, PodFacts, UpdaterPolicy, decide, skip
from updater.kube import UpdaterApi
from updater.pdb import Budget, disruptions_allowed
from updater.podstate import name_of, running
from updater.record import Recorder

log = logging.getLogger("podsizer.updater")
_VERB = {"resized": "resize", "evicted": "evict", "skipped": "skip"}
_AT_TARGET = frozenset({"within-threshold", "no-change"})  # skips of a pod already where its plan is


class Budgets(Protocol):
    """The watched PodDisruptionBudgets of a namespace."""

    def budgets(self, namespace: str) -> list[Budget]: ...


class NoBudgets:
    """No PodDisruptionBudget watch: the Eviction API alone enforces them."""

    def budgets(self, namespace: str) -> list[Budget]:
        return []


class ClusterView(MetadataLookup, Protocol):
    """The watched caches beyond metadata: replicas, the namespace's policy, the largest node."""

    def replicas(self, ref: WorkloadRef) -> int | None: ...

    def cluster_policy(self, namespace: str) -> ClusterPolicy | None: ...

    def largest_allocatable(self) -> Mapping[str, float]: ...

    def template(self, ref: WorkloadRef) -> tuple[CurrentResources, ...] | None: ...


@dataclass(frozen=True)
class UpdaterConfig:
    """The decision policy, the default update mode, dry-run, and the namespaces never touched."""

    policy: UpdaterPolicy = field(default_factory=UpdaterPolicy)
    default_update_mode: UpdateMode = "initial"
    dry_run: bool = False
    excluded_namespaces: frozenset[str] = frozenset({"kube-system"})


@dataclass(frozen=True)
class Candidate:
    """A running pod with its workload and Recommendation."""

    pod: Mapping[str, Any]
    workload: WorkloadRef
    rec: Recommendation


class Updater:
    """Holds what outlives a pass: the eviction ledger and the pods whose resize the apiserver refused."""

    def __init__(
        self,
        config: UpdaterConfig,
        pods: Callable[[], Sequence[Mapping[str, Any]]],
        owners: ControllerLookup,
        cluster: ClusterView,
        snapshots: SnapshotProvider,
        api: UpdaterApi,
        recorder: Recorder,
        clock: Callable[[], datetime],
        pdbs: Budgets | None = None,
    ) -> None:
        self.config = config
        self.pdbs = pdbs or NoBudgets()
        self.pods = pods
        self.owners = owners
        self.cluster = cluster
        self.snapshots = snapshots
        self.api = api
        self.recorder = recorder
        self.clock = clock
        self.ledger = Ledger()
        self._rejected: OrderedDict[str, None] = OrderedDict()
        self._evicted: OrderedDict[WorkloadRef, datetime] = OrderedDict()  # each workload's last eviction
        policy = config.policy
        self.damper = Damper(Settling(timedelta(seconds=policy.settling_seconds), policy.threshold.relative))

    def candidates(self) -> list[Candidate]:
        """Running pods outside excluded namespaces whose workload has a Recommendation."""
        snapshot = self.snapshots.current()
        if snapshot is None:
            return []
        out: list[Candidate] = []
        for pod in self.pods():
            namespace, _ = name_of(pod)
            if not running(pod) or namespace_excluded(namespace, self.config.excluded_namespaces):
                continue
            ref = resolve_pod(pod, namespace, self.owners, snapshot.has)
            rec = snapshot.get(ref) if ref is not None else None
            if ref is not None and rec is not None:
                out.append(Candidate(pod, ref, rec))
        return out

    def plan_policy(self) -> PlanPolicy:
        """The configured plan policy, its ceilings lowered to the largest node's allocatable."""
        base = self.config.policy.plan
        largest = self.cluster.largest_allocatable()
        return replace(base, ceilings=base.ceilings.from_nodes([largest])) if largest else base

    def run_once(self) -> list[tuple[Candidate, Action]]:
        """One pass; returns each decision of a pod whose update mode lets the updater act."""
        now = self.clock()
        policy = replace(self.config.policy, plan=self.plan_policy())
        found = self.candidates()
        by_workload: dict[WorkloadRef, list[Mapping[str, Any]]] = defaultdict(list)
        for c in found:
            by_workload[c.workload].append(c.pod)
        done: list[tuple[Candidate, Action]] = []
        observed: set[WorkloadRef] = set()
        for c in found:
            facts = self.facts(c, by_workload[c.workload], policy.plan)
            if not facts.permission.recreate:
                continue  # admission only (or off): not the updater's business, nothing recorded
            if c.workload not in observed:
                observed.add(c.workload)
                self.damper.observe(c.workload, c.rec, now)
            action = decide(facts, policy, self.ledger, now)
            if action.reason == "memory-usage-unknown":  # ask the metrics API only when it matters
                namespace, name = name_of(c.pod)
                action = decide(
                    replace(facts, usage=self.api.usage(namespace, name)), policy, self.ledger, now
                )
            done.append((c, self.act(c, self.damped(c, action, now), now)))
        return done

    def damped(self, c: Candidate, action: Action, now: datetime) -> Action:
        """The action, or a skip while its workload's target is oscillating or settling (updater.damping).
        A pod at its target is reported held too while the target oscillates: one reason, not two in turn."""
        if action.kind != "skipped":
            held = self.damper.hold(c.workload, c.rec, action.changes, now)
        elif action.reason in _AT_TARGET:
            held = self.damper.oscillating(c.workload, c.rec, now)
        else:
            return action
        if held is None:
            return action
        reason, detail = held
        if action.kind != "skipped":
            detail = f"{action.kind} for {action.reason} held: {detail}"
        return skip(reason, detail, action.changes)

    def facts(self, c: Candidate, siblings: Sequence[Mapping[str, Any]], plan: PlanPolicy) -> PodFacts:
        namespace, _ = name_of(c.pod)
        own, wl, ns = (
            pod_metadata(c.pod),
            self.cluster.workload(c.workload),
            self.cluster.namespace(namespace),
        )
        resolved = resolve(plan, own, wl, ns)
        permission = resolve_update(self.config.default_update_mode, resolved, own, wl, ns)
        uid = str((c.pod.get("metadata") or {}).get("uid", ""))
        return PodFacts(
            c.pod,
            c.workload,
            c.rec,
            resolved,
            permission,
            tuple(siblings),
            self.cluster.replicas(c.workload),
            cluster=self.cluster.cluster_policy(namespace),
            in_place_rejected=uid in self._rejected,
            pdb_allows=disruptions_allowed(own.labels, self.pdbs.budgets(namespace)),
            template=self.cluster.template(c.workload),
            last_eviction=self._evicted.get(c.workload),
        )

    def act(self, c: Candidate, action: Action, now: datetime) -> Action:
        """Do it (unless dry-run), then record what happened; returns the action as it turned out."""
        if action.kind == "evicted":
            self.ledger = self.ledger.add(
                Eviction(now, c.workload, name_of(c.pod)[1]), max(MINUTE, self._cool())
            )
        if self.config.dry_run or action.kind == "skipped":
            if action.kind != "skipped":  # dry-run: damped as if done, like the budgets
                self.damper.acted(c.workload, c.rec, action.changes, now)
            self.recorder.record(c.pod, c.workload, action)
            return action
        namespace, name = name_of(c.pod)
        if action.kind == "resized":
            outcome, message = self.api.resize(namespace, name, action.body)
        else:
            outcome, message = self.api.evict(namespace, name)
        if outcome == "done":
            self.damper.acted(c.workload, c.rec, action.changes, now)
            if action.kind == "evicted":
                self._remember_eviction(c.workload, now)
        if outcome != "done":
            if action.kind == "resized" and outcome == "rejected":
                self._remember_rejected(str((c.pod.get("metadata") or {}).get("uid", "")))
            action = skip(f"{_VERB[action.kind]}-{outcome}", message, action.changes)
        self.recorder.record(c.pod, c.workload, action)
        return action

    def _cool(self) -> timedelta:
        return timedelta(seconds=self.config.policy.budgets.workload_cooldown_seconds)

    def _remember_eviction(self, workload: WorkloadRef, at: datetime, keep: int = 10_000) -> None:
        self._evicted[workload] = at
        self._evicted.move_to_end(workload)
        while len(self._evicted) > keep:
            self._evicted.popitem(last=False)

    def _remember_rejected(self, uid: str, keep: int = 10_000) -> None:
        self._rejected[uid] = None
        while len(self._rejected) > keep:
            self._rejected.popitem(last=False)
