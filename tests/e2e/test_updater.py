"""The updater against the real apiserver, scheduler and kwok nodes (pods Running), with the webhook.

Workloads start without a Recommendation (so the webhook leaves their pods as the template says), then get
one; the updater (the chart's ServiceAccount, so exactly the chart's RBAC) brings the running pods to it.
kwok plays the kubelet with podsizer's `pod-resize` stage (tests/controlplane/kwok/stages.yaml): it copies
the resized spec into containerStatuses[].resources and sets status.observedGeneration, which the in-place
test checks; it never reports PodResizePending/InProgress conditions, so those paths are unit-tested.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from podsizer.api import WorkloadRef
from podsizer.keys import APPLIED_KEY
from tests.controlplane.kube import Manifest, create_objects, pods_owned_by, to_dict, wait_for
from tests.controlplane.nodes import is_running, wait_for_running_pods
from tests.controlplane.podsizer_updater import FAST_BUDGETS, UpdaterRun
from tests.controlplane.podsizer_webhook import WebhookProcess
from tests.controlplane.recommendations import put_recommendation, simple_recommendation
from tests.controlplane.rollouts import RolloutsController
from tests.controlplane.workloads import controlled_replicaset, wait_until_webhook_acts, workload
from tests.support.progress import (
    DEFAULT_STALL_S,
    TEST_TIMEOUT_S,
    pod_states,
    status_progress,
    wait_progressing,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT_S)]

NamespaceFactory = Callable[..., str]
UPDATE_MODE = "podsizer.io/update-mode"
TEMPLATE = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}}
RECOMMENDED = {"cpu": "250m", "memory": "96Mi"}
# keep-ratio (the default limit policy): limits stay twice the requests; every value goes up, so in place
EXPECTED = {"requests": {"cpu": "250m", "memory": "96Mi"}, "limits": {"cpu": "500m", "memory": "192Mi"}}
# A lower memory limit: not in place while the container's usage is unknown (no metrics-server here)
SHRINK_TEMPLATE = {
    "requests": {"cpu": "100m", "memory": "256Mi"},
    "limits": {"cpu": "200m", "memory": "512Mi"},
}
SHRINK = {"cpu": "250m", "memory": "128Mi"}
SHRUNK = {"requests": {"cpu": "250m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}}
UpdaterFactory = Callable[..., UpdaterRun]  # tests/e2e/conftest.py start_updater
# kube-controller-manager's disruption controller counts a pod named in its PDB's status.disruptedPods as
# not healthy until it sees that pod deleted, or for DeletionTimeout (2 min) after the eviction. A
# StatefulSet's replacement has the evicted pod's name: when the controller syncs only after the replacement
# exists (a loaded machine), the PDB allows no disruption for those 2 minutes, with nothing changing.
PDB_DELETION_TIMEOUT_S = 120.0


def _resources(pod: Manifest) -> Any:
    return pod["spec"]["containers"][0]["resources"]


def _status_resources(pod: Manifest) -> Any:
    """What the (simulated) kubelet reports it runs: containerStatuses[0].resources."""
    statuses = pod.get("status", {}).get("containerStatuses") or [{}]
    return statuses[0].get("resources")


def _events(admin: client.ApiClient, namespace: str, name: str) -> list[Manifest]:
    core = client.CoreV1Api(admin)
    found = core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}")
    return [to_dict(admin, e) for e in found.items]


def _reasons(admin: client.ApiClient, namespace: str, name: str) -> set[str]:
    return {e["reason"] for e in _events(admin, namespace, name)}


def _running(
    admin: client.ApiClient,
    ns: str,
    kind: str,
    name: str,
    replicas: int,
    resources: Manifest,
    annotations: dict[str, str],
    recommended: dict[str, str],
    **spec: Any,
) -> tuple[str, str, list[Manifest]]:
    """Workload `kind`/`name` with `replicas` Running pods (no Recommendation yet, so the webhook leaves
    them alone), then its Recommendation, once the webhook serves it (a replacement created before would
    come back unsized, and the updater rightly stops: replacement-not-sized); returns the pods' owner kind
    and name, and the pods."""
    api_version = "argoproj.io/v1alpha1" if kind == "Rollout" else "apps/v1"
    body = workload(api_version, kind, name, replicas, resources, **spec)
    body["metadata"]["annotations"] = annotations
    (stored,) = create_objects(admin, [body], namespace=ns)
    owner = controlled_replicaset(admin, ns, kind, name) if kind in ("Deployment", "Rollout") else stored
    owner_kind, owner_name = owner["kind"], owner["metadata"]["name"]
    pods = wait_for_running_pods(admin, ns, owner_kind, owner_name, replicas)
    assert all(_resources(p) == resources for p in pods)
    put_recommendation(admin, simple_recommendation(WorkloadRef(ns, kind, name), {"main": recommended}))
    wait_until_webhook_acts(
        admin,
        owner,
        lambda pod: APPLIED_KEY in (pod["metadata"].get("annotations") or {}),
        f"the webhook to serve the Recommendation of {kind} {ns}/{name}",
    )
    return owner_kind, owner_name, pods


def _pdb(admin: client.ApiClient, ns: str, name: str, **spec: Any) -> None:
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}}, **spec},
    }
    create_objects(admin, [pdb], namespace=ns)


class ReadyWatch:
    """Polls a workload's pods every 50 ms: the fewest Running and Ready pods seen, and every uid."""

    def __init__(self, admin: client.ApiClient, ns: str, owner_kind: str, owner: str) -> None:
        self.args = (admin, ns, owner_kind, owner)
        self.fewest_ready: int | None = None
        self.uids: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> ReadyWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _poll(self) -> None:
        admin, ns, kind, owner = self.args
        while not self._stop.is_set():
            pods = (
                pods_owned_by(admin, ns, kind, owner) if kind != "ReplicaSet" else _deployment_pods(admin, ns)
            )
            ready = sum(1 for p in pods if is_running(p) and not p["metadata"].get("deletionTimestamp"))
            self.fewest_ready = ready if self.fewest_ready is None else min(self.fewest_ready, ready)
            self.uids |= {p["metadata"]["uid"] for p in pods}
            self._stop.wait(0.05)


