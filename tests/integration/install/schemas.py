"""Offline schemas for kubeconform: Kubernetes' own made standalone, and CRDs' as kubeconform reads them."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from tests.integration.install.support import CRDS, KUBE_VERSIONS, load_yaml_docs, tool

SCHEMA_ROOT = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value.rpartition("/")[2]
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def schema_file_name(obj: Mapping[str, Any]) -> str:
    """kubeconform's {{.ResourceKind}}{{.KindSuffix}}.json for an object."""
    group, _, version = obj["apiVersion"].rpartition("/")
    suffix = f"-{group.split('.')[0]}-{version}" if group else f"-{version}"
    return f"{obj['kind'].lower()}{suffix}.json"


def _strict(node: Any) -> Any:
    """A CRD schema that refuses unknown fields (kubeconform's -strict needs the schema to say so)."""
    if isinstance(node, dict):
        out = {k: _strict(v) for k, v in node.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


def write_crd_schemas(out: Path, crd: Mapping[str, Any], *, strict: bool = False) -> None:
    """Each served version of a CRD as out/crd/<kind>-<group prefix>-<version>.json."""
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
    (out / "crd").mkdir(parents=True, exist_ok=True)
    for version in crd["spec"]["versions"]:
        schema = dict(version["schema"]["openAPIV3Schema"])
        if strict:
            schema = _strict(schema)
            schema["properties"]["metadata"] = {"type": "object"}
        api_version = f"{group}/{version['name']}"
        schema["properties"] = {
            **schema["properties"],
            "apiVersion": {"enum": [api_version]},
            "kind": {"enum": [kind]},
        }
        name = schema_file_name({"apiVersion": api_version, "kind": kind})
        (out / "crd" / name).write_text(json.dumps(schema))


def write_standalone_schemas(
    out: Path, objects: Iterable[Mapping[str, Any]], *, crds: Iterable[Mapping[str, Any]] = ()
) -> None:
    """The schemas the objects need, each with the definitions it reaches; the Recommendation's and crds'."""
    names = {schema_file_name(o) for o in objects}
    for version in KUBE_VERSIONS:
        src = SCHEMA_ROOT / f"v{version}-local-strict"
        dst = out / f"v{version}-standalone-strict"
        dst.mkdir(parents=True, exist_ok=True)
        defs = json.loads((src / "_definitions.json").read_text())["$defs"]
        for name in names:
            if not (src / name).exists():
                continue
            text = (src / name).read_text().replace('"/api/_definitions.json#/$defs/', '"#/$defs/')
            schema = json.loads(text)
            needed: set[str] = set()
            todo = list(_refs(schema))
            while todo:
                ref = todo.pop()
                if ref not in needed:
                    needed.add(ref)
                    todo.extend(_refs(defs[ref]))
            schema["$defs"] = {ref: defs[ref] for ref in sorted(needed)}
            (dst / name).write_text(json.dumps(schema))
    (crd,) = load_yaml_docs(CRDS / "recommendation.yaml")
    write_crd_schemas(out, crd)
    for other in crds:
        write_crd_schemas(out, other, strict=True)


def kubeconform(kube_version: str, schemas: Path, manifest: Path, *extra: str) -> dict[str, Any]:
    """kubeconform's JSON report on `manifest`: strict, against the local schemas, `extra` flags."""
    args = [
        "-strict",
        "-summary",
        "-output",
        "json",
        "-kubernetes-version",
        kube_version,
        *extra,
        *_locations(schemas),
        str(manifest),
    ]
    proc = subprocess.run([str(tool("kubeconform")), *args], capture_output=True, text=True, timeout=120)
    try:
        report: dict[str, Any] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"kubeconform said: {proc.stdout}\n{proc.stderr}")
    return report


def _locations(schemas: Path) -> list[str]:
    return [
        "-schema-location",
        f"{schemas}/{{{{.NormalizedKubernetesVersion}}}}-standalone{{{{.StrictSuffix}}}}/"
        "{{.ResourceKind}}{{.KindSuffix}}.json",
        "-schema-location",
        f"{schemas}/crd/{{{{.ResourceKind}}}}{{{{.KindSuffix}}}}.json",
    ]
