"""JSON Patch building: RFC 6901 escaping and missing parents, checked by applying with jsonpatch."""

from __future__ import annotations

from typing import Any

import jsonpatch
import pytest

from webhook.patch import PatchBuilder, escape, pointer


@pytest.mark.parametrize(
    ("token", "escaped"),
    [("nvidia.com/gpu", "nvidia.com~1gpu"), ("a~b", "a~0b"), ("~/", "~0~1"), ("~1", "~01"), (0, "0")],
)
def test_escape_follows_rfc6901(token: str | int, escaped: str) -> None:
    assert escape(token) == escaped


@pytest.mark.parametrize(
    "doc",
    [
        {"metadata": {}, "spec": {"containers": [{"name": "a"}]}},
        {"metadata": {"annotations": None}, "spec": {"containers": [{"name": "a", "resources": None}]}},
        {"metadata": {"annotations": {"x": "1"}}, "spec": {"containers": [{"name": "a", "resources": {}}]}},
        {"metadata": {}, "spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}},
    ],
)
def test_missing_parents_are_created_once_and_the_patch_applies(doc: dict[str, Any]) -> None:
    b = PatchBuilder(doc)
    b.set(["spec", "containers", 0, "resources", "requests", "nvidia.com/gpu"], "1")
    b.set(["spec", "containers", 0, "resources", "limits", "nvidia.com/gpu"], "1")
    b.set(["metadata", "annotations", "podsizer.io/applied"], "{}")
    out = jsonpatch.apply_patch(doc, b.ops)
    assert out["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "1"
    assert out["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert out["metadata"]["annotations"]["podsizer.io/applied"] == "{}"
    paths = [op["path"] for op in b.ops]
    assert len(paths) == len(set(paths)), "a parent was created twice"


def test_existing_annotations_are_kept() -> None:
    doc = {"metadata": {"annotations": {"keep": "me"}}}
    b = PatchBuilder(doc)
    b.set(["metadata", "annotations", "a/b~c"], "v")
    assert b.ops == [{"op": "add", "path": "/metadata/annotations/a~1b~0c", "value": "v"}]
    assert jsonpatch.apply_patch(doc, b.ops)["metadata"]["annotations"] == {"keep": "me", "a/b~c": "v"}


def test_wrong_typed_parent_is_replaced_by_an_object() -> None:
    doc = {"spec": {"containers": [{"name": "a", "resources": [{}]}]}}
    b = PatchBuilder(doc)
    b.set(["spec", "containers", 0, "resources", "requests", "cpu"], "1")
    assert jsonpatch.apply_patch(doc, b.ops)["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1"}
    }


def test_missing_array_element_is_refused() -> None:
    with pytest.raises(ValueError, match="is not an array"):
        PatchBuilder({"spec": {"containers": {}}}).set(["spec", "containers", 0, "name"], "x")


def test_pointer_joins_escaped_tokens() -> None:
    assert pointer(["spec", "containers", 2, "resources", "limits", "nvidia.com/mig-1g.10gb"]) == (
        "/spec/containers/2/resources/limits/nvidia.com~1mig-1g.10gb"
    )


@pytest.mark.parametrize("resources", [None, [], {}, {"requests": None}, {"limits": {"cpu": "1"}}])
def test_changes_to_patch_creates_resources_requests_and_limits(resources: Any) -> None:
    from podsizer.podspec import Change
    from webhook.writer import changes_to_patch

    container: dict[str, Any] = {"name": "main"}
    if resources is not None:
        container["resources"] = resources
    doc = {"metadata": {}, "spec": {"containers": [{"name": "side"}, container]}}
    b = PatchBuilder(doc)
    changes_to_patch(
        b,
        [
            Change("containers", 1, "main", "requests", "cpu", None, "250m"),
            Change("containers", 1, "main", "limits", "nvidia.com/gpu", None, "1"),
            Change("containers", 1, "main", "requests", "nvidia.com/gpu", None, "1"),
        ],
    )
    out = jsonpatch.apply_patch(doc, b.ops)["spec"]["containers"][1]["resources"]
    assert out["requests"] == {"cpu": "250m", "nvidia.com/gpu": "1"}
    assert out["limits"]["nvidia.com/gpu"] == "1"
    if resources == {"limits": {"cpu": "1"}}:
        assert out["limits"] == {"cpu": "1", "nvidia.com/gpu": "1"}, "existing limits are kept"
