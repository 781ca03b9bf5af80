"""GpuCalculator: whole GPU counts with requests == limits, and the MIG swap only when allowed."""

from __future__ import annotations

import pytest

from podsizer.api import GpuRecommendation
from tests.unit.webhook.builders import container, crec, recommendation, replicaset_pod
from webhook.calculators import CalcOptions, GpuCalculator

MIG = "nvidia.com/mig-2g.20gb"


def _gpu_rec(suggested: str | None = MIG) -> GpuRecommendation:
    return GpuRecommendation("NVIDIA A100 80GB PCIe", 2, 0.21, 9 * 2**30, suggested_resource=suggested)


def _run(
    held: dict[str, str] | None,
    recommended: dict[str, str],
    swap: bool,
    suggested: str | None = MIG,
    low: bool = False,
) -> dict[tuple[str, str], tuple[str | None, str | None]]:
    pod = replicaset_pod(containers=[container("train", held, held)])
    rec = recommendation(
        containers=[crec("train", {"cpu": "1", **recommended}, recommended, low_confidence=low)],
        gpu=_gpu_rec(suggested),
    )
    changes = GpuCalculator().changes(pod, rec, CalcOptions(allow_mig_swap=swap))
    return {(c.field, c.resource): (c.old, c.new) for c in changes}


@pytest.mark.parametrize(
    ("held", "recommended", "swap", "suggested", "expected"),
    [
        pytest.param(
            {"nvidia.com/gpu": "2"},
            {"nvidia.com/gpu": "1"},
            False,
            MIG,
            {("requests", "nvidia.com/gpu"): ("2", "1"), ("limits", "nvidia.com/gpu"): ("2", "1")},
            id="count lowered, requests == limits",
        ),
        pytest.param({"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"}, False, MIG, {}, id="already right"),
        pytest.param(
            {"nvidia.com/gpu": "1"},
            {"nvidia.com/gpu": "1"},
            True,
            MIG,
            {
                ("requests", "nvidia.com/gpu"): ("1", None),
                ("limits", "nvidia.com/gpu"): ("1", None),
                ("requests", MIG): (None, "1"),
                ("limits", MIG): (None, "1"),
            },
            id="swap to the suggested MIG slice",
        ),
        pytest.param(
            {"nvidia.com/gpu": "1"},
            {"nvidia.com/gpu": "1"},
            True,
            None,
            {},
            id="swap allowed, none suggested",
        ),
        pytest.param(
            {"nvidia.com/gpu": "1"},
            {"nvidia.com/gpu": "1"},
            True,
            "nvidia.com/gpu.shared",
            {},
            id="only MIG resources are swapped in",
        ),
        pytest.param(
            None, {"nvidia.com/gpu": "1"}, False, MIG, {}, id="never adds GPUs to a container without"
        ),
        pytest.param(
            {"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "0"}, False, MIG, {}, id="never drops to zero"
        ),
        pytest.param(
            {"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "1.5"}, False, MIG, {}, id="fractions ignored"
        ),
    ],
)
def test_gpu_table(
    held: dict[str, str] | None,
    recommended: dict[str, str],
    swap: bool,
    suggested: str | None,
    expected: dict[tuple[str, str], tuple[str | None, str | None]],
) -> None:
    assert _run(held, recommended, swap, suggested) == expected


def test_low_confidence_gpu_recommendation_is_not_applied() -> None:
    assert _run({"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "1"}, False, low=True) == {}


def test_request_only_gpu_gets_its_limit_set_equal() -> None:
    pod = replicaset_pod(containers=[container("train", {"nvidia.com/gpu": "1"}, {})])
    rec = recommendation(containers=[crec("train", {"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"})])
    changes = GpuCalculator().changes(pod, rec, CalcOptions())
    assert {(c.field, c.resource, c.old, c.new) for c in changes} == {("limits", "nvidia.com/gpu", None, "1")}
