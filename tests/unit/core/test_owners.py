"""The one owner resolver: its rules, and agreement between the recommender's and the webhook's paths."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from podsizer.api import WorkloadRef
from podsizer.cluster import OwnerCache
from podsizer.owners import (
    UNCONTROLLED,
    ControllerRef,
    OwnerGraph,
    PodFacts,
    PodOwner,
    Skipped,
    controller_of,
    resolve,
    resolve_pod,
)
from podsizer.subject import Subject
from tests.support.hypo import examples

API_VERSIONS = {
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "Deployment": "apps/v1",
    "ReplicationController": "v1",
    "Node": "v1",
    "Rollout": "argoproj.io/v1alpha1",
    "Experiment": "argoproj.io/v1alpha1",
    "AnalysisRun": "argoproj.io/v1alpha1",
    "DeploymentConfig": "apps.openshift.io/v1",
    "Job": "batch/v1",
    "CronJob": "batch/v1",
    "Widget": "example.com/v1",
}


class Links:
    """A ControllerLookup over a plain dict, for the rule tests."""

    def __init__(self, links: dict[tuple[str, str], ControllerRef] | None = None) -> None:
        self.links = links or {}

    def get(self, namespace: str, kind: str, name: str) -> ControllerRef | None:
        return self.links.get((kind, name)) if namespace == "shop" else None


def _ref(kind: str, name: str, api_version: str | None = "") -> ControllerRef:
    return ControllerRef(API_VERSIONS[kind] if api_version == "" else api_version, kind, name)


def _pod(
    controller: ControllerRef | None,
    name: str = "web-7d4b9c8f5-x2x9z",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> PodFacts:
    return PodFacts("shop", name, controller, labels or {}, annotations or {})


# ---- the rules, each once -----------------------------------------------------------------------


@pytest.mark.parametrize("api_version", ["", None], ids=["with apiVersion", "kind only"])
@pytest.mark.parametrize(
    ("pod_controller", "parent", "expected"),
    [
        (("ReplicaSet", "web-7d4b9c8f5"), ("Deployment", "web"), ("Deployment", "web")),
        (("ReplicaSet", "canary-6b8d9f7c4"), ("Rollout", "canary"), ("Rollout", "canary")),
        (("ReplicationController", "cart-3"), ("DeploymentConfig", "cart"), ("DeploymentConfig", "cart")),
        (("StatefulSet", "db"), None, ("StatefulSet", "db")),
        (("DaemonSet", "agent"), None, ("DaemonSet", "agent")),
        (("Job", "report-29467800"), ("CronJob", "report"), ("CronJob", "report")),
    ],
)
def test_supported_chains_resolve(
    api_version: str | None,
    pod_controller: tuple[str, str],
    parent: tuple[str, str] | None,
    expected: tuple[str, str],
) -> None:
    links = Links({pod_controller: _ref(*parent, api_version)} if parent else {})
    got = resolve(_pod(_ref(*pod_controller, api_version)), links)
    assert got == WorkloadRef("shop", *expected)


@pytest.mark.parametrize(
    ("pod", "parent", "reason"),
    [
        pytest.param(
            _pod(_ref("ReplicaSet", "exp-1")),
            ("Experiment", "exp"),
            "unsupported kind Experiment (Argo Experiment pods are not workloads)",
            id="experiment replicaset",
        ),
        pytest.param(_pod(_ref("AnalysisRun", "run")), None, "Argo AnalysisRun pod", id="analysisrun pod"),
        pytest.param(
            _pod(_ref("Job", "nightly-29467800")),
            None,
            "owner Job/nightly-29467800 has no known controller",
            id="job the lookup does not know",
        ),
        pytest.param(
            _pod(_ref("Job", "nightly-29467800")),
            ("Widget", "w"),
            "Job/nightly-29467800 is controlled by unsupported kind Widget",
            id="job of another kind",
        ),
        pytest.param(_pod(_ref("CronJob", "nightly")), None, "unsupported owner kind CronJob", id="cronjob"),
        pytest.param(
            _pod(_ref("Deployment", "web")),
            None,
            "unsupported owner kind Deployment",
            id="pod under deployment",
        ),
        pytest.param(_pod(None), None, "no controller", id="bare pod"),
        pytest.param(
            _pod(_ref("Node", "node-1"), annotations={"kubernetes.io/config.mirror": "abc"}),
            None,
            "mirror pod",
            id="mirror pod",
        ),
        pytest.param(
            _pod(_ref("ReplicationController", "cart-3"), "cart-3-deploy"),
            ("DeploymentConfig", "cart"),
            "OpenShift deployer or hook pod",
            id="deployer pod by name",
        ),
        pytest.param(
            _pod(None, "cart-3-hook-pre", labels={"openshift.io/deployer-pod.type": "hook-pre"}),
            None,
            "OpenShift deployer or hook pod",
            id="hook pod by label",
        ),
        pytest.param(
            _pod(_ref("ReplicaSet", "orphan")), None, "ReplicaSet/orphan has no known controller", id="orphan"
        ),
        pytest.param(
            _pod(_ref("ReplicationController", "legacy-1")),
            ("Widget", "w"),
            "unsupported kind Widget",
            id="rc of another kind",
        ),
    ],
)
def test_not_workloads_are_skipped_with_the_reason(
    pod: PodFacts, parent: tuple[str, str] | None, reason: str
) -> None:
    ref = pod.controller
    links = Links({(ref.kind, ref.name): _ref(*parent)} if parent and ref else {})
    got = resolve(pod, links)
    assert isinstance(got, Skipped) and reason in got.reason
    assert got.subject == Subject.of_pod("shop", pod.name or "")
    assert str(got.subject) == f"shop/pod/{pod.name}"


@pytest.mark.parametrize(
    ("pod", "parent", "reason"),
    [
        pytest.param(
            _pod(_ref("ReplicaSet", "web-1", "example.com/v1")),
            None,
            "ReplicaSet/web-1 is in API group 'example.com', expected 'apps'",
            id="pod controller",
        ),
        pytest.param(
            _pod(_ref("ReplicationController", "cart-3", "apps/v1")),
            None,
            "expected 'core'",
            id="rc not in the core group",
        ),
        pytest.param(
            _pod(_ref("ReplicaSet", "web-1")),
            _ref("Deployment", "web", "example.com/v1"),
            "is controlled by Deployment/web is in API group 'example.com'",
            id="replicaset owner",
        ),
        pytest.param(
            _pod(_ref("ReplicationController", "cart-3")),
            _ref("DeploymentConfig", "cart", "v1"),
            "expected 'apps.openshift.io'",
            id="dc owner",
        ),
    ],
)
def test_api_groups_are_checked_when_the_source_names_them(
    pod: PodFacts, parent: ControllerRef | None, reason: str
) -> None:
    ref = pod.controller
    links = Links({(ref.kind, ref.name): parent} if parent and ref else {})
    got = resolve(pod, links)
    assert isinstance(got, Skipped) and reason in got.reason


def test_missing_api_version_matches_on_kind_alone() -> None:
    pod = _pod(ControllerRef(None, "ReplicaSet", "web-1"))
    links = Links({("ReplicaSet", "web-1"): ControllerRef(None, "Deployment", "web")})
    assert resolve(pod, links) == WorkloadRef("shop", "Deployment", "web")


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({"pod-template-hash": "7d4b9c8f5"}, WorkloadRef("shop", "Deployment", "my-api-v2")),
        ({"rollouts-pod-template-hash": "7d4b9c8f5"}, WorkloadRef("shop", "Rollout", "my-api-v2")),
        ({"pod-template-hash": "other"}, None),
        ({}, None),
    ],
)
def test_replicaset_without_a_known_owner_falls_back_to_the_hash_label(
    labels: dict[str, str], expected: WorkloadRef | None
) -> None:
    got = resolve(_pod(_ref("ReplicaSet", "my-api-v2-7d4b9c8f5"), labels=labels), Links())
    if expected is None:
        assert isinstance(got, Skipped) and "has no known controller" in got.reason
    else:
        assert got == expected


@pytest.mark.parametrize("kind", ["Deployment", "Rollout"])
def test_ambiguous_replicaset_is_settled_by_exists(kind: str) -> None:
    pod = _pod(_ref("ReplicaSet", "web-7d4b9c8f5"), labels={"app": "web"})
    known = WorkloadRef("shop", kind, "web")
    assert resolve(pod, Links(), lambda ref: ref == known) == known
    assert isinstance(resolve(pod, Links(), lambda ref: False), Skipped)
    assert isinstance(resolve(pod, Links()), Skipped)


def test_a_known_owner_wins_over_the_hash_label() -> None:
    pod = _pod(_ref("ReplicaSet", "web-7d4b9c8f5"), labels={"pod-template-hash": "7d4b9c8f5"})
    links = Links({("ReplicaSet", "web-7d4b9c8f5"): _ref("Rollout", "web")})
    assert resolve(pod, links) == WorkloadRef("shop", "Rollout", "web")


@pytest.mark.parametrize(
    ("labels", "annotations", "expected"),
    [
        ({"deploymentconfig": "cart"}, {}, "cart"),
        ({"deploymentconfig": "label"}, {"openshift.io/deployment-config.name": "annotation"}, "annotation"),
    ],
)
def test_rc_without_a_known_owner_falls_back_to_the_dc_marker(
    labels: dict[str, str], annotations: dict[str, str], expected: str
) -> None:
    pod = _pod(_ref("ReplicationController", "cart-3"), "cart-3-q8w7e", labels, annotations)
    assert resolve(pod, Links()) == WorkloadRef("shop", "DeploymentConfig", expected)


def test_controller_of_reads_the_controller_reference_only() -> None:
    refs = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "adopted", "controller": False},
        {"kind": "ReplicaSet", "name": "no-api-version", "controller": True},
    ]
    assert controller_of({"metadata": {"ownerReferences": refs}}) == ControllerRef(
        "", "ReplicaSet", "no-api-version"
    )
    assert controller_of({"metadata": {"ownerReferences": refs[:1]}}) is None
    assert controller_of({"metadata": {"ownerReferences": "garbage"}}) is None


@pytest.mark.parametrize("api_version", ["", None], ids=["with apiVersion", "kind only"])
def test_a_job_without_a_controller_is_its_own_workload(api_version: str | None) -> None:
    links = Links({("Job", "train-llama"): UNCONTROLLED})
    got = resolve(_pod(_ref("Job", "train-llama", api_version), "train-llama-x2x9z"), links)
    assert got == WorkloadRef("shop", "Job", "train-llama")


def test_a_job_under_a_cronjob_of_another_api_group_is_skipped() -> None:
    links = Links({("Job", "report-29467800"): ControllerRef("example.com/v1", "CronJob", "report")})
    got = resolve(_pod(_ref("Job", "report-29467800")), links)
    assert isinstance(got, Skipped)
    assert "CronJob/report is in API group 'example.com', expected 'batch'" in got.reason


@pytest.mark.parametrize(
    ("job", "known", "expected"),
    [
        ("report-29467800", {("CronJob", "report"), ("Job", "report-29467800")}, ("CronJob", "report")),
        ("report-29467800", {("Job", "report-29467800")}, ("Job", "report-29467800")),
        ("train", {("CronJob", "train"), ("Job", "train")}, ("Job", "train")),
        ("report-29467800", set(), None),
    ],
    ids=["cronjob run", "job of that name", "no run suffix", "nothing exists"],
)
def test_a_job_the_lookup_does_not_know_yet_falls_back_to_existing_recommendations(
    job: str, known: set[tuple[str, str]], expected: tuple[str, str] | None
) -> None:
    """The webhook's race: the Job's watch event not in yet; the CronJob's run name and the Recommendation
    snapshot (`exists`) decide, CronJob first."""
    got = resolve(_pod(_ref("Job", job)), Links(), lambda ref: (ref.kind, ref.name) in known)
    if expected is None:
        assert isinstance(got, Skipped) and f"owner Job/{job} has no known controller" in got.reason
    else:
        assert got == WorkloadRef("shop", *expected)


def test_ksm_owner_rows_give_the_cronjob_chain_and_bare_jobs() -> None:
    graph = OwnerGraph.build(
        [
            PodOwner("shop", "report-29467800-abcde", "Job", "report-29467800"),
            PodOwner("shop", "train-llama-fghij", "Job", "train-llama"),
            PodOwner("shop", "ghost-29467800-klmno", "Job", "ghost-29467800"),
        ],
        [
            ("shop", "Job", "report-29467800", "CronJob", "report"),
            ("shop", "Job", "train-llama", "", ""),  # kube_job_owner{owner_kind="<none>"}
        ],
    )
    assert graph.resolve("shop", "report-29467800-abcde") == WorkloadRef("shop", "CronJob", "report")
    assert graph.resolve("shop", "train-llama-fghij") == WorkloadRef("shop", "Job", "train-llama")
    ghost = graph.resolve("shop", "ghost-29467800-klmno")
    assert isinstance(ghost, Skipped) and "Job/ghost-29467800 has no known controller" in ghost.reason


def test_graph_without_a_record_of_the_pod_says_so() -> None:
    graph = OwnerGraph.build([], [])
    got = graph.resolve("shop", "ghost-abc")
    assert isinstance(got, Skipped) and got.reason == "no owner information for this pod"


# ---- agreement: the recommender's path and the webhook's path ------------------------------------

_SUFFIX = st.text(alphabet="bcdfghjklmnpqrstvwxz2456789", min_size=5, max_size=5)
_HASH = st.text(alphabet="0123456789abcdef", min_size=4, max_size=10)
_BASE = st.sampled_from(["web", "my-api-v2", "cart", "db", "canary", "exp-1"])
_POD_KINDS = st.sampled_from(
    [
        *("ReplicaSet",) * 5,
        *("ReplicationController",) * 3,
        *("StatefulSet", "DaemonSet", "Job", "CronJob", "Experiment", "AnalysisRun", "Node", "Deployment"),
        "Widget",
        None,
    ]
)
_PARENT_KINDS = st.sampled_from(
    [*("Deployment", "Rollout", "DeploymentConfig") * 2, "Experiment", "ReplicaSet", "Widget", "CronJob"]
)


BARE = ("", "")  # a Chain's parent: the Job is known and has no controller


@dataclass(frozen=True)
class Chain:
    """One pod and, for a ReplicaSet/RC controller, the intermediate's own controller (or none known)."""

    name: str
    generate_name: str | None
    controller: tuple[str, str] | None
    parent: tuple[str, str] | None
    labels: dict[str, str]
    annotations: dict[str, str]


