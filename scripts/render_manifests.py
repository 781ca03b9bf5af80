"""Renders manifests/install, the OLM bundle and its catalog from the Helm chart, so none can drift from it.

    scripts/render-manifests.sh                          # rewrite manifests/ (what the repository ships)
    scripts/render-manifests.sh --check                  # fail if manifests/ differs from a fresh render
    scripts/render-manifests.sh --registry registry.example.com/team --out my-manifests \\
        --set recommender.prometheus.url=http://prometheus.monitoring.svc:9090
                                                         # the same files for your registry and settings
"""

from __future__ import annotations

import argparse
import base64
import copy
import json
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "charts" / "podsizer"
CRD = ROOT / "manifests" / "crds" / "recommendation.yaml"
CHECKPOINT_CRD = ROOT / "manifests" / "crds" / "usagecheckpoint.yaml"
ICON = ROOT / "manifests" / "icon.svg"
ICON_TYPE = "image/svg+xml"
MANIFESTS = ROOT / "manifests"
INSTALL_DIR = MANIFESTS / "install"
OLM_DIR = MANIFESTS / "olm"
CATALOG_DIR = MANIFESTS / "catalog"

KUBE_VERSION = "1.31.0"
NAMESPACE = "podsizer"
RELEASE = "podsizer"
PACKAGE = "podsizer"
CHANNEL = "alpha"
# Fixed so that a re-render is byte-identical; bump with the version.
CREATED_AT = "2026-12-02T00:00:00Z"
OPENSHIFT_VERSIONS = "v4.14"
HELM_ONLY_LABELS = frozenset({"helm.sh/chart", "app.kubernetes.io/managed-by"})
OLM_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"
# Where the shipped manifests pull from; --registry names another (the three images keep their names).
DEFAULT_REGISTRY = "quay.io/podsizer"
# The opm image the catalog image serves from: the operator-registry version tools/go.mod pins.
OPM_IMAGE = "quay.io/operator-framework/opm:v1.63.0"
CATALOG_SOURCE = "podsizer-catalog"
# The CSV spec fields `opm render` copies into a bundle's olm.csv.metadata property.
CSV_METADATA_KEYS = (
    "description",
    "displayName",
    "installModes",
    "keywords",
    "links",
    "maintainers",
    "maturity",
    "minKubeVersion",
    "provider",
)

# The plain install uses cert-manager: it is the one certificate source that needs no per-cluster secret
# material in the committed YAML (generate would embed a private key; service-ca is OpenShift-only).
# The updater is in both (the chart leaves it off): it changes nothing until a workload sets
# podsizer.io/update-mode, and a static install has no value to turn it on with.
INSTALL_VALUES: tuple[str, ...] = (
    "fullnameOverride=podsizer",
    "certs.mode=cert-manager",
    "updater.enabled=true",
)
# For the bundle OLM makes the certificate; the chart's Secret volume is dropped from the CSV's deployment.
# The bundle targets OpenShift: Thanos querier with the service account token, platform namespaces excluded.
OLM_VALUES_FILES: tuple[str, ...] = ("values-openshift.yaml",)
OLM_VALUES: tuple[str, ...] = (
    "fullnameOverride=podsizer",
    "certs.mode=secret",
    "certs.caBundle=Cg==",
    "certs.secretName=podsizer-webhook-tls",
    "updater.enabled=true",
)

BUNDLE_ANNOTATIONS: dict[str, str] = {
    "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
    "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
    "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
    "operators.operatorframework.io.bundle.package.v1": PACKAGE,
    "operators.operatorframework.io.bundle.channels.v1": CHANNEL,
    "operators.operatorframework.io.bundle.channel.default.v1": CHANNEL,
    "com.redhat.openshift.versions": OPENSHIFT_VERSIONS,
}