def _deployment_pods(admin: client.ApiClient, ns: str) -> list[Manifest]:
    """Every pod of the namespace (each test's namespace holds one workload)."""
    return [to_dict(admin, p) for p in client.CoreV1Api(admin).list_namespaced_pod(ns).items]


def _pdbs(admin: client.ApiClient, ns: str) -> list[Manifest]:
    budgets = client.PolicyV1Api(admin).list_namespaced_pod_disruption_budget(ns)
    return [to_dict(admin, b) for b in budgets.items]


def _converged(
    admin: client.ApiClient,
    ns: str,
    count: int,
    expected: Manifest,
    run: UpdaterRun,
    stall_s: float = DEFAULT_STALL_S,
) -> list[Manifest]:
    """The namespace's `count` pods, once all are Running with `expected` resources. Progress: a pod
    evicted, created, bound, started or resized, or a PodDisruptionBudget's status changing; a stall names
    the updater's actions and skip reasons so far."""

    def look() -> tuple[list[Manifest], list[Manifest]]:
        return _deployment_pods(admin, ns), _pdbs(admin, ns)

    def check(seen: tuple[list[Manifest], list[Manifest]]) -> list[Manifest] | None:
        pods = [p for p in seen[0] if not p["metadata"].get("deletionTimestamp")]
        ok = len(pods) == count and all(is_running(p) and _resources(p) == expected for p in pods)
        return pods if ok else None

    def progress(seen: tuple[list[Manifest], list[Manifest]]) -> object:
        return pod_states(seen[0]), tuple(status_progress(b) for b in seen[1])

    what = f"{count} Running pods of {ns} with {expected}"
    return wait_progressing(look, check, progress, what, stall_s=stall_s, context=run.summary)


def _passes(run: UpdaterRun, more: int, what: str) -> None:
    """Waits for `more` updater passes after this one (progress: each pass)."""
    wanted = run.passes + more
    wait_progressing(lambda: run.passes, lambda n: n >= wanted, lambda n: n, what)


def test_a_deployment_in_place_or_recreate_is_resized_in_place_without_losing_a_pod(
    admin_client: client.ApiClient,
    podsizer_webhook: WebhookProcess,
    make_namespace: NamespaceFactory,
    start_updater: UpdaterFactory,
) -> None:
    ns = make_namespace(mode="auto")
    annotations = {UPDATE_MODE: "in-place-or-recreate"}
    kind, owner, before = _running(
        admin_client, ns, "Deployment", "web", 3, TEMPLATE, annotations, RECOMMENDED
    )
    _pdb(admin_client, ns, "web", minAvailable=2)
    with ReadyWatch(admin_client, ns, kind, owner) as watch:
        run = start_updater()
        after = _converged(admin_client, ns, 3, EXPECTED, run)
    skips = [e["message"] for p in before for e in _events(admin_client, ns, p["metadata"]["name"])]
    assert {p["metadata"]["uid"] for p in after} == {p["metadata"]["uid"] for p in before}, (
        run.summary(),
        skips,
    )
    assert watch.fewest_ready == 3
    assert run.count("resized", "in-place") == 3 and run.count("evicted") == 0
    for pod in after:
        assert "PodsizerResized" in _reasons(admin_client, ns, pod["metadata"]["name"])
    assert "PodsizerResized" in _reasons(admin_client, ns, "web")
    wait_progressing(
        lambda: [_status_resources(p) for p in _deployment_pods(admin_client, ns)],
        lambda reported: all(r == EXPECTED for r in reported),
        repr,
        "the kubelet stand-in reporting the resized resources in containerStatuses",
    )


