"""The OLM bundle passes operator-sdk's validators (olm-validate: the operator-framework validation libraries
that `operator-sdk bundle validate --select-optional suite=operatorframework` calls) and has what OperatorHub
and Red Hat certification need."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path

import yaml

from podsizer.settings import RecommenderSettings, UpdaterSettings, WebhookSettings, load
from tests.integration.install.support import (
    MANIFESTS,
    ROOT,
    SCENARIOS,
    Render,
    load_yaml_docs,
    olm_csv,
    tool,
)

BUNDLE = MANIFESTS / "olm"
BUNDLE_KEYS = {
    "operators.operatorframework.io.bundle.mediatype.v1",
    "operators.operatorframework.io.bundle.manifests.v1",
    "operators.operatorframework.io.bundle.metadata.v1",
    "operators.operatorframework.io.bundle.package.v1",
    "operators.operatorframework.io.bundle.channels.v1",
    "operators.operatorframework.io.bundle.channel.default.v1",
    "com.redhat.openshift.versions",
}
# RBAC rules carry no API version, so the validator flags any rule on horizontalpodautoscalers (and
# poddisruptionbudgets) as using autoscaling/v2beta1 (policy/v1beta1), removed in 1.25; podsizer reads
# autoscaling/v2 and policy/v1.
KNOWN_WARNINGS = (re.compile(r"deprecated and removed in v1\.25.*horizontalpodautoscalers"),)


def _annotations() -> dict[str, str]:
    (doc,) = load_yaml_docs(BUNDLE / "metadata" / "annotations.yaml")
    annotations: dict[str, str] = doc["annotations"]
    return annotations


def test_bundle_passes_the_operatorframework_suite() -> None:
    validator = tool("olm-validate")
    proc = subprocess.run(
        [str(validator), "bundle", "./manifests/olm"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "All validation tests have completed successfully" in output, output
    for line in output.splitlines():
        if "level=error" in line:
            raise AssertionError(line)
        if "level=warning" in line and not any(p.search(line) for p in KNOWN_WARNINGS):
            raise AssertionError(f"unexpected validator warning: {line}")


def test_the_validator_rejects_a_bundle_off_the_standard(tmp_path: Path) -> None:
    validator = tool("olm-validate")
    broken = tmp_path / "olm"
    shutil.copytree(BUNDLE, broken)
    csv_path = broken / "manifests" / "podsizer.clusterserviceversion.yaml"
    csv = yaml.safe_load(csv_path.read_text())
    csv["metadata"]["annotations"]["categories"] = "Gadgets"
    del csv["metadata"]["annotations"]["alm-examples"]
    csv_path.write_text(yaml.safe_dump(csv))
    proc = subprocess.run(
        [str(validator), "bundle", str(broken)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert "not in the set of standard categories" in output and "example annotations not found" in output


def _validate(bundle: Path) -> tuple[int, str]:
    proc = subprocess.run(
        [str(tool("olm-validate")), "bundle", str(bundle)], capture_output=True, text=True, timeout=300
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_the_validator_checks_the_bundle_format(tmp_path: Path) -> None:
    """operator-registry's format check runs: a bundle whose metadata/ holds no annotations is refused."""
    broken = tmp_path / "olm"
    shutil.copytree(BUNDLE, broken)
    (broken / "metadata" / "annotations.yaml").write_text("not: annotations\n")
    code, output = _validate(broken)
    assert code != 0, output
    assert "Could not find annotations file" in output, output


def test_the_validator_refuses_a_kind_registry_v1_cannot_install(tmp_path: Path) -> None:
    """operator-sdk's content check runs: registry+v1 bundles cannot carry a Deployment of their own."""
    broken = tmp_path / "olm"
    shutil.copytree(BUNDLE, broken)
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "extra"}, "spec": {}}
    (broken / "manifests" / "extra-deployment.yaml").write_text(yaml.safe_dump(deployment))
    code, output = _validate(broken)
    assert code != 0, output
    assert "unsupported media type registry+v1 for bundle object" in output, output


def test_bundle_metadata_has_the_standard_keys() -> None:
    annotations = _annotations()
    assert set(annotations) == BUNDLE_KEYS
    assert annotations["operators.operatorframework.io.bundle.mediatype.v1"] == "registry+v1"
    assert annotations["operators.operatorframework.io.bundle.manifests.v1"] == "manifests/"
    assert annotations["operators.operatorframework.io.bundle.metadata.v1"] == "metadata/"
    default = annotations["operators.operatorframework.io.bundle.channel.default.v1"]
    assert default in annotations["operators.operatorframework.io.bundle.channels.v1"].split(",")
    assert re.fullmatch(r"v4\.\d+(-v4\.\d+)?", annotations["com.redhat.openshift.versions"])


