"""The OLM catalog (manifests/catalog) passes `opm validate` and serves the bundle; its CatalogSource and
Subscription validate against OLM's CRD schemas; --registry renders every manifest for another registry."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.controlplane.binaries import build_tools
from tests.integration.install.schemas import kubeconform, write_standalone_schemas
from tests.integration.install.support import (
    CACHE,
    KUBE_VERSIONS,
    MANIFESTS,
    load_yaml_docs,
    olm_csv,
    renderer,
    tool,
)

CATALOG = MANIFESTS / "catalog"
FBC = CATALOG / "configs"
OTHER_REGISTRY = "registry.example.com/team"


def _validate_catalog(directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tool("olm-validate")), "catalog", str(directory)], capture_output=True, text=True, timeout=120
    )


def _fbc(directory: Path = FBC) -> dict[str, list[dict[str, Any]]]:
    by_schema: dict[str, list[dict[str, Any]]] = {}
    for f in sorted(directory.rglob("*.yaml")):
        for doc in load_yaml_docs(f):
            by_schema.setdefault(doc["schema"], []).append(doc)
    return by_schema


def _olm_crds() -> list[dict[str, Any]]:
    """OLM's CatalogSource and Subscription CRDs, of the operator-framework API version the tools pin."""
    tools = build_tools()
    why = tools.unbuilt("olm-crds", CACHE)
    if why:
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    share = tools.share("olm-crds", CACHE)
    return [
        doc
        for kind in tools.OLM_CRD_KINDS
        for doc in load_yaml_docs(share / f"operators.coreos.com_{kind}.yaml")
    ]


def test_catalog_passes_opm_validate() -> None:
    proc = _validate_catalog(FBC)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 packages, 1 channels, 1 bundles" in proc.stdout, proc.stdout


def test_the_validator_rejects_a_bundle_in_no_channel(tmp_path: Path) -> None:
    broken = tmp_path / "configs"
    shutil.copytree(FBC, broken)
    path = broken / "podsizer" / "catalog.yaml"
    path.write_text(path.read_text().replace("- name: podsizer.v0.1.0", "- name: podsizer.v9.9.9"))
    proc = _validate_catalog(broken)
    assert proc.returncode != 0, proc.stdout
    assert 'bundle \\"podsizer.v0.1.0\\" not found in any channel entries' in proc.stdout + proc.stderr


def test_catalog_serves_the_bundle_as_the_bundle_describes_itself() -> None:
    csv = olm_csv()
    (annotations,) = load_yaml_docs(MANIFESTS / "olm" / "metadata" / "annotations.yaml")
    package = annotations["annotations"]["operators.operatorframework.io.bundle.package.v1"]
    channel = annotations["annotations"]["operators.operatorframework.io.bundle.channel.default.v1"]
    fbc = _fbc()
    assert [p["name"] for p in fbc["olm.package"]] == [package]
    assert fbc["olm.package"][0]["defaultChannel"] == channel
    assert [(c["name"], [e["name"] for e in c["entries"]]) for c in fbc["olm.channel"]] == [
        (channel, [csv["metadata"]["name"]])
    ]
    (bundle,) = fbc["olm.bundle"]
    assert bundle["name"] == csv["metadata"]["name"]
    props = bundle["properties"]
    assert [p["value"] for p in props if p["type"] == "olm.package"] == [
        {"packageName": package, "version": csv["spec"]["version"]}
    ]
    crds = [
        load_yaml_docs(f)[0] for f in sorted((MANIFESTS / "olm" / "manifests").glob("podsizer.io_*.yaml"))
    ]
    served = {
        (c["spec"]["group"], c["spec"]["names"]["kind"], v["name"])
        for c in crds
        for v in c["spec"]["versions"]
    }
    gvks = {
        (p["value"]["group"], p["value"]["kind"], p["value"]["version"])
        for p in props
        if p["type"] == "olm.gvk"
    }
    assert gvks == served
    (metadata,) = [p["value"] for p in props if p["type"] == "olm.csv.metadata"]
    assert metadata["installModes"] == csv["spec"]["installModes"]
    assert bundle["image"] == "quay.io/podsizer/podsizer-bundle:v" + csv["spec"]["version"]
    images = {i["image"] for i in bundle["relatedImages"]}
    assert images == {bundle["image"], csv["metadata"]["annotations"]["containerImage"]}


def test_subscription_asks_for_what_the_catalog_source_serves() -> None:
    (source,) = load_yaml_docs(CATALOG / "catalogsource.yaml")
    (sub,) = load_yaml_docs(CATALOG / "subscription.yaml")
    fbc = _fbc()
    assert sub["spec"]["source"] == source["metadata"]["name"]
    assert sub["spec"]["sourceNamespace"] == source["metadata"]["namespace"]
    assert sub["spec"]["name"] == fbc["olm.package"][0]["name"]
    (channel,) = [c for c in fbc["olm.channel"] if c["name"] == sub["spec"]["channel"]]
    assert sub["spec"]["startingCSV"] in [e["name"] for e in channel["entries"]]
    # the catalog image is built from manifests/catalog (catalog.Dockerfile copies configs/ in)
    dockerfile = (CATALOG / "catalog.Dockerfile").read_text()
    assert "COPY configs /configs" in dockerfile
    assert "LABEL operators.operatorframework.io.index.configs.v1=/configs" in dockerfile
    assert source["spec"]["image"].startswith("quay.io/podsizer/podsizer-catalog:")


