"""The codec refuses every object that breaks the contract, and its message names the field."""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from typing import Any

import pytest

from podsizer.api.identity import WorkloadRef
from podsizer.api.resource import (
    ContainerPolicy,
    ContainerRecommendation,
    GpuRecommendation,
    Recommendation,
    RecommendationError,
    Window,
    check_recommendation,
    recommendation_from_resource,
    recommendation_to_resource,
)

T0 = datetime(2026, 11, 25, tzinfo=UTC)
T1 = datetime(2026, 12, 2, tzinfo=UTC)
REQ_CPU = ("status", "containers", 0, "requests", "cpu")
REQ_MEM = ("status", "containers", 0, "requests", "memory")
CONTAINER = ("status", "containers", 0)
POLICY = ("spec", "resourcePolicy", "containers", 0)


def _rec() -> Recommendation:
    return Recommendation(
        target=WorkloadRef("shop", "Deployment", "web"),
        generated_at=T1,
        window=Window(T0, T1, 10080),
        sizing_mode="static",
        containers=(
            ContainerRecommendation(
                "main", {"cpu": "250m", "memory": "512Mi"}, {"memory": "640Mi"}, 0.9, "p99"
            ),
        ),
        gpu=GpuRecommendation(
            "NVIDIA A100 80GB PCIe", 1, 0.2, 10 * 2**30, suggested_resource="nvidia.com/gpu"
        ),
        policy=(ContainerPolicy("main", {"cpu": 0.1}, {"cpu": 2.0, "memory": 2 * 2**30}),),
    )


def _with(path: tuple[str | int, ...], value: object) -> dict[str, Any]:
    obj = recommendation_to_resource(_rec())
    node: Any = obj
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return obj


