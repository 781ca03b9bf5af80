"""The admission decision end to end over real pod shapes: who is never mutated, modes, dry-run, errors."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import orjson
import pytest

from podsizer.api import Recommendation, WorkloadRef
from podsizer.cluster import MetadataCache, OwnerCache
from podsizer.keys import APPLIED_KEY, DRY_RUN_KEY
from podsizer.policy import Mode, PlanPolicy
from tests.unit.webhook.builders import (
    admitter,
    apply_reply,
    container,
    crec,
    dc_pod,
    decode_patch,
    deployer_pod,
    hook_pod,
    recommendation,
    replicaset_pod,
    review,
    rollout_pod,
)

WEB = recommendation("Deployment", "web")
CART = recommendation(
    "DeploymentConfig",
    "cart",
    containers=[crec("main", {"cpu": "1", "memory": "4Gi", "nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"})],
)


def _mirror() -> dict[str, Any]:
    pod = replicaset_pod()
    pod["metadata"]["annotations"]["kubernetes.io/config.mirror"] = "3f1c2a"
    return pod


def _excluded_pod() -> dict[str, Any]:
    return replicaset_pod(annotations={"podsizer.io/exclude": "true"})


@pytest.mark.parametrize(
    ("pod", "namespace", "reason"),
    [
        pytest.param(deployer_pod(), "shop", "deployer-or-hook-pod", id="dc deployer pod"),
        pytest.param(hook_pod(), "shop", "deployer-or-hook-pod", id="dc hook pod with GPUs"),
        pytest.param(hook_pod(hook="post"), "shop", "deployer-or-hook-pod", id="dc post hook"),
        pytest.param(_mirror(), "shop", "mirror-pod", id="mirror pod"),
        pytest.param(replicaset_pod(), "kube-system", "excluded-namespace", id="kube-system"),
        pytest.param(replicaset_pod(), "podsizer", "excluded-namespace", id="webhook's own namespace"),
        pytest.param(_excluded_pod(), "shop", "excluded-pod", id="pod opt-out"),
    ],
)
def test_never_mutated(pod: dict[str, Any], namespace: str, reason: str) -> None:
    recs = [
        recommendation("Deployment", "web", namespace),
        recommendation("DeploymentConfig", "cart", namespace),
    ]
    reply, decision = admitter(*recs, CART).review(review(pod, namespace))
    assert (decision.outcome, decision.reason) == ("skipped", reason)
    assert reply["response"] == {"uid": reply["response"]["uid"], "allowed": True}


@pytest.mark.parametrize(("gpu_opt_in", "gpus"), [(None, "2"), ("resize", "1"), ("keep", "2")])
def test_dc_pod_is_sized_from_the_deploymentconfig_recommendation(gpu_opt_in: str | None, gpus: str) -> None:
    pod = dc_pod(
        containers=[
            container(
                "main",
                {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "2"},
                {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "2"},
            )
        ]
    )
    if gpu_opt_in is not None:
        pod["metadata"]["annotations"]["podsizer.io/gpu"] = gpu_opt_in
    reply, decision = admitter(CART).review(review(pod))
    assert decision.workload == WorkloadRef("shop", "DeploymentConfig", "cart")
    res = apply_reply(pod, reply)["spec"]["containers"][0]["resources"]
    assert res["requests"] == {"cpu": "1000m", "memory": "4096Mi", "nvidia.com/gpu": gpus}
    assert res["limits"] == {"cpu": "2000m", "memory": "4096Mi", "nvidia.com/gpu": gpus}


def test_rollout_pod_uses_the_rollout_recommendation() -> None:
    rec = recommendation("Rollout", "canary-demo")
    _, decision = admitter(rec, WEB).review(review(rollout_pod()))
    assert decision.outcome == "applied"
    assert decision.recommendation == "rollout-canary-demo"


@pytest.mark.parametrize(
    ("default", "pod_ann", "workload_ann", "ns_label", "expected"),
    [
        ("dry-run", None, None, None, "dry-run"),
        ("auto", None, None, None, "applied"),
        ("auto", None, None, "off", "skipped"),
        ("off", None, None, "auto", "applied"),
        ("off", None, "auto", "off", "applied"),
        ("auto", None, "dry-run", "auto", "dry-run"),
        ("auto", "off", "auto", None, "skipped"),
        ("dry-run", None, "bogus", "auto", "applied"),
    ],
)
def test_mode_precedence(
    default: Mode, pod_ann: str | None, workload_ann: str | None, ns_label: str | None, expected: str
) -> None:
    meta = MetadataCache()
    meta.handler("Namespace").replace(
        [{"metadata": {"name": "shop", "labels": {"podsizer.io/mode": ns_label} if ns_label else {}}}]
    )
    meta.handler("Deployment").replace(
        [
            {
                "metadata": {
                    "name": "web",
                    "namespace": "shop",
                    "annotations": ({"podsizer.io/mode": workload_ann} if workload_ann else {}),
                }
            }
        ]
    )
    pod = replicaset_pod(annotations={"podsizer.io/mode": pod_ann} if pod_ann else {})
    _, decision = admitter(WEB, default_mode=default, metadata=meta).review(review(pod))
    assert decision.outcome == expected


@pytest.mark.parametrize("where", ["namespace-label", "namespace-annotation", "workload"])
def test_exclude_on_namespace_or_workload(where: str) -> None:
    meta = MetadataCache()
    ns: dict[str, Any] = {"name": "shop"}
    if where == "namespace-label":
        ns["labels"] = {"podsizer.io/exclude": "true"}
    if where == "namespace-annotation":
        ns["annotations"] = {"podsizer.io/exclude": "true"}
    meta.handler("Namespace").replace([{"metadata": ns}])
    if where == "workload":
        meta.handler("Deployment").event(
            "ADDED",
            {
                "metadata": {
                    "name": "web",
                    "namespace": "shop",
                    "annotations": {"podsizer.io/exclude": "True"},
                }
            },
        )
    _, decision = admitter(WEB, metadata=meta).review(review(replicaset_pod()))
    assert decision.outcome == "skipped"
    assert decision.reason == ("excluded-workload" if where == "workload" else "excluded-namespace")


def test_dry_run_annotation_holds_exactly_the_auto_changes_and_nothing_else_changes() -> None:
    pod = replicaset_pod(
        containers=[
            container("main", {"cpu": "500m", "memory": "1Gi"}, {"cpu": "1", "memory": "2Gi"}),
            container("istio-proxy", {"cpu": "100m"}),
        ]
    )
    auto_reply, auto = admitter(WEB, default_mode="auto").review(review(pod))
    dry_reply, dry = admitter(WEB, default_mode="dry-run").review(review(pod))
    auto_pod, dry_pod = apply_reply(pod, auto_reply), apply_reply(pod, dry_reply)

    dry_record = orjson.loads(dry_pod["metadata"]["annotations"].pop(DRY_RUN_KEY))
    applied_record = orjson.loads(auto_pod["metadata"]["annotations"].pop(APPLIED_KEY))
    assert dry_pod == pod, "dry-run changed something besides its annotation"
    assert dry_record == applied_record
    assert dry_record["recommendation"] == "deployment-web"
    assert dry_record["sizingMode"] == "static"
    assert dry_record["generatedAt"] == "2026-12-02T06:00:00Z"
    # Replaying the recorded changes on the original pod gives exactly the auto-mode pod.
    replay = copy.deepcopy(pod)
    for ch in dry_record["changes"]:
        c = replay["spec"][ch["containerType"]]
        target = next(x for x in c if x["name"] == ch["container"])
        target.setdefault("resources", {}).setdefault(ch["field"], {})[ch["resource"]] = ch["to"]
    assert replay == auto_pod
    assert (auto.outcome, dry.outcome) == ("applied", "dry-run")


@pytest.mark.parametrize(
    ("rec", "reason"),
    [
        (recommendation(containers=[crec("main", low_confidence=True)]), "low-confidence"),
        (recommendation(containers=[crec("other")]), "no-matching-container"),
        (recommendation(containers=[crec("main", {"cpu": "500m", "memory": "1Gi"})]), "no-change"),
        (recommendation("Deployment", "api"), "no-recommendation"),
    ],
)
def test_nothing_to_apply_reasons(rec: Recommendation, reason: str) -> None:
    reply, decision = admitter(rec).review(review(replicaset_pod()))
    assert (decision.outcome, decision.reason) == ("skipped", reason)
    assert "patch" not in reply["response"]


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda r: r["request"].update(operation="UPDATE"), "not-a-pod-create"),
        (
            lambda r: r["request"].update(kind={"group": "apps", "version": "v1", "kind": "Deployment"}),
            "not-a-pod-create",
        ),
        (lambda r: r["request"].update(subResource="ephemeralcontainers"), "not-a-pod-create"),
        (lambda r: r["request"].update(object=None), "not-a-pod-create"),
    ],
)
def test_unhandled_requests_are_allowed_untouched(mutate: Any, reason: str) -> None:
    r = review(replicaset_pod())
    mutate(r)
    reply, decision = admitter(WEB).review(r)
    assert decision.reason == reason
    assert reply["response"]["allowed"] is True and "patch" not in reply["response"]


def test_internal_error_allows_without_patch() -> None:
    class Broken:
        def get(self, *_: Any) -> None:
            raise RuntimeError("boom")

        has = get

    a = admitter(WEB)
    a.snapshots = type("Broken", (), {"current": lambda self: Broken(), "refreshed_at": lambda self: None})()
    reply, decision = a.review(review(replicaset_pod(), uid="x-1"))
    assert (decision.outcome, decision.reason) == ("error", "RuntimeError")
    assert reply["response"] == {"uid": "x-1", "allowed": True}


def test_apiserver_dry_run_gets_the_same_answer() -> None:
    pod = replicaset_pod()
    live, _ = admitter(WEB).review(review(pod, uid="u"))
    dry, _ = admitter(WEB).review(review(pod, uid="u", dry_run=True))
    assert decode_patch(live) == decode_patch(dry) != []


def test_store_not_loaded_is_skipped() -> None:
    a = admitter(WEB)
    a.snapshots = type("Empty", (), {"current": lambda self: None, "refreshed_at": lambda self: None})()
    _, decision = a.review(review(replicaset_pod()))
    assert decision.reason == "store-not-loaded"


def test_mig_swap_through_admission_gives_a_pod_the_apiserver_accepts() -> None:
    from podsizer.api import GpuRecommendation

    rec = recommendation(
        containers=[crec("main", {"cpu": "1", "nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"})],
        gpu=GpuRecommendation(
            "NVIDIA A100 80GB PCIe", 1, 0.1, 2**30, suggested_resource="nvidia.com/mig-1g.10gb"
        ),
    )
    pod = replicaset_pod(
        containers=[container("main", {"cpu": "2", "nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"})]
    )
    reply, _ = admitter(
        rec, policy=PlanPolicy(gpu_resize=True, allow_mig_swap=True), owners=OwnerCache()
    ).review(review(pod))
    res = jsonpatch.apply_patch(pod, decode_patch(reply))["spec"]["containers"][0]["resources"]
    assert res["requests"] == {"cpu": "1000m", "nvidia.com/mig-1g.10gb": "1"}
    assert res["limits"] == {"nvidia.com/mig-1g.10gb": "1"}


def test_dry_run_on_a_pod_with_empty_annotations_only_adds_the_annotation() -> None:
    pod = replicaset_pod(annotations={})
    reply, decision = admitter(WEB, default_mode="dry-run").review(review(pod))
    patched = apply_reply(pod, reply)
    assert decision.outcome == "dry-run"
    assert list(patched["metadata"]["annotations"]) == [DRY_RUN_KEY]
    del patched["metadata"]["annotations"][DRY_RUN_KEY]
    assert patched == pod
