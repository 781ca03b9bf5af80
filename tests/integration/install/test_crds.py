"""The Recommendation and UsageCheckpoint CRDs are structural and match what the codec and the checkpoint
store write; the stand-in CRDs are usable."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import jsonschema
import pytest

from podsizer.api.identity import SUPPORTED_KINDS, WorkloadRef
from podsizer.api.quantity import QUANTITY_PATTERN
from podsizer.api.resource import (
    ContainerPolicy,
    ContainerRecommendation,
    Forecast,
    GpuRecommendation,
    Recommendation,
    Window,
    recommendation_to_resource,
)
from recommender.checkpoints.crdstore import KIND as CHECKPOINT_KIND
from recommender.checkpoints.crdstore import MAX_BLOB_BYTES, MAX_DATA_CHARS, CrdCheckpointStore
from recommender.checkpoints.crdstore import PLURAL as CHECKPOINT_PLURAL
from tests.integration.install.support import CRDS, MANIFESTS, load_yaml_docs
from tests.support.custom_objects import FakeCustomObjects

CRD_FILE = CRDS / "recommendation.yaml"


def _crd() -> dict[str, Any]:
    (doc,) = load_yaml_docs(CRD_FILE)
    return doc


def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = _crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _nodes(node: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    yield path or ".", node
    for name, child in (node.get("properties") or {}).items():
        yield from _nodes(child, f"{path}.{name}")
    if isinstance(node.get("items"), Mapping):
        yield from _nodes(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), Mapping):
        yield from _nodes(node["additionalProperties"], f"{path}{{}}")


def _full_recommendation() -> Recommendation:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    return Recommendation(
        target=WorkloadRef("ml", "Deployment", "trainer"),
        generated_at=now,
        window=Window(now - timedelta(days=7), now, 20160),
        sizing_mode="autopilot",
        reason="HPA owns replicas; sized from per-replica steady state",
        containers=(
            ContainerRecommendation(
                name="main",
                requests={"cpu": "250m", "memory": "512Mi", "nvidia.com/gpu": "1"},
                limits={"memory": "640Mi", "nvidia.com/gpu": "1"},
                confidence=0.93,
                reason="p99 + 15%",
                low_confidence=False,
            ),
        ),
        gpu=GpuRecommendation(
            model="NVIDIA A100-SXM4-80GB",
            allocated=1,
            sm_active_p95=0.12,
            fb_used_max_bytes=9 * 2**30,
            idle=True,
            idle_since=now - timedelta(hours=3),
            suggested_resource="nvidia.com/mig-1g.10gb",
            hourly_cost=4.1,
            wasted_hourly_cost=3.6,
            activity_signal="SM_ACTIVE",
        ),
        forecast=Forecast(horizon_days=7, cpu_cores_peak=1.5, memory_bytes_peak=3 * 2**30, method="linear"),
        policy=(ContainerPolicy("*", min_allowed={"cpu": 0.05}, max_allowed={"memory": 8 * 2**30}),),
    )


def _validate(obj: Mapping[str, Any]) -> None:
    jsonschema.Draft202012Validator(_schema(), format_checker=jsonschema.FormatChecker()).validate(obj)


def test_crd_identity() -> None:
    crd = _crd()
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "recommendations.podsizer.io"
    assert spec["group"] == "podsizer.io" and spec["scope"] == "Namespaced"
    assert spec["names"]["plural"] == "recommendations" and spec["names"]["kind"] == "Recommendation"
    assert "psrec" in spec["names"]["shortNames"]
    (version,) = spec["versions"]
    assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
    assert version["subresources"] == {"status": {}}
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    assert columns["Target"] == ".spec.targetRef.name" and columns["Mode"] == ".status.sizingMode"


@pytest.mark.parametrize("file", ["recommendation.yaml", "usagecheckpoint.yaml"])
def test_schema_is_structural(file: str) -> None:
    (crd,) = load_yaml_docs(CRDS / file)
    for path, node in _nodes(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]):
        if node.get("x-kubernetes-int-or-string"):
            assert node.get("anyOf") == [{"type": "integer"}, {"type": "string"}], path
            continue
        assert "type" in node or node.get("x-kubernetes-preserve-unknown-fields"), f"{path}: no type"
        if node.get("type") == "object" and path != ".metadata":
            assert "properties" in node or "additionalProperties" in node, f"{path}: open object"


def test_kind_enum_matches_the_contract() -> None:
    target = _schema()["properties"]["spec"]["properties"]["targetRef"]["properties"]
    assert set(target["kind"]["enum"]) == set(SUPPORTED_KINDS)
    assert set(target["apiVersion"]["enum"]) == set(SUPPORTED_KINDS.values())


def test_codec_output_validates_against_the_crd() -> None:
    _validate(recommendation_to_resource(_full_recommendation()))


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("spec", "targetRef", "kind"), "Pod"),
        (("status", "sizingMode"), "dynamic"),
        (("status", "containers", 0, "confidence"), 1.5),
        (("status", "containers", 0, "requests", "cpu"), 0.5),
        (("status", "gpu", "smActiveP95"), -0.1),
        (("status", "containers", 0, "limits"), ["1Gi"]),
        (("status", "window", "samples"), -1),
        (("status", "containers", 0, "requests", "cpu"), "lots"),
        (("status", "containers", 0, "limits", "memory"), "1 Gi"),
        (("spec", "resourcePolicy", "containers", 0, "minAllowed", "cpu"), "NaN"),
        (("spec", "resourcePolicy", "containers", 0, "maxAllowed", "memory"), "Infinity"),
    ],
)
def test_crd_rejects_invalid_values(path: tuple[Any, ...], value: Any) -> None:
    obj = copy.deepcopy(recommendation_to_resource(_full_recommendation()))
    node: Any = obj
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        _validate(obj)


def test_every_quantity_map_carries_the_codecs_quantity_pattern() -> None:
    quantity_maps = [
        (path, node["additionalProperties"])
        for path, node in _nodes(_schema())
        if path.rsplit(".", 1)[-1] in ("requests", "limits", "minAllowed", "maxAllowed")
    ]
    assert len(quantity_maps) == 4
    for path, values in quantity_maps:
        assert values.get("pattern") == QUANTITY_PATTERN, path


def test_crd_keeps_the_cluster_field() -> None:
    rec = _full_recommendation()
    east = dataclasses.replace(rec, target=dataclasses.replace(rec.target, cluster="east"))
    obj = recommendation_to_resource(east)
    _validate(obj)
    assert obj["status"]["cluster"] == "east"
    assert "cluster" in _schema()["properties"]["status"]["properties"]


def test_crd_requires_a_target() -> None:
    obj = recommendation_to_resource(_full_recommendation())
    del obj["spec"]["targetRef"]["name"]
    with pytest.raises(jsonschema.ValidationError, match="'name' is a required property"):
        _validate(obj)


@pytest.mark.parametrize(
    ("file", "bundled"),
    [
        ("recommendation.yaml", "podsizer.io_recommendations.yaml"),
        ("usagecheckpoint.yaml", "podsizer.io_usagecheckpoints.yaml"),
    ],
)
def test_olm_bundle_carries_the_same_crd(file: str, bundled: str) -> None:
    bundle_copy = MANIFESTS / "olm" / "manifests" / bundled
    assert load_yaml_docs(bundle_copy) == load_yaml_docs(CRDS / file)


@pytest.mark.parametrize(
    ("file", "name", "version", "kind"),
    [
        ("deploymentconfig.yaml", "deploymentconfigs.apps.openshift.io", "v1", "DeploymentConfig"),
    ],
)
def test_stand_in_crds_serve_the_workload_kinds(file: str, name: str, version: str, kind: str) -> None:
    (crd,) = load_yaml_docs(CRDS / "testing" / file)
    assert crd["metadata"]["name"] == name
    assert crd["spec"]["names"]["kind"] == kind and crd["spec"]["scope"] == "Namespaced"
    (v,) = crd["spec"]["versions"]
    assert v["name"] == version and v["served"] and v["storage"]
    assert f"{crd['spec']['group']}/{version}" == SUPPORTED_KINDS[kind]
    assert set(v["subresources"]) == {"status", "scale"}
    assert v["subresources"]["scale"]["specReplicasPath"] == ".spec.replicas"
    assert (
        v["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"] is True
    )


def test_user_facing_crd_directory_holds_only_podsizer_crds() -> None:
    # `kubectl apply -f manifests/crds/` (not recursive) must not install the test stand-ins.
    names = [d["metadata"]["name"] for f in sorted(CRDS.glob("*.yaml")) for d in load_yaml_docs(f)]
    assert names == ["recommendations.podsizer.io", "usagecheckpoints.podsizer.io"]


CHECKPOINT_CRD_FILE = CRDS / "usagecheckpoint.yaml"


def _checkpoint_schema() -> dict[str, Any]:
    (crd,) = load_yaml_docs(CHECKPOINT_CRD_FILE)
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _checkpoint_objects() -> list[dict[str, Any]]:
    """What CrdCheckpointStore writes, single- and multi-cluster, the largest blob included."""
    api = FakeCustomObjects()
    CrdCheckpointStore(custom_objects=api).write(
        {WorkloadRef("ml", "Deployment", "trainer"): b"\x00\xff", WorkloadRef("ml", "Job", "j"): b""}
    )
    CrdCheckpointStore(cluster="east", custom_objects=api).write(
        {WorkloadRef("ml", "CronJob", "nightly", "east"): b"x" * MAX_BLOB_BYTES}
    )
    return list(api.objects.values())


def test_checkpoint_crd_identity() -> None:
    (crd,) = load_yaml_docs(CHECKPOINT_CRD_FILE)
    spec = crd["spec"]
    assert crd["metadata"]["name"] == f"{CHECKPOINT_PLURAL}.podsizer.io"
    assert spec["group"] == "podsizer.io" and spec["scope"] == "Namespaced"
    assert spec["names"]["plural"] == CHECKPOINT_PLURAL and spec["names"]["kind"] == CHECKPOINT_KIND
    assert "psuc" in spec["names"]["shortNames"]
    (version,) = spec["versions"]
    assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
    assert "subresources" not in version


def test_checkpoint_crd_kinds_and_data_limit_match_the_store() -> None:
    spec = _checkpoint_schema()["properties"]["spec"]["properties"]
    assert set(spec["targetRef"]["properties"]["kind"]["enum"]) == set(SUPPORTED_KINDS)
    assert spec["data"]["maxLength"] == MAX_DATA_CHARS
    assert "format" not in spec["data"], "a damaged object must stay readable as a string"


def test_checkpoint_store_objects_validate_against_the_crd() -> None:
    validator = jsonschema.Draft202012Validator(_checkpoint_schema())
    objects = _checkpoint_objects()
    assert len(objects) == 3
    for obj in objects:
        validator.validate(obj)


@pytest.mark.parametrize(
    ("field", "value"),
    [("data", "x" * (MAX_DATA_CHARS + 1)), ("bytes", -1), ("targetRef", {"kind": "Pod", "name": "p"})],
)
def test_checkpoint_crd_rejects_invalid_values(field: str, value: Any) -> None:
    obj = _checkpoint_objects()[0]
    obj["spec"][field] = value
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(_checkpoint_schema()).validate(obj)