def _field(path: tuple[str | int, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def _rejects(obj: object, field: str) -> RecommendationError:
    with pytest.raises(RecommendationError, match="^" + re.escape(field + ": ")) as info:
        recommendation_from_resource(obj)
    return info.value


@pytest.mark.parametrize(
    ("path", "value", "why"),
    [
        (REQ_CPU, "NaN", "invalid Kubernetes quantity"),
        (REQ_CPU, "Infinity", "invalid Kubernetes quantity"),
        (REQ_CPU, "-Inf", "invalid Kubernetes quantity"),
        (REQ_MEM, "1e400", "over 2^63-1 base units"),
        (REQ_MEM, "9223372036854775808", "over 2^63-1 base units"),
        (REQ_MEM, "8Ei", "over 2^63-1 base units"),
        (REQ_CPU, "9223372036854776", "over 2^63-1 milli-units"),
        (REQ_CPU, "-1", "negative"),
        (REQ_MEM, "-512Mi", "negative"),
        (REQ_CPU, "lots", "invalid Kubernetes quantity"),
        (REQ_CPU, "1.2.3", "invalid Kubernetes quantity"),
        (REQ_CPU, "1 Gi", "invalid Kubernetes quantity"),
        (REQ_CPU, " 1", "invalid Kubernetes quantity"),
        (REQ_CPU, "1_000", "invalid Kubernetes quantity"),
        (REQ_CPU, "0x10", "invalid Kubernetes quantity"),
        (REQ_CPU, "1mi", "invalid Kubernetes quantity"),
        (REQ_CPU, "", "invalid Kubernetes quantity"),
        (REQ_CPU, 0.5, "expected a quantity string or integer"),
        (REQ_CPU, math.nan, "expected a quantity string or integer"),
        (REQ_CPU, True, "expected a quantity string or integer"),
        (REQ_CPU, None, "expected a quantity string or integer"),
        (("status", "containers", 0, "limits", "memory"), "1e400", "over 2^63-1"),
        ((*POLICY, "minAllowed", "cpu"), "NaN", "invalid Kubernetes quantity"),
        ((*POLICY, "maxAllowed", "memory"), "-1Gi", "negative"),
    ],
)
def test_bad_quantities_are_refused(path: tuple[str | int, ...], value: object, why: str) -> None:
    error = _rejects(_with(path, value), _field(path))
    assert why in str(error)


def test_min_above_max_in_a_resource_policy_entry_is_refused() -> None:
    error = _rejects(_with((*POLICY, "minAllowed", "cpu"), "3"), _field((*POLICY, "minAllowed", "cpu")))
    assert "above maxAllowed.cpu" in str(error)


def test_min_equal_to_max_is_accepted() -> None:
    rec = recommendation_from_resource(_with((*POLICY, "minAllowed", "cpu"), "2000m"))
    assert rec.policy[0].min_allowed == {"cpu": 2.0} == {"cpu": rec.policy[0].max_allowed["cpu"]}


@pytest.mark.parametrize(
    ("value", "limit"),
    [("9223372036854775807", "memory"), ("9223372036854775", "cpu"), ("9223372036854775807m", "cpu")],
)
def test_the_int64_limit_itself_is_accepted(value: str, limit: str) -> None:
    rec = recommendation_from_resource(_with(("status", "containers", 0, "requests", limit), value))
    assert rec.containers[0].requests[limit] == value


def test_integer_quantities_are_read_as_strings() -> None:
    rec = recommendation_from_resource(_with(REQ_MEM, 1024))
    assert rec.containers[0].requests["memory"] == "1024"


@pytest.mark.parametrize(
    "name",
    [
        "CPU!",
        "nvidia.com/",
        "/gpu",
        "a/b/c",
        "Nvidia.com/gpu",
        "-cpu",
        "cpu-",
        "x" * 64,
        "nvidia.com/mig 1g",
        "",
    ],
)
def test_invalid_resource_names_are_refused(name: str) -> None:
    obj = _with(("status", "containers", 0, "limits"), {name: "1"})
    error = _rejects(obj, _field(("status", "containers", 0, "limits", name)))
    assert "invalid resource name" in str(error)


@pytest.mark.parametrize(
    "name", ["cpu", "memory", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "hugepages-2Mi"]
)
def test_valid_resource_names_are_accepted(name: str) -> None:
    rec = recommendation_from_resource(_with(("status", "containers", 0, "limits"), {name: "1"}))
    assert rec.containers[0].limits == {name: "1"}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ((*CONTAINER, "lowConfidence"), "false"),
        ((*CONTAINER, "lowConfidence"), 0),
        ((*CONTAINER, "confidence"), "0.9"),
        ((*CONTAINER, "confidence"), True),
        ((*CONTAINER, "reason"), 42),
        ((*CONTAINER, "name"), 7),
        ((*CONTAINER, "requests"), ["250m"]),
        (("status", "containers"), {"main": {}}),
        (("status", "window", "samples"), 1.5),
        (("status", "window", "samples"), "10"),
        (("status", "gpu", "allocated"), True),
        (("status", "gpu", "idle"), "true"),
        (("status", "gpu", "model"), None),
        (("status", "generatedAt"), 1700000000),
        (("status", "reason"), ["a"]),
        (("spec", "targetRef", "name"), 3),
        (("metadata", "namespace"), 5),
        (("metadata", "resourceVersion"), 12),
        (("status", "cluster"), 1),
    ],
)
def test_wrong_types_are_refused_not_coerced(path: tuple[str | int, ...], value: object) -> None:
    _rejects(_with(path, value), _field(path))


@pytest.mark.parametrize("value", [1.5, -0.1, math.nan, math.inf])
def test_confidence_outside_zero_to_one_is_refused(value: float) -> None:
    error = _rejects(_with((*CONTAINER, "confidence"), value), _field((*CONTAINER, "confidence")))
    assert "in [0, 1]" in str(error) or "finite" in str(error) or "non-negative" in str(error)


@pytest.mark.parametrize("value", ["nvidia.com/mig 1g.10gb", "NVIDIA.com/gpu", "mig/", 3])
def test_suggested_resource_must_be_a_resource_name(value: object) -> None:
    _rejects(_with(("status", "gpu", "suggestedResource"), value), "status.gpu.suggestedResource")


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("status", "gpu", "hourlyCost"), -1.0),
        (("status", "gpu", "wastedHourlyCost"), math.inf),
        (("status", "gpu", "smActiveP95"), 1.01),
        (("status", "gpu", "fbUsedMaxBytes"), 2**63),
        (("status", "window", "samples"), -1),
        (("status", "forecast"), {"memoryBytesPeak": -5}),
        (("status", "forecast"), {"cpuCoresPeak": math.nan}),
    ],
)
def test_numbers_must_be_finite_non_negative_and_int64_safe(
    path: tuple[str | int, ...], value: object
) -> None:
    field = _field(path) + (f".{next(iter(value))}" if isinstance(value, dict) else "")
    _rejects(_with(path, value), field)


