"""podsizer.kube.resources: each custom resource podsizer names is the one the shipped CRD declares."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from podsizer.kube.resources import DEPLOYMENT_CONFIGS, RECOMMENDATIONS, USAGE_CHECKPOINTS, CustomResource

CRDS = Path(__file__).resolve().parents[3] / "manifests" / "crds"


def _crd(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(doc, dict) and doc["kind"] == "CustomResourceDefinition"
    return doc


@pytest.mark.parametrize(
    ("resource", "file"),
    [
        (RECOMMENDATIONS, "recommendation.yaml"),
        (USAGE_CHECKPOINTS, "usagecheckpoint.yaml"),
        (DEPLOYMENT_CONFIGS, "testing/deploymentconfig.yaml"),  # OpenShift's, as the tests install it
    ],
)
def test_the_resource_is_the_one_its_crd_declares(resource: CustomResource, file: str) -> None:
    spec = _crd(CRDS / file)["spec"]
    served = [v["name"] for v in spec["versions"] if v.get("served")]
    assert (spec["group"], spec["names"]["plural"], spec["names"]["kind"]) == (
        resource.group,
        resource.plural,
        resource.kind,
    )
    assert resource.version in served
    assert resource.name == f"{spec['names']['plural']}.{spec['group']}"
    assert resource.api_version == f"{spec['group']}/{resource.version}"