def test_bundle_dockerfile_labels_match_the_annotations() -> None:
    text = (BUNDLE / "bundle.Dockerfile").read_text()
    labels = dict(re.findall(r"^LABEL (\S+)=(\S+)$", text, flags=re.M))
    assert labels == _annotations()
    assert re.search(r"^FROM scratch$", text, flags=re.M)
    assert "COPY manifests /manifests/" in text and "COPY metadata /metadata/" in text


def test_csv_owns_the_bundled_crds_and_installs_cluster_wide() -> None:
    csv = olm_csv()
    spec = csv["spec"]
    bundled = {
        d["metadata"]["name"]: d
        for f in (BUNDLE / "manifests").glob("*.yaml")
        for d in load_yaml_docs(f)
        if d["kind"] == "CustomResourceDefinition"
    }
    owned = spec["customresourcedefinitions"]["owned"]
    assert {o["name"] for o in owned} == set(bundled)
    for o in owned:
        crd = bundled[o["name"]]
        assert o["kind"] == crd["spec"]["names"]["kind"]
        assert o["version"] in [v["name"] for v in crd["spec"]["versions"]]
    modes = {m["type"]: m["supported"] for m in spec["installModes"]}
    assert modes["AllNamespaces"] is True
    assert set(modes) == {"OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces"}
    assert spec["maturity"] == "alpha"
    assert spec["description"].strip() and spec["displayName"]


def test_csv_carries_certification_annotations_and_images() -> None:
    csv = olm_csv()
    meta = csv["metadata"]["annotations"]
    for key in (
        "categories",
        "containerImage",
        "createdAt",
        "support",
        "capabilities",
        "description",
        "operators.openshift.io/valid-subscription",
        "alm-examples",
    ):
        assert meta.get(key), key
    assert isinstance(json.loads(meta["operators.openshift.io/valid-subscription"]), list)
    examples = json.loads(meta["alm-examples"])
    assert [e["kind"] for e in examples] == ["Recommendation", "UsageCheckpoint"]
    # the recommender's checkpoints are its own state: hidden from users in OperatorHub and the console
    assert json.loads(meta["operators.operatorframework.io/internal-objects"]) == [
        "usagecheckpoints.podsizer.io"
    ]
    related = {i["image"] for i in csv["spec"]["relatedImages"]}
    images = {
        c["image"]
        for d in csv["spec"]["install"]["spec"]["deployments"]
        for c in d["spec"]["template"]["spec"]["containers"]
    }
    assert meta["containerImage"] in related and images <= related
    (icon,) = csv["spec"]["icon"]
    assert icon["mediatype"] == "image/svg+xml"
    assert base64.b64decode(icon["base64data"]).lstrip().startswith(b"<svg")


def test_csv_webhook_deployment_uses_the_olm_certificate_mount() -> None:
    deployments = {d["name"]: d for d in olm_csv()["spec"]["install"]["spec"]["deployments"]}
    pod = deployments["podsizer-webhook"]["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["PODSIZER_TLS_CERT_FILE"] == "/tmp/k8s-webhook-server/serving-certs/tls.crt"
    assert env["PODSIZER_TLS_KEY_FILE"] == "/tmp/k8s-webhook-server/serving-certs/tls.key"
    assert not [v for v in pod["volumes"] if "secret" in v], "OLM injects the certificate volume itself"


def test_csv_deployments_match_the_chart(render: Render) -> None:
    with_updater = next(
        s for s in SCENARIOS if s.updater
    )  # the bundle has the updater; the chart's default not
    chart = {d["metadata"]["name"]: d for d in render(with_updater) if d["kind"] == "Deployment"}
    deployments = olm_csv()["spec"]["install"]["spec"]["deployments"]
    assert deployments
    for dep in deployments:
        ours = chart[dep["name"]]["spec"]
        assert dep["spec"]["replicas"] == ours["replicas"]
        assert dep["spec"]["selector"] == ours["selector"]
        theirs_c, ours_c = (
            dep["spec"]["template"]["spec"]["containers"][0],
            ours["template"]["spec"]["containers"][0],
        )
        assert theirs_c["args"] == ours_c["args"] and theirs_c["securityContext"] == ours_c["securityContext"]


def test_csv_deployments_set_only_settings_their_role_accepts() -> None:
    roles = {("run",): RecommenderSettings, ("webhook",): WebhookSettings, ("updater",): UpdaterSettings}
    deployments = olm_csv()["spec"]["install"]["spec"]["deployments"]
    stores = {}
    for dep in deployments:
        container = dep["spec"]["template"]["spec"]["containers"][0]
        env = {e["name"]: str(e.get("value", "x")) for e in container["env"]}
        stores[dep["name"]] = load(roles[tuple(container["args"])], env=env).store  # SettingsError if not
    assert stores == {"podsizer-recommender": "crd", "podsizer-webhook": "crd", "podsizer-updater": "crd"}