@pytest.fixture(scope="module")
def olm_schemas(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("olm-schemas")
    write_standalone_schemas(out, [], crds=_olm_crds())
    return out


def test_catalog_source_and_subscription_validate_with_kubeconform(olm_schemas: Path) -> None:
    for manifest in (CATALOG / "catalogsource.yaml", CATALOG / "subscription.yaml"):
        report = kubeconform(KUBE_VERSIONS[-1], olm_schemas, manifest)
        assert report["summary"] == {"valid": 1, "invalid": 0, "errors": 0, "skipped": 0}, (manifest, report)


def test_kubeconform_rejects_bad_catalog_objects(olm_schemas: Path, tmp_path: Path) -> None:
    (source,) = load_yaml_docs(CATALOG / "catalogsource.yaml")
    (sub,) = load_yaml_docs(CATALOG / "subscription.yaml")
    source["spec"]["grpcPodConfig"]["securityContextConfig"] = "privileged"  # enum: legacy, restricted
    sub["spec"]["sourceNamspace"] = sub["spec"].pop("sourceNamespace")  # misspelled: strict refuses it
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump_all([source, sub]))
    report = kubeconform(KUBE_VERSIONS[-1], olm_schemas, tmp_path / "bad.yaml")
    assert report["summary"]["invalid"] == 2, report


def test_render_for_another_registry_points_every_manifest_there(tmp_path: Path) -> None:
    out = tmp_path / "manifests"
    prometheus = "http://prometheus.monitoring.svc:9090"
    code = renderer().main(
        [
            *("--helm", str(tool("helm")), "--registry", OTHER_REGISTRY, "--out", str(out)),
            *("--set", f"recommender.prometheus.url={prometheus}"),
        ]
    )
    assert code == 0
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {p.relative_to(out) for p in files} == {
        p.relative_to(MANIFESTS)
        for folder in ("install", "olm", "catalog")
        for p in (MANIFESTS / folder).rglob("*")
        if p.is_file()
    }
    assert [str(p) for p in files if "quay.io/podsizer" in p.read_text()] == []
    plain = load_yaml_docs(out / "install" / "podsizer.yaml")
    csv = load_yaml_docs(out / "olm" / "manifests" / "podsizer.clusterserviceversion.yaml")[0]
    specs = [d["spec"]["template"]["spec"] for d in plain if d["kind"] == "Deployment"] + [
        d["spec"]["template"]["spec"] for d in csv["spec"]["install"]["spec"]["deployments"]
    ]
    images = {c["image"] for spec in specs for c in spec["containers"]}
    assert images == {f"{OTHER_REGISTRY}/podsizer:{csv['spec']['version']}"}
    (recommender,) = [
        d for d in plain if d["kind"] == "Deployment" and d["metadata"]["name"] == "podsizer-recommender"
    ]
    env = {e["name"]: e.get("value") for e in recommender["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["PODSIZER_PROMETHEUS_URL"] == prometheus
    (bundle,) = _fbc(out / "catalog" / "configs")["olm.bundle"]
    assert bundle["image"] == f"{OTHER_REGISTRY}/podsizer-bundle:v{csv['spec']['version']}"
    (source,) = load_yaml_docs(out / "catalog" / "catalogsource.yaml")
    assert source["spec"]["image"] == f"{OTHER_REGISTRY}/podsizer-catalog:v{csv['spec']['version']}"
    assert _validate_catalog(out / "catalog" / "configs").returncode == 0
    bundle_check = subprocess.run(
        [str(tool("olm-validate")), "bundle", str(out / "olm")], capture_output=True, text=True, timeout=300
    )
    assert bundle_check.returncode == 0, bundle_check.stdout + bundle_check.stderr


def test_a_registry_on_a_port_is_a_registry_not_a_tag() -> None:
    target = renderer().Target("localhost:5000")
    assert target.values[0] == "image.repository=localhost:5000/podsizer"
    assert target.bundle_image("0.1.0") == "localhost:5000/podsizer-bundle:v0.1.0"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--registry", "registry.example.com/team/"], "trailing '/'"),
        (["--registry", "registry.example.com/podsizer:1.0"], "tag"),
        (["--set", "recommender.prometheus.url"], "KEY=VALUE"),
        (["--check", "--registry", OTHER_REGISTRY], "--check"),
    ],
)
def test_render_refuses_bad_arguments_naming_them(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        renderer().main(["--helm", str(tool("helm")), *args])
    assert exit_.value.code == 2
    assert says in capsys.readouterr().err