DESCRIPTION = """\
podsizer right-sizes Kubernetes and OpenShift workloads, GPUs included.

* **Recommender**: reads container and NVIDIA DCGM metrics from Prometheus and writes one `Recommendation`
  per workload (Deployment, StatefulSet, DaemonSet, Argo Rollout, DeploymentConfig, CronJob, Job) with
  per-container requests and limits, GPU count or MIG slice, idle-GPU waste and its hourly cost, and a
  demand forecast.
* **Admission webhook**: when a pod is created, applies its workload's recommendation. The default mode is
  `dry-run`: the pod only gets a `podsizer.io/dry-run` annotation showing what would change. Set
  `podsizer.io/mode: auto` on a workload or namespace to apply. `podsizer.io/exclude: "true"` opts out.
  The webhook never blocks pod creation (failurePolicy Ignore) and never touches DeploymentConfig
  deployer or hook pods.
* **Updater**: brings running pods to their recommendation, by in-place resize or by eviction through the
  Eviction API (PodDisruptionBudgets respected), for workloads that set `podsizer.io/update-mode:
  recreate` or `in-place-or-recreate`; the default, `initial`, leaves running pods alone.

### Configuration
The recommender reads the cluster's Thanos querier with its service account token; let it:

    oc adm policy add-cluster-role-to-user cluster-monitoring-view \\
      -z podsizer-recommender -n openshift-operators

Other settings (`PODSIZER_*` variables) go in the Subscription, e.g.
`spec.config.env: [{name: PODSIZER_PROMETHEUS_URL, value: http://prometheus.example.svc:9090}]`.
For GPU activity, enable `DCGM_FI_PROF_SM_ACTIVE` in dcgm-exporter's counters.
"""


@dataclass(frozen=True)
class Target:
    """Where the rendered manifests point: the registry of the three images and extra chart values."""

    registry: str = DEFAULT_REGISTRY
    sets: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (
            not self.registry
            or self.registry != self.registry.strip("/")
            or any(c in self.registry for c in "@ ")
            # a tag; "host:port" alone is a registry
            or ("/" in self.registry and ":" in self.registry.rsplit("/", 1)[1])
        ):
            raise ValueError(
                f"registry {self.registry!r}: give a registry and path without a trailing '/' or a tag,"
                " e.g. registry.example.com/team"
            )

    @property
    def values(self) -> tuple[str, ...]:
        """--set values every render takes: the podsizer image in this registry, then the extra values."""
        return (f"image.repository={self.registry}/podsizer", *self.sets)

    def bundle_image(self, version: str) -> str:
        return f"{self.registry}/podsizer-bundle:v{version}"

    def catalog_image(self, version: str) -> str:
        return f"{self.registry}/podsizer-catalog:v{version}"


def helm_template(
    helm: str, values: Sequence[str], *, skip_tests: bool, values_files: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Runs `helm template` on the chart and returns its objects in order."""
    cmd = [helm, "template", RELEASE, str(CHART), "--namespace", NAMESPACE, "--kube-version", KUBE_VERSION]
    for f in values_files:
        cmd += ["-f", str(CHART / f)]
    for v in values:
        cmd += ["--set", v]
    if skip_tests:
        cmd.append("--skip-tests")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


class _BlockDumper(yaml.SafeDumper):
    """Writes multi-line strings (descriptions, scripts, alm-examples) as readable literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str)


def dump_all(docs: Iterable[Mapping[str, Any]]) -> str:
    return "---\n".join(yaml.dump(dict(d), Dumper=_BlockDumper, sort_keys=False, width=120) for d in docs)


def _by_kind(docs: Sequence[Mapping[str, Any]], kind: str) -> list[Mapping[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def _one(docs: Sequence[Mapping[str, Any]], kind: str, name: str) -> Mapping[str, Any]:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    if len(found) != 1:
        raise SystemExit(f"render: expected one {kind} {name!r} in the chart output, found {len(found)}")
    return found[0]


def install_files(helm: str, target: Target = Target()) -> dict[Path, str]:
    """manifests/install: namespace, the chart rendered with fixed values, and a kustomization."""
    docs = helm_template(helm, (*INSTALL_VALUES, *target.values), skip_tests=True)
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": NAMESPACE,
            "labels": {
                "pod-security.kubernetes.io/enforce": "restricted",
                "podsizer.io/exclude": "true",
            },
        },
    }
    header = (
        "# Generated by scripts/render-manifests.sh from charts/podsizer (certs.mode=cert-manager);"
        " do not edit.\n"
    )
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["namespace.yaml", "podsizer.yaml"],
    }
    return {
        INSTALL_DIR / "namespace.yaml": header + dump_all([namespace]),
        INSTALL_DIR / "podsizer.yaml": header + dump_all(docs),
        INSTALL_DIR / "kustomization.yaml": header + dump_all([kustomization]),
    }


