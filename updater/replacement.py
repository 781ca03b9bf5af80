"""Whether an eviction would change anything: what admission gives the pod's replacement (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from podsizer.baseline import recorded
from podsizer.keys import APPLIED_KEY
from podsizer.kube.times import read_time
from podsizer.plan import plan_pod, pod_metadata
from updater.podstate import mapping
from updater.threshold import running_changes, significant

if TYPE_CHECKING:  # decide imports this module
    from updater.decide import PodFacts, UpdaterPolicy

SAME_ON_RECREATE = "same-on-recreate"  # admission would give the replacement what this pod runs with
NOT_SIZED = "replacement-not-sized"  # admission did not size the last replacement: another would be the same


def without_record(pod: Mapping[str, Any]) -> dict[str, Any]:
    """A shallow copy of `pod` without its podsizer.io/applied record: the pod as its controller makes it."""
    meta = dict(mapping(pod.get("metadata")))
    meta["annotations"] = {k: v for k, v in mapping(meta.get("annotations")).items() if k != APPLIED_KEY}
    return {**pod, "metadata": meta}


def comes_back_the_same(facts: PodFacts, policy: UpdaterPolicy) -> bool:
    """Whether a replacement made from the workload's template would be admitted within the threshold of
    what the pod runs with now (podsizer.plan.plan_pod over the template, as the webhook plans a new pod).
    A pod without a podsizer.io/applied record is planned from its template already; one with a record
    measured from an older template (a StatefulSet with OnDelete) may differ. False when the template
    is not known."""
    pod = facts.pod
    if facts.template is None or not recorded(pod_metadata(pod).annotations, facts.rec.name):
        return False
    fresh = plan_pod(
        without_record(pod),
        facts.rec,
        policy.plan,
        facts.resolved,
        cluster=facts.cluster,
        template=facts.template,
    )
    if fresh.skip is not None:
        return fresh.skip == "no-change"  # another skip: the plan from the record decides
    return not significant(running_changes(pod, fresh.changes), policy.threshold, facts.bands)


def not_sized_at_admission(
    pod: Mapping[str, Any], recommendation: str, last_eviction: datetime | None
) -> bool:
    """Whether `pod` was created after the updater's last eviction of its workload and carries no
    podsizer.io/applied record of `recommendation`: admission did not size it (the webhook was down and
    failed open, timed out, or does not select the pod), so evicting it would bring it back the same."""
    if last_eviction is None:
        return False
    created = read_time(mapping(pod.get("metadata")).get("creationTimestamp"))
    if created is None or created <= last_eviction:
        return False
    return not recorded(pod_metadata(pod).annotations, recommendation)