def test_a_canary_rollout_in_place_or_recreate_is_resized_in_place(
    admin_client: client.ApiClient,
    podsizer_webhook: WebhookProcess,
    argo_rollouts: RolloutsController,
    make_namespace: NamespaceFactory,
    start_updater: UpdaterFactory,
) -> None:
    """The real Argo Rollouts controller makes the ReplicaSet; Pod -> ReplicaSet -> Rollout resolves from
    the updater's watched caches, and its pods are resized in place."""
    ns = make_namespace(mode="auto")
    annotations = {UPDATE_MODE: "in-place-or-recreate"}
    steps = [{"setWeight": 50}, {"pause": {"duration": "10s"}}, {"setWeight": 100}]
    kind, owner, before = _running(
        admin_client,
        ns,
        "Rollout",
        "canary",
        2,
        TEMPLATE,
        annotations,
        RECOMMENDED,
        strategy={"canary": {"steps": steps}},
    )
    _pdb(admin_client, ns, "canary", minAvailable=1)
    with ReadyWatch(admin_client, ns, kind, owner) as watch:
        run = start_updater()
        after = _converged(admin_client, ns, 2, EXPECTED, run)
    assert {p["metadata"]["uid"] for p in after} == {p["metadata"]["uid"] for p in before}, run.summary()
    assert watch.fewest_ready == 2
    assert run.count("resized", "in-place") == 2 and run.count("evicted") == 0
    assert "PodsizerResized" in _reasons(admin_client, ns, "canary")


def test_a_statefulset_in_place_or_recreate_converges_within_its_pdb(
    admin_client: client.ApiClient,
    podsizer_webhook: WebhookProcess,
    make_namespace: NamespaceFactory,
    start_updater: UpdaterFactory,
) -> None:
    """A lower memory limit cannot be set in place without the container's usage: the fallback evicts,
    through the Eviction API, one pod at a time as the PDB allows."""
    ns = make_namespace(mode="auto")
    annotations = {UPDATE_MODE: "in-place-or-recreate"}
    kind, owner, before = _running(
        admin_client, ns, "StatefulSet", "db", 3, SHRINK_TEMPLATE, annotations, SHRINK, serviceName="db"
    )
    _pdb(admin_client, ns, "db", maxUnavailable=1)
    with ReadyWatch(admin_client, ns, kind, owner) as watch:
        run = start_updater()
        after = _converged(admin_client, ns, 3, SHRUNK, run, PDB_DELETION_TIMEOUT_S + DEFAULT_STALL_S)
    assert sorted(p["metadata"]["name"] for p in after) == ["db-0", "db-1", "db-2"]
    assert not {p["metadata"]["uid"] for p in after} & {p["metadata"]["uid"] for p in before}
    assert watch.fewest_ready is not None and watch.fewest_ready >= 2, "more pods down than the PDB allows"
    assert run.count("evicted", "memory-usage-unknown") == 3 and run.count("resized") == 0


def test_a_recreate_workload_is_evicted_one_pod_at_a_time(
    admin_client: client.ApiClient,
    podsizer_webhook: WebhookProcess,
    make_namespace: NamespaceFactory,
    start_updater: UpdaterFactory,
) -> None:
    ns = make_namespace(mode="auto")
    kind, owner, before = _running(
        admin_client, ns, "Deployment", "web", 3, TEMPLATE, {UPDATE_MODE: "recreate"}, RECOMMENDED
    )
    with ReadyWatch(admin_client, ns, kind, owner) as watch:
        run = start_updater()
        after = _converged(admin_client, ns, 3, EXPECTED, run)
    assert not {p["metadata"]["uid"] for p in after} & {p["metadata"]["uid"] for p in before}
    assert watch.fewest_ready is not None and watch.fewest_ready >= 2, "two pods were down at once"
    assert run.count("evicted", "recreate") == 3 and run.count("resized") == 0
    times = sorted(e.at for e in run.updater.ledger.entries if e.workload.name == "web")
    assert len(times) == 3
    assert all(
        (b - a).total_seconds() >= FAST_BUDGETS.workload_cooldown_seconds
        for a, b in itertools.pairwise(times)
    )


