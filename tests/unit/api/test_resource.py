"""The Recommendation codec round-trips and names the bad field on invalid objects."""

from datetime import UTC, datetime

import pytest

from podsizer.api import (
    ContainerPolicy,
    ContainerRecommendation,
    GpuRecommendation,
    Recommendation,
    RecommendationError,
    Window,
    WorkloadRef,
    is_deployer_or_hook_pod,
    recommendation_from_resource,
    recommendation_to_resource,
)

T0 = datetime(2026, 11, 25, tzinfo=UTC)
T1 = datetime(2026, 12, 2, tzinfo=UTC)


def _rec() -> Recommendation:
    return Recommendation(
        target=WorkloadRef("shop", "DeploymentConfig", "cart"),
        generated_at=T1,
        window=Window(T0, T1, 10080),
        sizing_mode="static",
        containers=(
            ContainerRecommendation(
                "main", {"cpu": "250m", "memory": "512Mi"}, {"memory": "640Mi"}, 0.9, "p99 + 15%"
            ),
        ),
        gpu=GpuRecommendation(
            "NVIDIA A100 80GB PCIe", 1, 0.2, 10 * 2**30, suggested_resource="nvidia.com/mig-2g.20gb"
        ),
        policy=(ContainerPolicy("*", {"cpu": 0.1}, {"memory": 2 * 2**30}),),
    )


def test_round_trip_keeps_every_field() -> None:
    rec = _rec()
    obj = recommendation_to_resource(rec)
    assert obj["metadata"] == {"name": "deploymentconfig-cart", "namespace": "shop"}
    assert obj["spec"]["targetRef"] == {
        "apiVersion": "apps.openshift.io/v1",
        "kind": "DeploymentConfig",
        "name": "cart",
    }
    assert obj["status"]["generatedAt"] == "2026-12-02T00:00:00Z"
    assert recommendation_from_resource(obj) == rec


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("spec", "targetRef", "kind"), "Pod", "spec.targetRef.kind"),
        (("status", "sizingMode"), "turbo", "status.sizingMode"),
        (("status", "generatedAt"), "yesterday", "status.generatedAt"),
        (("status", "containers", 0, "requests", "cpu"), "lots", "status.containers[0].requests.cpu"),
        (("status", "containers", 0, "confidence"), 3, "status.containers[0].confidence"),
    ],
)
def test_bad_field_is_named(path: tuple[object, ...], value: object, message: str) -> None:
    obj = recommendation_to_resource(_rec())
    node = obj
    for key in path[:-1]:
        node = node[key]  # type: ignore[index]
    node[path[-1]] = value  # type: ignore[index]
    with pytest.raises(RecommendationError, match=message.replace("[", r"\[").replace("]", r"\]")):
        recommendation_from_resource(obj)


@pytest.mark.parametrize(
    ("name", "labels", "expected"),
    [
        ("cart-3-deploy", {}, True),
        ("cart-3-hook-pre", {}, True),
        ("cart-3-hook-post-x7k2p", {}, True),
        ("anything", {"openshift.io/deployer-pod-for.name": "cart-3"}, True),
        ("anything", {"openshift.io/deployer-pod.type": "hook-mid"}, True),
        ("cart-3-abcde", {"deploymentconfig": "cart", "deployment": "cart-3"}, False),
        ("web-7d9f8c6b5-x2x9z", {}, False),
        (None, {}, False),
    ],
)
def test_deployer_and_hook_pods(name: str | None, labels: dict[str, str], expected: bool) -> None:
    assert is_deployer_or_hook_pod(name, labels) is expected


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unsupported workload kind 'ReplicaSet'"):
        WorkloadRef("ns", "ReplicaSet", "x")
