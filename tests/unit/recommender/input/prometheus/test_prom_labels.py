"""KSM label names map back to Kubernetes names; dcgm-exporter label variants normalise to one identity."""

from __future__ import annotations

import pytest

from podsizer import keys
from recommender.input.dcgm import normalize_labels
from recommender.input.prometheus.labels import decode_labels, is_spot, ksm_label_name, resource_name


@pytest.mark.parametrize(
    ("k8s", "ksm"),
    [
        ("openshift.io/deployer-pod-for.name", "label_openshift_io_deployer_pod_for_name"),
        ("eks.amazonaws.com/capacityType", "label_eks_amazonaws_com_capacity_type"),
        ("node.kubernetes.io/instance-type", "label_node_kubernetes_io_instance_type"),
        ("nvidia.com/gpu.product", "label_nvidia_com_gpu_product"),
    ],
)
def test_ksm_label_names_follow_kube_state_metrics(k8s: str, ksm: str) -> None:
    assert ksm_label_name(k8s) == ksm
    assert decode_labels({ksm: "v", "namespace": "x"}) == {k8s: "v"}


@pytest.mark.parametrize("key", keys.READ_KEYS)
@pytest.mark.parametrize("prefix", ["label_", "annotation_"])
def test_every_podsizer_key_the_parts_read_comes_back_from_its_kube_state_metrics_spelling(
    key: str, prefix: str
) -> None:
    """podsizer.io/gpu and podsizer.io/allow-large-change once came back as podsizer_io_gpu
    and podsizer_io_allow_large_change, so the console planned without the opt-ins the webhook honours."""
    spelled = ksm_label_name(key, prefix)
    assert spelled.startswith(prefix + "podsizer_io_")
    assert decode_labels({spelled: "resize", "namespace": "ml"}, prefix) == {key: "resize"}


def test_the_keys_module_defines_every_podsizer_key_the_code_names() -> None:
    """No podsizer.io/ key is spelled out anywhere else in the product code (one rule, one place)."""
    import pathlib
    import re

    root = pathlib.Path(keys.__file__).resolve().parents[1]
    found: dict[str, set[str]] = {}
    for part in ("podsizer", "recommender", "webhook", "updater", "console", "certs"):
        for path in (root / part).rglob("*.py"):
            if path.name == "keys.py":
                continue
            for key in re.findall(r'"(podsizer\.io/[a-z][a-z-]*)"', path.read_text(encoding="utf-8")):
                found.setdefault(key, set()).add(str(path.relative_to(root)))
    assert found == {}, f"podsizer.io/ keys spelled outside podsizer/keys.py: {found}"


def test_unknown_labels_keep_their_ksm_spelling_and_empty_values_are_dropped() -> None:
    assert decode_labels({"label_team_name": "a", "label_app": ""}) == {"team_name": "a"}


def test_annotations_decode_with_their_prefix() -> None:
    got = decode_labels({"annotation_openshift_io_deployer_pod_type": "hook-pre"}, "annotation_")
    assert got == {"openshift.io/deployer-pod.type": "hook-pre"}


@pytest.mark.parametrize(
    ("ksm", "k8s"),
    [
        ("cpu", "cpu"),
        ("nvidia_com_gpu", "nvidia.com/gpu"),
        ("nvidia_com_mig_1g_10gb", "nvidia.com/mig-1g.10gb"),
        ("nvidia_com_gpu_shared", "nvidia.com/gpu.shared"),
    ],
)
def test_resource_names(ksm: str, k8s: str) -> None:
    assert resource_name(ksm) == k8s


@pytest.mark.parametrize(
    ("labels", "spot"),
    [
        ({"karpenter.sh/capacity-type": "spot"}, True),
        ({"eks.amazonaws.com/capacityType": "SPOT"}, True),
        ({"cloud.google.com/gke-spot": "true"}, True),
        ({"cloud.google.com/gke-preemptible": "true"}, True),
        ({"kubernetes.azure.com/scalesetpriority": "spot"}, True),
        ({"lifecycle": "EC2Spot"}, True),
        ({"eks.amazonaws.com/capacityType": "ON_DEMAND"}, False),
        ({}, False),
    ],
)
def test_spot_labels(labels: dict[str, str], spot: bool) -> None:
    assert is_spot(labels) is spot


BASE = {"gpu": "0", "modelName": "NVIDIA A100 80GB PCIe"}
IDENT = ("namespace", "pod", "container", "hostname", "uuid")


def ident(labels: dict[str, str], names: tuple[str, ...] = IDENT) -> tuple[str, ...]:
    got = normalize_labels(labels)
    return tuple(got.get(n, "") for n in names)


def test_dcgm_current_labels() -> None:
    labels = BASE | {"UUID": "GPU-1", "Hostname": "n1", "namespace": "ml", "pod": "p", "container": "c"}
    assert ident(labels) == ("ml", "p", "c", "n1", "GPU-1")
    assert ident(labels, ("model", "mig_profile")) == ("NVIDIA A100 80GB PCIe", "")


def test_dcgm_exported_labels_win_over_the_scrape_target() -> None:
    labels = BASE | {
        "UUID": "GPU-1",
        "hostname": "n1",
        "namespace": "gpu-operator",
        "pod": "nvidia-dcgm-exporter-abcde",
        "exported_namespace": "ml",
        "exported_pod": "p",
        "exported_container": "c",
    }
    assert ident(labels)[:4] == ("ml", "p", "c", "n1")


def test_dcgm_old_namespace_and_mig_labels() -> None:
    labels = BASE | {
        "uuid": "GPU-2",
        "GPU_I_PROFILE": "3g.40gb",
        "GPU_I_ID": "1",
        "pod_namespace": "ml",
        "pod_name": "infer-0",
        "container_name": "server",
    }
    got = ident(labels, ("namespace", "pod", "container", "uuid", "mig_instance", "mig_profile"))
    assert got == ("ml", "infer-0", "server", "GPU-2", "1", "3g.40gb")


def test_idle_gpu_labelled_only_with_the_exporter_pod_is_unattached() -> None:
    labels = BASE | {"UUID": "GPU-3", "namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-x"}
    assert ident(labels)[:2] == ("", "")


def test_idle_gpu_scraped_without_honor_labels_is_unattached() -> None:
    labels = BASE | {
        "UUID": "GPU-4",
        "namespace": "gpu-operator",
        "pod": "nvidia-dcgm-exporter-x",
        "exported_namespace": "",
        "exported_pod": "",
        "exported_container": "",
    }
    assert ident(labels)[:3] == ("", "", "")