def test_recreate_under_sized_template_evicts_each_pod_once_then_stops(
    admin_client: client.ApiClient,
    podsizer_webhook: WebhookProcess,
    make_namespace: NamespaceFactory,
    start_updater: UpdaterFactory,
) -> None:
    """Template 100m/128Mi, recommendation 1000m/1Gi (beyond the change factor): each pod is evicted once
    and comes back at 400m/512Mi, which is what admission gives, and is not evicted again (it was, every
    pass, without end)."""
    ns = make_namespace(mode="auto")
    small = {"requests": {"cpu": "100m", "memory": "128Mi"}}
    _, _, before = _running(
        admin_client,
        ns,
        "Deployment",
        "web",
        2,
        small,
        {UPDATE_MODE: "recreate"},
        {"cpu": "1", "memory": "1Gi"},
    )
    run = start_updater()
    after = _converged(admin_client, ns, 2, {"requests": {"cpu": "400m", "memory": "512Mi"}}, run)
    _passes(run, 10, "ten more updater passes")
    assert run.count("evicted", "recreate") == 2, run.summary()
    now = [p for p in _deployment_pods(admin_client, ns) if not p["metadata"].get("deletionTimestamp")]
    assert {p["metadata"]["uid"] for p in now} == {p["metadata"]["uid"] for p in after}
    assert not {p["metadata"]["uid"] for p in after} & {p["metadata"]["uid"] for p in before}


def test_a_single_replica_workload_is_left_alone_without_its_annotation(
    admin_client: client.ApiClient,
    podsizer_webhook: WebhookProcess,
    make_namespace: NamespaceFactory,
    start_updater: UpdaterFactory,
) -> None:
    ns = make_namespace(mode="auto")
    _, _, (pod,) = _running(
        admin_client, ns, "Deployment", "solo", 1, TEMPLATE, {UPDATE_MODE: "recreate"}, RECOMMENDED
    )
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    run = start_updater()

    def skipped() -> list[Manifest]:
        return [e for e in _events(admin_client, ns, name) if e["reason"] == "PodsizerSkipped"]

    (event,) = wait_for(lambda: skipped() or None, "the single-replica skip event on the pod", 60)
    assert "single-replica" in event["message"]
    assert run.count("skipped", "single-replica") == 1
    (still,) = _deployment_pods(admin_client, ns)
    assert (still["metadata"]["uid"], _resources(still)) == (uid, TEMPLATE)
    assert run.count("evicted") == 0
    # With the annotation, the same workload is recreated
    client.AppsV1Api(admin_client).patch_namespaced_deployment(
        "solo", ns, {"metadata": {"annotations": {"podsizer.io/allow-single-replica": "true"}}}
    )
    (new,) = _converged(admin_client, ns, 1, EXPECTED, run)
    assert new["metadata"]["uid"] != uid


def test_a_gpu_change_is_never_made_in_place(
    admin_client: client.ApiClient,
    podsizer_webhook: WebhookProcess,
    make_namespace: NamespaceFactory,
    start_updater: UpdaterFactory,
) -> None:
    ns = make_namespace(mode="auto")
    gpus = {
        "requests": {"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu": "2"},
        "limits": {"nvidia.com/gpu": "2"},
    }
    annotations = {UPDATE_MODE: "in-place-or-recreate", "podsizer.io/gpu": "resize"}
    recommended = {"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu": "1"}
    _, _, before = _running(admin_client, ns, "Deployment", "trainer", 2, gpus, annotations, recommended)
    run = start_updater()
    one_gpu = {
        "requests": {"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu": "1"},
        "limits": {"nvidia.com/gpu": "1"},
    }
    after = _converged(admin_client, ns, 2, one_gpu, run)
    assert not {p["metadata"]["uid"] for p in after} & {p["metadata"]["uid"] for p in before}
    assert run.count("resized") == 0 and run.count("evicted", "gpu-change") == 2
    for pod in before:
        assert "PodsizerResized" not in _reasons(admin_client, ns, pod["metadata"]["name"])


def test_the_updaters_dry_run_changes_nothing_and_records_events(
    admin_client: client.ApiClient,
    podsizer_webhook: WebhookProcess,
    make_namespace: NamespaceFactory,
    start_updater: UpdaterFactory,
) -> None:
    ns = make_namespace(mode="auto")
    _, _, before = _running(
        admin_client, ns, "Deployment", "web", 2, TEMPLATE, {UPDATE_MODE: "recreate"}, RECOMMENDED
    )
    run = start_updater(dry_run=True)
    wait_for(lambda: "PodsizerWouldEvict" in _reasons(admin_client, ns, "web"), "a dry-run event on web", 60)
    _passes(run, 3, "a few more passes")
    now = _deployment_pods(admin_client, ns)
    assert {p["metadata"]["uid"] for p in now} == {p["metadata"]["uid"] for p in before}
    assert all(_resources(p) == TEMPLATE for p in now)
    pod_events = [e for p in before for e in _events(admin_client, ns, p["metadata"]["name"])]
    would = [e for e in pod_events if e["reason"] == "PodsizerWouldEvict"]
    assert would and would[0]["message"].startswith("dry-run: would evict (recreate)")
    assert run.count("evicted", "recreate", dry_run=True) >= 1 and run.count("evicted") == 0