def _olm_deployment(dep: Mapping[str, Any]) -> dict[str, Any]:
    """A chart Deployment as a CSV install-strategy entry; OLM's certificate mount replaces the webhook's."""
    spec: dict[str, Any] = copy.deepcopy(dict(dep["spec"]))
    pod = spec["template"]["spec"]
    if any(v.get("name") == "tls" for v in pod.get("volumes", [])):
        pod["volumes"] = [v for v in pod["volumes"] if v["name"] != "tls"]
        for c in pod["containers"]:
            c["volumeMounts"] = [m for m in c.get("volumeMounts", []) if m["name"] != "tls"]
            for e in c.get("env", []):
                if e["name"] == "PODSIZER_TLS_CERT_FILE":
                    e["value"] = f"{OLM_CERT_DIR}/tls.crt"
                elif e["name"] == "PODSIZER_TLS_KEY_FILE":
                    e["value"] = f"{OLM_CERT_DIR}/tls.key"
    labels = {k: v for k, v in dep["metadata"]["labels"].items() if k not in HELM_ONLY_LABELS}
    return {"name": dep["metadata"]["name"], "label": labels, "spec": spec}


def _rules_for(docs: Sequence[Mapping[str, Any]], kind: str, binding_kind: str) -> list[dict[str, Any]]:
    """CSV permissions from the chart's (Cluster)Roles, keyed by the service account their binding names."""
    out: list[dict[str, Any]] = []
    for binding in _by_kind(docs, binding_kind):
        role = _one(docs, kind, binding["roleRef"]["name"])
        for subject in binding["subjects"]:
            out.append({"serviceAccountName": subject["name"], "rules": role["rules"]})
    return out


def _webhook_definition(mwc: Mapping[str, Any], deployment: str) -> dict[str, Any]:
    hook = mwc["webhooks"][0]
    return {
        "generateName": hook["name"],
        "type": "MutatingAdmissionWebhook",
        "deploymentName": deployment,
        "containerPort": 8443,
        "targetPort": 8443,
        "webhookPath": hook["clientConfig"]["service"]["path"],
        "admissionReviewVersions": hook["admissionReviewVersions"],
        "failurePolicy": hook["failurePolicy"],
        "matchPolicy": hook["matchPolicy"],
        "reinvocationPolicy": hook["reinvocationPolicy"],
        "sideEffects": hook["sideEffects"],
        "timeoutSeconds": hook["timeoutSeconds"],
        "rules": hook["rules"],
        "objectSelector": hook["objectSelector"],
    }


