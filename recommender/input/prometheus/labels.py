"""Maps kube-state-metrics' sanitized label names (label_karpenter_sh_capacity_type) to Kubernetes ones."""

from __future__ import annotations

import re
from collections.abc import Mapping

from podsizer.keys import READ_KEYS
from podsizer.resources import GPU, mig_resource

# Labels podsizer reads; KSM exposes them as label_<snake_case_sanitized>. Others keep their KSM spelling.
# Every podsizer.io/ key the parts read comes from podsizer.keys, so none is decoded under its KSM spelling.
KNOWN_LABELS = (
    *READ_KEYS,
    "openshift.io/deployer-pod-for.name",
    "openshift.io/deployer-pod.type",
    "openshift.io/deployment-config.name",
    "openshift.io/deployment.name",
    "deploymentconfig",
    "deployment",
    "app",
    "app.kubernetes.io/name",
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
    "karpenter.sh/capacity-type",
    "eks.amazonaws.com/capacityType",
    "cloud.google.com/gke-spot",
    "cloud.google.com/gke-preemptible",
    "kubernetes.azure.com/scalesetpriority",
    "lifecycle",
    "nvidia.com/gpu.product",
    "nvidia.com/gpu.count",
    "nvidia.com/gpu.memory",
    "nvidia.com/mig.strategy",
    "nvidia.com/gpu.replicas",
    "nvidia.com/gpu.sharing-strategy",
    "topology.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "kubernetes.io/hostname",
)

_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_INVALID = re.compile(r"[^a-zA-Z0-9_]")


def ksm_label_name(name: str, prefix: str = "label_") -> str:
    """The Prometheus label kube-state-metrics makes from a Kubernetes label or annotation name."""
    return prefix + _INVALID.sub("_", _CAMEL.sub(r"\1_\2", name).lower())


_BY_KSM = {ksm_label_name(n): n for n in KNOWN_LABELS}
_BY_KSM_ANNOTATION = {ksm_label_name(n, "annotation_"): n for n in KNOWN_LABELS}


def decode_labels(series: Mapping[str, str], prefix: str = "label_") -> dict[str, str]:
    """Kubernetes labels (or annotations, prefix='annotation_') carried by one KSM *_labels series."""
    table = _BY_KSM if prefix == "label_" else _BY_KSM_ANNOTATION
    out: dict[str, str] = {}
    for key, value in series.items():
        if key.startswith(prefix) and value != "":
            out[table.get(key, key[len(prefix) :])] = value
    return out


_MIG = re.compile(r"^mig_(\d+)g_(\d+)gb$")


def resource_name(ksm_resource: str) -> str:
    """KSM's resource label (cpu, memory, nvidia_com_gpu, nvidia_com_mig_1g_10gb) as a Kubernetes name."""
    if not ksm_resource.startswith("nvidia_com_"):
        return ksm_resource
    rest = ksm_resource[len("nvidia_com_") :]
    if rest == "gpu":
        return GPU
    if rest == "gpu_shared":
        return "nvidia.com/gpu.shared"
    mig = _MIG.match(rest)
    if mig:
        return mig_resource(f"{mig.group(1)}g.{mig.group(2)}gb")
    return "nvidia.com/" + rest


_SPOT_VALUES = {
    "karpenter.sh/capacity-type": "spot",
    "eks.amazonaws.com/capacityType": "spot",
    "cloud.google.com/gke-spot": "true",
    "cloud.google.com/gke-preemptible": "true",
    "kubernetes.azure.com/scalesetpriority": "spot",
    "lifecycle": "ec2spot",
}


def is_spot(labels: Mapping[str, str]) -> bool:
    """True when any of the cloud providers' spot/preemptible node labels says so (FACTS.md)."""
    return any(labels.get(k, "").lower() == v for k, v in _SPOT_VALUES.items())