@st.composite
def chains(draw: st.DrawFn, index: int) -> Chain:
    base = f"{draw(_BASE)}{index}"
    kind = draw(_POD_KINDS)
    hash_ = draw(_HASH)
    owner = f"{base}-{hash_}" if kind in ("ReplicaSet", "ReplicationController") else base
    if kind == "Job":
        owner = draw(st.sampled_from([f"{base}-{draw(st.integers(0, 10**8))}", base]))
    controller = (kind, owner) if kind else None
    parent = None
    if kind in ("ReplicaSet", "ReplicationController") and draw(st.sampled_from([True, True, False])):
        parent = (draw(_PARENT_KINDS), draw(st.sampled_from([base, "other"])))
    if kind == "Job":  # a CronJob's run, a bare Job (known, no controller: BARE), or a Job not known
        parent = draw(st.sampled_from([("CronJob", base), BARE, ("Widget", base), None]))
    shape = draw(st.sampled_from(["app"] * 10 + ["deployer", "hook"]))
    if shape == "deployer":
        name, generate_name = f"{base}-{draw(st.integers(1, 9))}-deploy", None
    elif shape == "hook":
        hook = draw(st.sampled_from(["pre", "mid", "post"]))
        name, generate_name = f"{base}-{draw(st.integers(1, 9))}-hook-{hook}", None
    else:
        generate_name = f"{owner}-"
        name = generate_name + draw(_SUFFIX)
    app_labels = {
        "pod-template-hash": draw(st.sampled_from([hash_, "zzz"])),
        "rollouts-pod-template-hash": draw(st.sampled_from([hash_, "zzz"])),
        "deploymentconfig": base,
        "app": base,
    }
    labels = {k: app_labels[k] for k in draw(st.sets(st.sampled_from(sorted(app_labels)), max_size=2))}
    annotations = {}
    if draw(st.booleans()):
        annotations["openshift.io/deployment-config.name"] = base
    marker = draw(
        st.sampled_from([None] * 16 + ["deployer-label", "type-label", "type-annotation", "mirror"])
    )
    if marker == "deployer-label":
        labels["openshift.io/deployer-pod-for.name"] = f"{base}-1"
    elif marker == "type-label":
        labels["openshift.io/deployer-pod.type"] = "hook-mid"
    elif marker == "type-annotation":
        annotations["openshift.io/deployer-pod.type"] = "hook-pre"
    elif marker == "mirror":
        annotations["kubernetes.io/config.mirror"] = "abc"
    use_generate_name = generate_name is not None and draw(st.booleans())
    return Chain(name, generate_name if use_generate_name else None, controller, parent, labels, annotations)