def csv_document(helm: str, target: Target = Target()) -> dict[str, Any]:
    """The ClusterServiceVersion, its install strategy taken from the chart's own objects."""
    docs = helm_template(helm, (*OLM_VALUES, *target.values), skip_tests=True, values_files=OLM_VALUES_FILES)
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    version = chart["appVersion"]
    crd = yaml.safe_load(CRD.read_text())
    checkpoint = yaml.safe_load(CHECKPOINT_CRD.read_text())
    internal = [checkpoint["metadata"]["name"]]
    deployments = [_olm_deployment(d) for d in _by_kind(docs, "Deployment")]
    image = deployments[0]["spec"]["template"]["spec"]["containers"][0]["image"]
    webhook = _one(docs, "Deployment", f"{RELEASE}-webhook")["metadata"]["name"]
    mwc = _one(docs, "MutatingWebhookConfiguration", f"{RELEASE}-webhook")
    example = {
        "apiVersion": "podsizer.io/v1alpha1",
        "kind": "Recommendation",
        "metadata": {"name": "deployment-web", "namespace": "default"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "resourcePolicy": {
                "containers": [{"containerName": "*", "minAllowed": {"cpu": "50m", "memory": "64Mi"}}]
            },
        },
    }
    # written by the recommender only; an example because OLM's validators ask one of every owned CRD
    checkpoint_example = {
        "apiVersion": "podsizer.io/v1alpha1",
        "kind": checkpoint["spec"]["names"]["kind"],
        "metadata": {"name": "deployment-web", "namespace": "default"},
        "spec": {"targetRef": {"kind": "Deployment", "name": "web"}, "cluster": "", "data": "", "bytes": 0},
    }
    return {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {
            "name": f"{PACKAGE}.v{version}",
            "namespace": "placeholder",
            "annotations": {
                "alm-examples": json.dumps([example, checkpoint_example], indent=2),
                # the recommender's own state: OperatorHub and the console do not offer it to users
                "operators.operatorframework.io/internal-objects": json.dumps(internal),
                "capabilities": "Basic Install",
                "categories": "Monitoring,Developer Tools",
                "containerImage": image,
                "createdAt": CREATED_AT,
                "description": "Right-sizes pod requests and limits, GPUs too, from Prometheus data.",
                "repository": chart["sources"][0],
                "support": "podsizer maintainers",
                "operators.openshift.io/valid-subscription": json.dumps(["No subscription required"]),
                "operators.operatorframework.io/builder": "podsizer scripts/render-manifests.sh",
                "features.operators.openshift.io/disconnected": "false",
                "features.operators.openshift.io/fips-compliant": "false",
                "features.operators.openshift.io/proxy-aware": "false",
                "features.operators.openshift.io/tls-profiles": "false",
                "features.operators.openshift.io/token-auth-aws": "false",
                "features.operators.openshift.io/token-auth-azure": "false",
                "features.operators.openshift.io/token-auth-gcp": "false",
                "features.operators.openshift.io/cnf": "false",
                "features.operators.openshift.io/cni": "false",
                "features.operators.openshift.io/csi": "false",
            },
            "labels": {
                "operatorframework.io/arch.amd64": "supported",
                "operatorframework.io/arch.arm64": "supported",
                "operatorframework.io/os.linux": "supported",
            },
        },
        "spec": {
            "displayName": "podsizer",
            "description": DESCRIPTION,
            "version": version,
            "maturity": CHANNEL,
            "minKubeVersion": chart["kubeVersion"].lstrip(">=").removesuffix("-0"),
            "provider": {"name": "podsizer", "url": chart["home"]},
            "maintainers": [{"name": m["name"], "email": m["email"]} for m in chart["maintainers"]],
            "links": [{"name": "Source", "url": chart["sources"][0]}],
            "keywords": chart["keywords"],
            "icon": [{"base64data": base64.b64encode(ICON.read_bytes()).decode(), "mediatype": ICON_TYPE}],
            "installModes": [
                {"type": "OwnNamespace", "supported": False},
                {"type": "SingleNamespace", "supported": False},
                {"type": "MultiNamespace", "supported": False},
                # The webhook mutates pods cluster-wide; OLM narrows its namespaceSelector otherwise.
                {"type": "AllNamespaces", "supported": True},
            ],
            "customresourcedefinitions": {
                "owned": [
                    {
                        "name": crd["metadata"]["name"],
                        "version": crd["spec"]["versions"][0]["name"],
                        "kind": crd["spec"]["names"]["kind"],
                        "displayName": "Recommendation",
                        "description": "Recommended container requests and limits for one workload.",
                        "specDescriptors": [
                            {
                                "path": "targetRef",
                                "displayName": "Target workload",
                                "description": "The workload this recommendation sizes.",
                            },
                        ],
                        "statusDescriptors": [
                            {
                                "path": "sizingMode",
                                "displayName": "Sizing mode",
                                "description": "static or autopilot (a horizontal autoscaler owns replicas).",
                            },
                            {
                                "path": "generatedAt",
                                "displayName": "Generated at",
                                "description": "When the recommender last computed it.",
                            },
                        ],
                        "resources": [
                            {"kind": "Deployment", "version": "v1"},
                            {"kind": "StatefulSet", "version": "v1"},
                            {"kind": "DaemonSet", "version": "v1"},
                            {"kind": "Rollout", "version": "v1alpha1"},
                            {"kind": "DeploymentConfig", "version": "v1"},
                            {"kind": "CronJob", "version": "v1"},
                            {"kind": "Job", "version": "v1"},
                        ],
                    },
                    {
                        "name": checkpoint["metadata"]["name"],
                        "version": checkpoint["spec"]["versions"][0]["name"],
                        "kind": checkpoint["spec"]["names"]["kind"],
                        "displayName": "Usage checkpoint",
                        "description": "The recommender's saved usage state of one workload (internal).",
                    },
                ]
            },
            "install": {
                "strategy": "deployment",
                "spec": {
                    "deployments": deployments,
                    "clusterPermissions": _rules_for(docs, "ClusterRole", "ClusterRoleBinding"),
                    "permissions": _rules_for(docs, "Role", "RoleBinding"),
                },
            },
            "webhookdefinitions": [_webhook_definition(mwc, webhook)],
            "relatedImages": [{"name": PACKAGE, "image": image}],
        },
    }


