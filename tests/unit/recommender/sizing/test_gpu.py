"""GPU count from activity and MIG profile selection per GPU model."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from podsizer.api.identity import WorkloadRef
from podsizer.sizing_policy import SizingPolicy
from recommender.model import GpuUsage, Quantiles, TimeSeries
from recommender.sizing.gpu import (
    MIG_PROFILES,
    gpu_equivalents,
    gpu_model,
    mig_family,
    recommended_count,
    size_gpu,
    suggest_mig,
)

T0 = datetime(2026, 11, 1, tzinfo=UTC)
GIB_IN_MIB = 1024.0


def gpu(
    model: str,
    p95: float,
    fb_used_gib: float,
    count: int = 1,
    fb_total_gib: float = 80.0,
    mig_profile: str | None = None,
) -> GpuUsage:
    q = Quantiles(p95 * 0.6, p95 * 0.9, p95, min(1.0, p95 * 1.05), min(1.0, p95 * 1.1), p95 * 0.6)
    return GpuUsage(
        workload=WorkloadRef("ml", "Deployment", "infer"),
        container="model",
        pod="infer-0",
        node="gpu-1",
        model_name=model,
        gpu_count=count,
        activity_signal="SM_ACTIVE",
        activity=q,
        fb_used_max_mib=fb_used_gib * GIB_IN_MIB,
        fb_total_mib=fb_total_gib * GIB_IN_MIB * count,
        activity_series=TimeSeries(T0, 30.0, np.full(10, p95)),
        mig_profile=mig_profile,
    )


@pytest.mark.parametrize(
    ("model", "fb_total", "family"),
    [
        ("NVIDIA A100 80GB PCIe", None, "A100-80GB"),
        ("NVIDIA A100-SXM4-80GB", None, "A100-80GB"),
        ("NVIDIA A100-SXM4-40GB", None, "A100-40GB"),
        ("NVIDIA A100-PCIE-40GB", None, "A100-40GB"),
        ("NVIDIA A100-SXM4", 81920.0, "A100-80GB"),
        ("NVIDIA A100-SXM4", 40960.0, "A100-40GB"),
        ("NVIDIA H100 80GB HBM3", None, "H100-80GB"),
        ("NVIDIA H100 PCIe", None, "H100-80GB"),
        ("NVIDIA H100 NVL", None, "H100-NVL"),
        ("NVIDIA H200", None, "H200"),
        ("NVIDIA L40S", None, None),
        ("NVIDIA L4", None, None),
        ("NVIDIA A10G", None, None),
        ("Tesla T4", None, None),
    ],
)
def test_mig_family_from_dcgm_model_names(model: str, fb_total: float | None, family: str | None) -> None:
    assert mig_family(model, fb_total) == family


def test_profile_tables_match_the_documented_sets() -> None:
    names = {k: [p.name for p in v] for k, v in MIG_PROFILES.items()}
    assert names["A100-80GB"] == ["1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]
    assert names["A100-40GB"] == ["1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"]
    assert names["H100-80GB"] == ["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]
    assert all(p.fraction == pytest.approx(p.compute / 7) for v in MIG_PROFILES.values() for p in v)


@pytest.mark.parametrize(
    ("model", "p95", "fb_gib", "fb_total", "expected"),
    [
        ("NVIDIA A100 80GB PCIe", 0.05, 8.0, 80.0, "nvidia.com/mig-1g.10gb"),  # small and quiet
        ("NVIDIA A100 80GB PCIe", 0.05, 12.0, 80.0, "nvidia.com/mig-2g.20gb"),  # memory needs 2g
        ("NVIDIA A100 80GB PCIe", 0.30, 8.0, 80.0, "nvidia.com/mig-3g.40gb"),  # 0.30/(3/7)=0.70 <= 0.8
        ("NVIDIA A100 80GB PCIe", 0.70, 8.0, 80.0, None),  # needs the whole GPU
        ("NVIDIA A100 80GB PCIe", 0.05, 60.0, 80.0, None),  # memory needs the whole GPU
        ("NVIDIA A100-SXM4-40GB", 0.05, 4.0, 40.0, "nvidia.com/mig-1g.5gb"),
        ("NVIDIA H100 80GB HBM3", 0.10, 15.0, 80.0, "nvidia.com/mig-1g.20gb"),  # 1g compute, 20gb memory
        ("NVIDIA H100 80GB HBM3", 0.05, 8.0, 80.0, "nvidia.com/mig-1g.10gb"),
        ("NVIDIA L40S", 0.01, 1.0, 48.0, None),  # no MIG on L40S
    ],
)
def test_smallest_fitting_mig_profile(
    model: str, p95: float, fb_gib: float, fb_total: float, expected: str | None
) -> None:
    mig = suggest_mig(gpu(model, p95, fb_gib, fb_total_gib=fb_total), SizingPolicy())
    assert (mig.resource if mig else None) == expected


def test_no_mig_for_multi_gpu_pods_or_pods_already_on_a_slice() -> None:
    assert suggest_mig(gpu("NVIDIA A100 80GB PCIe", 0.05, 8.0, count=2), SizingPolicy()) is None
    assert suggest_mig(gpu("NVIDIA A100 80GB PCIe", 0.05, 8.0, mig_profile="3g.40gb"), SizingPolicy()) is None


@pytest.mark.parametrize(
    ("count", "mean_p95", "fb_gib", "expected"),
    [
        (8, 0.20, 10.0, 2),  # 8 x 0.2 = 1.6 GPUs of work / 0.8 -> 2
        (8, 0.05, 10.0, 1),  # 0.4 / 0.8 -> 1
        (4, 0.90, 10.0, 4),  # busy: keep all
        (2, 0.00, 1.0, 1),  # never 0 for a pod that holds GPUs
        (4, 0.10, 150.0, 3),  # 0.5 by activity, but 150 GiB x 1.15 needs 3 x 80 GiB
        (1, 1.00, 10.0, 1),  # never above the allocation
    ],
)
def test_recommended_gpu_count(count: int, mean_p95: float, fb_gib: float, expected: int) -> None:
    assert (
        recommended_count(gpu("NVIDIA H100 80GB HBM3", mean_p95, fb_gib, count=count), SizingPolicy())
        == expected
    )


def test_summed_activity_is_not_multiplied_again() -> None:
    g = gpu("NVIDIA H100 80GB HBM3", 0.2, 10.0, count=8)
    summed = GpuUsage(**{**g.__dict__, "activity": Quantiles(1.0, 1.4, 1.6, 1.7, 1.8, 1.0)})
    assert recommended_count(summed, SizingPolicy()) == 2


def test_size_gpu_reason_mentions_count_and_mig() -> None:
    s = size_gpu(gpu("NVIDIA A100 80GB PCIe", 0.05, 8.0), SizingPolicy())
    assert s.count == 1
    assert s.mig is not None and s.mig.name == "1g.10gb"
    assert "SM_ACTIVE p95 0.05" in s.reason and "nvidia.com/mig-1g.10gb" in s.reason


@pytest.mark.parametrize(
    ("strategy", "resource"),
    [(None, "nvidia.com/mig-3g.40gb"), ("mixed", "nvidia.com/mig-3g.40gb"), ("single", "nvidia.com/gpu")],
)
def test_a_container_on_a_mig_slice_keeps_its_slice(strategy: str | None, resource: str) -> None:
    s = size_gpu(gpu("NVIDIA A100 80GB PCIe", 0.05, 8.0, mig_profile="3g.40gb"), SizingPolicy(), strategy)
    assert s.resource == resource and s.count == 1 and s.mig is None


def test_gpu_equivalents_count_mig_slices_as_sevenths() -> None:
    assert gpu_equivalents(gpu("NVIDIA A100 80GB PCIe", 0.1, 8.0, count=2)) == 2.0
    assert gpu_equivalents(gpu("NVIDIA A100 80GB PCIe", 0.1, 8.0, mig_profile="3g.40gb")) == pytest.approx(
        3 / 7
    )


def test_a_container_on_several_mig_profiles_is_left_alone() -> None:
    g = gpu("NVIDIA A100 80GB PCIe", 0.05, 8.0, count=2, mig_profile="1g.10gb+3g.40gb")
    s = size_gpu(g, SizingPolicy())
    assert s.resource is None and "left unchanged" in s.reason
    assert gpu_equivalents(g) == pytest.approx(4 / 7)


@pytest.mark.parametrize(
    ("fb_gib", "expected"),
    [(13.5, "nvidia.com/mig-1g.18gb"), (14.5, "nvidia.com/mig-1g.35gb")],  # 1g.18gb exposes ~16 GiB
)
def test_h200_slices_count_only_their_usable_memory(fb_gib: float, expected: str) -> None:
    mig = suggest_mig(gpu("NVIDIA H200", 0.05, fb_gib, fb_total_gib=141.0), SizingPolicy())
    assert mig is not None and mig.resource == expected


def test_policy_can_make_the_usable_memory_stricter() -> None:
    g = gpu("NVIDIA A100 80GB PCIe", 0.05, 8.0)
    mig = suggest_mig(g, SizingPolicy(mig_usable_memory_fraction=0.85))
    assert mig is not None and mig.name == "2g.20gb"  # 8 GiB x 1.15 > 10 GiB x 0.85


@pytest.mark.parametrize(
    ("label", "dcgm", "one"),
    [
        ("NVIDIA-H100-80GB-HBM3", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"),
        ("NVIDIA-A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB", "NVIDIA A100 SXM4 40GB"),
        ("NVIDIA-L40S", " NVIDIA  L40S ", "NVIDIA L40S"),
    ],
)
def test_the_node_label_and_the_dcgm_model_name_have_one_spelling(label: str, dcgm: str, one: str) -> None:
    assert gpu_model(label) == gpu_model(dcgm) == one
    assert mig_family(one) == mig_family(dcgm)


def test_the_framebuffer_peak_of_several_gpus_says_it_is_their_sum() -> None:
    four = size_gpu(gpu("NVIDIA A100-SXM4-40GB", 0.43, 64.5, count=4, fb_total_gib=40.0), SizingPolicy())
    assert "fb peak 66048MiB summed over 4 GPUs ->" in four.reason
    one = size_gpu(gpu("NVIDIA L40S", 0.88, 21.9, fb_total_gib=45.0), SizingPolicy())
    assert "fb peak 22426MiB ->" in one.reason and "summed" not in one.reason