@st.composite
def clusters(draw: st.DrawFn) -> list[Chain]:
    return [draw(chains(i)) for i in range(draw(st.integers(1, 6)))]


def _owner_ref(kind: str, name: str) -> dict[str, Any]:
    return {"apiVersion": API_VERSIONS[kind], "kind": kind, "name": name, "controller": True, "uid": "u"}


def _pod_json(c: Chain) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": "shop", "labels": c.labels, "annotations": c.annotations}
    if c.generate_name is not None:
        meta["generateName"] = c.generate_name  # at admission the pod has no name yet
    else:
        meta["name"] = c.name
    if c.controller:
        meta["ownerReferences"] = [_owner_ref(*c.controller)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


def _intermediate_json(c: Chain) -> dict[str, Any]:
    assert c.controller and c.parent
    owner_refs = [] if c.parent == BARE else [_owner_ref(*c.parent)]
    return {"metadata": {"namespace": "shop", "name": c.controller[1], "ownerReferences": owner_refs}}


def _ksm_pod(c: Chain) -> PodOwner:
    kind, owner = c.controller or (None, None)
    return PodOwner("shop", c.name, kind, owner, c.labels, c.annotations)


def _by_ksm(cluster: list[Chain]) -> list[WorkloadRef | None]:
    """The recommender's path: kube-state-metrics rows (owner kinds, no apiVersions)."""
    graph = OwnerGraph.build(
        [_ksm_pod(c) for c in cluster],
        [("shop", *c.controller, *c.parent) for c in cluster if c.controller and c.parent],
    )
    return [_ref_or_none(graph.resolve("shop", c.name)) for c in cluster]


def _by_kube_api(cluster: list[Chain]) -> list[WorkloadRef | None]:
    """The recommender's Kubernetes API path: the listed objects' ownerReferences, apiVersions included."""
    pods = [PodFacts("shop", c.name, controller_of(_pod_json(c)), c.labels, c.annotations) for c in cluster]
    links = [
        ("shop", c.controller[0], c.controller[1], ref)
        for c in cluster
        if c.controller
        and c.parent
        and (ref := controller_of(_intermediate_json(c)) or (UNCONTROLLED if c.parent == BARE else None))
        is not None
    ]
    graph = OwnerGraph.of(pods, links)
    return [_ref_or_none(graph.resolve("shop", c.name)) for c in cluster]


def _by_webhook(cluster: list[Chain]) -> list[WorkloadRef | None]:
    """The webhook's path: the pod's JSON at admission and the watched owner cache, no snapshot."""
    cache = OwnerCache()
    for kind in ("ReplicaSet", "ReplicationController", "Job"):
        cache.handler(kind).replace(
            [_intermediate_json(c) for c in cluster if c.controller and c.controller[0] == kind and c.parent]
        )
    return [resolve_pod(_pod_json(c), "shop", cache) for c in cluster]


def _ref_or_none(got: WorkloadRef | Skipped) -> WorkloadRef | None:
    return got if isinstance(got, WorkloadRef) else None


_EXPERIMENT = Chain("exp-10-abc-bcdfg", None, ("ReplicaSet", "exp-10-abc"), ("Experiment", "exp"), {}, {})
_DC = Chain(
    "cart0-1-bcdfg", "cart0-1-", ("ReplicationController", "cart0-1"), ("DeploymentConfig", "cart"), {}, {}
)
_DEPLOYER = Chain("cart1-1-deploy", None, ("ReplicationController", "cart1-1"), None, {}, {})
_ORPHAN_HASH = Chain(
    "web2-7d4b-bcdfg", "web2-7d4b-", ("ReplicaSet", "web2-7d4b"), None, {"pod-template-hash": "7d4b"}, {}
)
_CRON_RUN = Chain("report3-29467800-bcdfg", None, ("Job", "report3-29467800"), ("CronJob", "report3"), {}, {})
_BARE_JOB = Chain("train4-bcdfg", "train4-", ("Job", "train4"), BARE, {}, {})
_EXAMPLE = [_EXPERIMENT, _DC, _DEPLOYER, _ORPHAN_HASH, _CRON_RUN, _BARE_JOB]


@settings(max_examples=examples(2000), deadline=None)
@given(clusters())
@example(_EXAMPLE)
def test_recommender_and_webhook_resolve_every_pod_alike(cluster: list[Chain]) -> None:
    webhook = _by_webhook(cluster)
    assert _by_ksm(cluster) == webhook
    assert _by_kube_api(cluster) == webhook


def test_the_agreement_example_covers_workloads_and_skips() -> None:
    got = _by_webhook(_EXAMPLE)
    assert got == [
        None,
        WorkloadRef("shop", "DeploymentConfig", "cart"),
        None,
        WorkloadRef("shop", "Deployment", "web2"),
        WorkloadRef("shop", "CronJob", "report3"),
        WorkloadRef("shop", "Job", "train4"),
    ]