def olm_files(helm: str, target: Target = Target()) -> dict[Path, str]:
    """The bundle: CSV, CRD copy, metadata/annotations.yaml and bundle.Dockerfile with matching labels."""
    header = "# Generated by scripts/render-manifests.sh from charts/podsizer; do not edit.\n"
    labels = "".join(f"LABEL {k}={v}\n" for k, v in BUNDLE_ANNOTATIONS.items())
    dockerfile = (
        "# OLM bundle image (build context: manifests/olm). Generated by scripts/render-manifests.sh.\n"
        "FROM scratch\n\n"
        f"{labels}"
        "\n"
        "COPY manifests /manifests/\n"
        "COPY metadata /metadata/\n"
    )
    csv = csv_document(helm, target)
    return {
        OLM_DIR / "manifests" / f"{PACKAGE}.clusterserviceversion.yaml": header + dump_all([csv]),
        OLM_DIR / "manifests" / "podsizer.io_recommendations.yaml": CRD.read_text(),
        OLM_DIR / "manifests" / "podsizer.io_usagecheckpoints.yaml": CHECKPOINT_CRD.read_text(),
        OLM_DIR / "metadata" / "annotations.yaml": header + dump_all([{"annotations": BUNDLE_ANNOTATIONS}]),
        OLM_DIR / "bundle.Dockerfile": dockerfile,
    }