def test_json_infinity_and_huge_numbers_from_a_file_are_refused() -> None:
    text = json.dumps(recommendation_to_resource(_rec())).replace(
        '"confidence": 0.9', '"confidence": Infinity'
    )
    _rejects(json.loads(text), "status.containers[0].confidence")
    text = json.dumps(recommendation_to_resource(_rec())).replace('"samples": 10080', '"samples": 1e400')
    _rejects(json.loads(text), "status.window.samples")


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("kind",), "Other"),
        (("apiVersion",), "podsizer.io/v9"),
        (("spec", "targetRef", "kind"), "CronTab"),
        (("spec", "targetRef", "name"), ""),
        (("status", "sizingMode"), "turbo"),
        (("status", "generatedAt"), "yesterday"),
        (("status", "window", "end"), "2026-13-01T00:00:00Z"),
        (("status", "gpu", "idleSince"), "soon"),
        ((*POLICY, "containerName"), ""),
    ],
)
def test_bad_values_are_named(path: tuple[str | int, ...], value: object) -> None:
    _rejects(_with(path, value), _field(path))


@pytest.mark.parametrize(
    ("part", "field"), [("metadata", "metadata"), ("status", "status"), ("spec", "spec")]
)
def test_missing_parts_are_named(part: str, field: str) -> None:
    obj = recommendation_to_resource(_rec())
    del obj[part]
    assert "required" in str(_rejects(obj, field))


def test_missing_namespace_and_target_are_named() -> None:
    obj = recommendation_to_resource(_rec())
    del obj["metadata"]["namespace"]
    _rejects(obj, "metadata.namespace")
    obj = recommendation_to_resource(_rec())
    del obj["spec"]["targetRef"]
    _rejects(obj, "spec.targetRef")


@pytest.mark.parametrize("obj", [None, [], "Recommendation", 3])
def test_a_non_object_is_refused(obj: object) -> None:
    assert "expected an object" in str(_rejects(obj, "Recommendation"))


def test_the_encoder_refuses_what_the_decoder_would() -> None:
    bad_quantity = Recommendation(
        **{**_rec().__dict__, "containers": (ContainerRecommendation("main", {"cpu": "-1"}, {}, 0.5, ""),)}
    )
    with pytest.raises(RecommendationError, match=r"^status\.containers\[0\]\.requests\.cpu: "):
        recommendation_to_resource(bad_quantity)
    nan_confidence = Recommendation(
        **{**_rec().__dict__, "containers": (ContainerRecommendation("main", {}, {}, math.nan, ""),)}
    )
    with pytest.raises(RecommendationError, match=r"^status\.containers\[0\]\.confidence: "):
        recommendation_to_resource(nan_confidence)
    inverted = Recommendation(
        **{**_rec().__dict__, "policy": (ContainerPolicy("*", {"cpu": 2}, {"cpu": 1}),)}
    )
    with pytest.raises(
        RecommendationError, match=r"^spec\.resourcePolicy\.containers\[0\]\.minAllowed\.cpu: "
    ):
        recommendation_to_resource(inverted)


def test_the_check_refuses_exactly_what_the_encoder_refuses() -> None:
    """check_recommendation (the sizing run's guard) and recommendation_to_resource give one verdict."""
    good = _rec()
    check_recommendation(good)
    assert recommendation_to_resource(good)["status"]["containers"]
    broken = [
        Recommendation(
            **{**good.__dict__, "containers": (ContainerRecommendation("main", {"cpu": "-1"}, {}, 0.5, ""),)}
        ),
        Recommendation(
            **{**good.__dict__, "containers": (ContainerRecommendation("main", {}, {}, math.nan, ""),)}
        ),
        Recommendation(**{**good.__dict__, "policy": (ContainerPolicy("*", {"cpu": 2}, {"cpu": 1}),)}),
        Recommendation(**{**good.__dict__, "policy": (ContainerPolicy("*", {"cpu": math.inf}, {}),)}),
    ]
    for rec in broken:
        with pytest.raises(RecommendationError) as by_encoder:
            recommendation_to_resource(rec)
        with pytest.raises(RecommendationError) as by_check:
            check_recommendation(rec)
        assert str(by_check.value) == str(by_encoder.value)
