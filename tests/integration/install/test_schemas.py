"""Every object podsizer ships validates against Kubernetes' OpenAPI schemas, Recommendations against the CRD.

The schemas are local: the strict JSON schemas bundled in the kubernetes-validate package, made standalone
(each file carries the definitions it references) so that kubeconform (scripts/build_tools.py) reads them
offline.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from podsizer.api.identity import WorkloadRef
from podsizer.api.resource import (
    ContainerRecommendation,
    Recommendation,
    Window,
    recommendation_to_resource,
)
from tests.integration.install.schemas import kubeconform, schema_file_name, write_standalone_schemas
from tests.integration.install.support import (
    CRDS,
    KUBE_VERSIONS,
    MANIFESTS,
    SCENARIOS,
    Render,
    load_yaml_docs,
)

# cert-manager's kinds: no schema ships offline; their fields are checked in test_chart.py.
NO_LOCAL_SCHEMA = frozenset({"Issuer", "Certificate", "Route"})  # Route: OpenShift's, no local schema


def _sample_recommendation() -> dict[str, Any]:
    from datetime import UTC, datetime, timedelta

    now = datetime(2026, 12, 1, tzinfo=UTC)
    rec = Recommendation(
        target=WorkloadRef("shop", "StatefulSet", "db"),
        generated_at=now,
        window=Window(now - timedelta(days=7), now, 2016),
        sizing_mode="static",
        containers=(
            ContainerRecommendation("pg", {"cpu": "500m", "memory": "2Gi"}, {"memory": "2560Mi"}, 0.8, "p99"),
        ),
    )
    return recommendation_to_resource(rec)


def _all_objects(render: Render) -> Iterator[tuple[str, dict[str, Any]]]:
    for scenario in SCENARIOS:
        for d in render(scenario):
            yield f"chart[{scenario.name}] {d['kind']}/{d['metadata']['name']}", d
    for f in sorted((MANIFESTS / "install").glob("*.yaml")):
        for d in load_yaml_docs(f):
            if d.get("kind") != "Kustomization":
                yield f"{f.name} {d['kind']}/{d['metadata']['name']}", d
    for f in sorted(CRDS.rglob("*.yaml")):
        for d in load_yaml_docs(f):
            yield f"{f.name} {d['kind']}/{d['metadata']['name']}", d


@pytest.fixture(scope="module")
def objects(render: Render) -> list[tuple[str, dict[str, Any]]]:
    found = list(_all_objects(render))
    assert len(found) > 80
    return [*found, ("codec Recommendation", _sample_recommendation())]


@pytest.fixture(scope="module")
def schemas(objects: list[tuple[str, dict[str, Any]]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("schemas")
    write_standalone_schemas(out, [o for _, o in objects])
    return out


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
def test_every_object_validates_against_the_schemas(
    kube_version: str, objects: list[tuple[str, dict[str, Any]]], schemas: Path
) -> None:
    validators: dict[str, jsonschema.Draft202012Validator] = {}
    unvalidated: set[str] = set()
    for where, obj in objects:
        name = schema_file_name(obj)
        path = schemas / f"v{kube_version}-standalone-strict" / name
        if obj["kind"] == "Recommendation":
            path = schemas / "crd" / name
        if not path.exists():
            unvalidated.add(obj["kind"])
            continue
        if name not in validators:
            validators[name] = jsonschema.Draft202012Validator(json.loads(path.read_text()))
        errors = sorted(validators[name].iter_errors(obj), key=lambda e: list(e.path))
        assert not errors, f"{where} (Kubernetes {kube_version}): {'.'.join(map(str, errors[0].path))}: " + (
            errors[0].message
        )
    assert unvalidated == NO_LOCAL_SCHEMA


def test_schemas_catch_bad_objects(schemas: Path, render: Render) -> None:
    dep = next(d for d in render(SCENARIOS[0]) if d["kind"] == "Deployment")
    schema = json.loads(
        (schemas / f"v{KUBE_VERSIONS[-1]}-standalone-strict" / "deployment-apps-v1.json").read_text()
    )
    validator = jsonschema.Draft202012Validator(schema)
    assert not list(validator.iter_errors(dep))
    dep["spec"]["replicas"] = "two"
    assert list(validator.iter_errors(dep))
    dep["spec"]["replicas"] = 2
    dep["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    assert list(validator.iter_errors(dep)), "strict schemas reject unknown fields"


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
def test_every_object_validates_withkubeconform(
    kube_version: str, objects: list[tuple[str, dict[str, Any]]], schemas: Path, tmp_path: Path
) -> None:
    docs = [o for _, o in objects]
    manifest = tmp_path / "all.yaml"
    manifest.write_text(yaml.safe_dump_all(docs))
    skip = ",".join(sorted(NO_LOCAL_SCHEMA))
    report = kubeconform(kube_version, schemas, manifest, "-skip", skip)
    problems = [r for r in report.get("resources", []) if r["status"] not in ("statusValid", "statusSkipped")]
    assert problems == []
    skipped = sum(1 for d in docs if d["kind"] in NO_LOCAL_SCHEMA)
    assert report["summary"] == {"valid": len(docs) - skipped, "invalid": 0, "errors": 0, "skipped": skipped}


def test_kubeconform_rejects_bad_objects(schemas: Path, tmp_path: Path, render: Render) -> None:
    bad_rec = _sample_recommendation()
    bad_rec["status"]["sizingMode"] = "yolo"
    bad_svc = next(d for d in render(SCENARIOS[0]) if d["kind"] == "Service")
    bad_svc["spec"]["ports"][0]["port"] = "https"
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump_all([bad_rec, bad_svc]))
    report = kubeconform(KUBE_VERSIONS[-1], schemas, tmp_path / "bad.yaml")
    assert report["summary"]["invalid"] == 2, report