def _owned_gvks(csv: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for crd in csv["spec"]["customresourcedefinitions"]["owned"]:
        group = crd["name"].split(".", 1)[1]
        out.append(
            {"type": "olm.gvk", "value": {"group": group, "kind": crd["kind"], "version": crd["version"]}}
        )
    return out


def catalog_documents(csv: Mapping[str, Any], target: Target = Target()) -> list[dict[str, Any]]:
    """The file-based catalog as `opm init` and `opm render` write it: package, channel, bundle."""
    spec, meta = csv["spec"], csv["metadata"]
    version = spec["version"]
    csv_metadata = {key: spec[key] for key in CSV_METADATA_KEYS if key in spec}
    csv_metadata["annotations"] = dict(meta["annotations"])
    csv_metadata["crdDescriptions"] = spec["customresourcedefinitions"]
    csv_metadata["labels"] = dict(meta["labels"])
    return [
        {
            "schema": "olm.package",
            "name": PACKAGE,
            "defaultChannel": CHANNEL,
            "description": meta["annotations"]["description"],
            "icon": spec["icon"][0],
        },
        {"schema": "olm.channel", "package": PACKAGE, "name": CHANNEL, "entries": [{"name": meta["name"]}]},
        {
            "schema": "olm.bundle",
            "name": meta["name"],
            "package": PACKAGE,
            "image": target.bundle_image(version),
            "properties": [
                {"type": "olm.package", "value": {"packageName": PACKAGE, "version": version}},
                *_owned_gvks(csv),
                {"type": "olm.csv.metadata", "value": csv_metadata},
            ],
            "relatedImages": [
                {"name": "", "image": target.bundle_image(version)},
                *spec["relatedImages"],
            ],
        },
    ]


def catalog_files(helm: str, target: Target = Target()) -> dict[Path, str]:
    """manifests/catalog: the file-based catalog, its image Dockerfile, a CatalogSource, a Subscription."""
    header = "# Generated by scripts/render-manifests.sh from charts/podsizer; do not edit.\n"
    csv = csv_document(helm, target)
    version = csv["spec"]["version"]
    dockerfile = (
        "# OLM catalog image (build context: manifests/catalog). Generated by scripts/render-manifests.sh;\n"
        "# what `opm generate dockerfile` writes, with the opm version the repository's validator links.\n"
        f"FROM {OPM_IMAGE}\n"
        'ENTRYPOINT ["/bin/opm"]\n'
        'CMD ["serve", "/configs", "--cache-dir=/tmp/cache"]\n'
        "COPY configs /configs\n"
        'RUN ["/bin/opm", "serve", "/configs", "--cache-dir=/tmp/cache", "--cache-only"]\n'
        "LABEL operators.operatorframework.io.index.configs.v1=/configs\n"
    )
    catalog_source = {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "CatalogSource",
        "metadata": {"name": CATALOG_SOURCE, "namespace": "openshift-marketplace"},
        "spec": {
            "sourceType": "grpc",
            "image": target.catalog_image(version),
            "displayName": "podsizer",
            "publisher": "podsizer",
            "grpcPodConfig": {"securityContextConfig": "restricted"},
        },
    }
    # openshift-operators has its global OperatorGroup already (AllNamespaces, the bundle's one install mode).
    subscription = {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": PACKAGE, "namespace": "openshift-operators"},
        "spec": {
            "name": PACKAGE,
            "channel": CHANNEL,
            "source": CATALOG_SOURCE,
            "sourceNamespace": "openshift-marketplace",
            "startingCSV": csv["metadata"]["name"],
            "installPlanApproval": "Manual",
        },
    }
    return {
        CATALOG_DIR / "configs" / PACKAGE / "catalog.yaml": header + dump_all(catalog_documents(csv, target)),
        CATALOG_DIR / "catalog.Dockerfile": dockerfile,
        CATALOG_DIR / "catalogsource.yaml": header + dump_all([catalog_source]),
        CATALOG_DIR / "subscription.yaml": header + dump_all([subscription]),
    }


def render_all(helm: str, target: Target = Target()) -> dict[Path, str]:
    """Every generated file under manifests/, for the target's registry and values."""
    return {**install_files(helm, target), **olm_files(helm, target), **catalog_files(helm, target)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--helm",
        default=str(
            Path(os.environ.get("PODSIZER_CACHE") or Path.home() / ".cache" / "podsizer") / "bin" / "helm"
        ),
        help="helm binary",
    )
    parser.add_argument("--check", action="store_true", help="fail if the files differ from a fresh render")
    parser.add_argument(
        "--registry",
        default=DEFAULT_REGISTRY,
        help="registry and path of the podsizer, podsizer-bundle and podsizer-catalog images"
        f" (default {DEFAULT_REGISTRY})",
    )
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a chart value for the plain manifests and the bundle (repeatable), e.g."
        " recommender.prometheus.url=http://prometheus.monitoring.svc:9090",
    )
    parser.add_argument("--out", type=Path, help="write the manifests/ tree here instead (needs no --check)")
    args = parser.parse_args(argv)
    if args.check and (args.out or args.sets or args.registry != DEFAULT_REGISTRY):
        parser.error(
            "--check compares manifests/ with the shipped render; it takes no --out, --registry or --set"
        )
    if not all("=" in s for s in args.sets):
        parser.error(f"--set takes KEY=VALUE, not {next(s for s in args.sets if '=' not in s)!r}")
    try:
        target = Target(args.registry, tuple(args.sets))
    except ValueError as e:
        parser.error(str(e))
    if not Path(args.helm).exists():
        print(f"render: helm not found at {args.helm}; run scripts/build_tools.py tools", file=sys.stderr)
        return 2
    try:
        rendered = render_all(args.helm, target)
    except subprocess.CalledProcessError as e:
        print(f"render: helm template failed: {e.stderr.strip()}", file=sys.stderr)
        return 1
    stale = []
    for path, text in rendered.items():
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path.relative_to(ROOT)))
            continue
        if args.out is not None:
            path = args.out / path.relative_to(MANIFESTS)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"render: wrote {path}")
    if stale:
        print("render: out of date (run scripts/render-manifests.sh): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
