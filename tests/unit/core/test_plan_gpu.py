"""The pod plan's GPU step: only with the GPU opt-in; whole counts, requests == limits, MIG swap if on."""

from __future__ import annotations

import pytest

from podsizer.api import ContainerPolicy, GpuRecommendation
from podsizer.modes import Resolved
from podsizer.plan import plan_pod
from podsizer.podspec import Change
from podsizer.policy import PlanPolicy
from tests.unit.webhook.builders import container, crec, recommendation, replicaset_pod

MIG = "nvidia.com/mig-2g.20gb"
RESIZE = Resolved("auto", gpu_resize=True)


def _gpu_changes(plan_changes: tuple[Change, ...]) -> dict[tuple[str, str], tuple[str | None, str | None]]:
    return {
        (c.field, c.resource): (c.old, c.new) for c in plan_changes if c.resource.startswith("nvidia.com/")
    }


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
    return _gpu_changes(plan_pod(pod, rec, PlanPolicy(allow_mig_swap=swap), RESIZE).changes)


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
    changes = plan_pod(pod, rec, PlanPolicy(), RESIZE).changes
    assert {(c.field, c.resource, c.old, c.new) for c in changes} == {("limits", "nvidia.com/gpu", None, "1")}


def _train(held: str = "2", annotations: dict[str, str] | None = None) -> dict[str, object]:
    gpus = {"nvidia.com/gpu": held}
    return replicaset_pod(
        containers=[container("train", {"cpu": "2", **gpus}, gpus)], annotations=annotations
    )


TRAIN = recommendation(
    containers=[crec("train", {"cpu": "1", "nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"})], gpu=_gpu_rec()
)


@pytest.mark.parametrize("swap", [False, True])
def test_keep_is_the_default_and_changes_no_gpu_in_auto_mode(swap: bool) -> None:
    plan = plan_pod(_train(), TRAIN, PlanPolicy(allow_mig_swap=swap, default_mode="auto"))
    assert (plan.mode, plan.gpu_resize) == ("auto", False)
    assert _gpu_changes(plan.changes) == {}
    assert [(c.resource, c.new) for c in plan.changes] == [("cpu", "1000m")]  # cpu still changes


def test_resize_by_annotation_changes_the_count() -> None:
    pod = _train(annotations={"podsizer.io/gpu": "Resize", "podsizer.io/mode": "auto"})
    plan = plan_pod(pod, TRAIN, PlanPolicy())
    assert plan.gpu_resize is True
    assert _gpu_changes(plan.changes) == {
        ("requests", "nvidia.com/gpu"): ("2", "1"),
        ("limits", "nvidia.com/gpu"): ("2", "1"),
    }


def test_resize_by_default_and_keep_on_the_pod_wins() -> None:
    pod = _train(annotations={"podsizer.io/gpu": "keep"})
    plan = plan_pod(pod, TRAIN, PlanPolicy(gpu_resize=True, allow_mig_swap=True))
    assert plan.gpu_resize is False and _gpu_changes(plan.changes) == {}


@pytest.mark.parametrize(
    ("resize", "swap", "mig"), [(False, True, False), (True, False, False), (True, True, True)]
)
def test_mig_swap_needs_both_resize_and_allow_mig_swap(resize: bool, swap: bool, mig: bool) -> None:
    plan = plan_pod(_train("1"), TRAIN, PlanPolicy(allow_mig_swap=swap), Resolved("auto", gpu_resize=resize))
    assert ((("requests", MIG)) in _gpu_changes(plan.changes)) is mig


def test_gpu_counts_respect_the_containers_bounds() -> None:
    rec = recommendation(
        containers=[crec("train", {"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"})],
        policy=(ContainerPolicy("train", {"nvidia.com/gpu": 2}),),
    )
    plan = plan_pod(_train("3"), rec, PlanPolicy(), RESIZE)
    assert _gpu_changes(plan.changes) == {
        ("requests", "nvidia.com/gpu"): ("3", "2"),
        ("limits", "nvidia.com/gpu"): ("3", "2"),
    }
