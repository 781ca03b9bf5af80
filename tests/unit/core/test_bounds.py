"""podsizer.bounds: VPA semantics (the container's own entry as a whole, else "*"), min > max an error."""

from __future__ import annotations

import pytest

from podsizer.api import ContainerPolicy
from podsizer.bounds import BoundsError, clip, clip_count, policy_for
from podsizer.modes import Resolved
from podsizer.plan import plan_pod
from podsizer.policy import PlanPolicy
from tests.unit.webhook.builders import container, crec, recommendation, replicaset_pod

STAR = ContainerPolicy("*", {"memory": 64.0}, {"cpu": 1.0})
MAIN = ContainerPolicy("main", {"cpu": 0.5})


def test_the_containers_own_entry_wins_whole_and_star_serves_the_rest() -> None:
    assert policy_for("main", (STAR, MAIN)) is MAIN
    assert policy_for("side", (STAR, MAIN)) is STAR
    assert policy_for("side", (MAIN,)) is None


def test_entries_are_never_merged() -> None:
    main = policy_for("main", (STAR, MAIN))
    assert clip("cpu", 2.0, main).value == 2.0  # "*" maxAllowed does not reach main
    assert clip("memory", 1.0, main).value == 1.0  # nor does "*" minAllowed
    assert clip("cpu", 2.0, policy_for("side", (STAR, MAIN))).value == 1.0


def test_clip_says_what_a_bound_changed() -> None:
    assert clip("cpu", 0.1, MAIN).note == "cpu raised to minAllowed 500m (wanted 100m)"
    assert clip("cpu", 3.0, STAR).note == "cpu clipped to maxAllowed 1000m (wanted 3000m)"
    assert clip("cpu", 0.7, MAIN).note is None


def test_min_above_max_is_an_error_naming_the_container() -> None:
    broken = ContainerPolicy("*", {"cpu": 2.0}, {"cpu": 1.0})
    with pytest.raises(BoundsError, match=r"container 'worker' \(its \"\*\" entry\): minAllowed cpu 2000m"):
        clip("cpu", 1.5, broken, "worker")
    with pytest.raises(BoundsError, match="container 'train'"):
        clip_count(
            "nvidia.com/gpu", 1, ContainerPolicy("train", {"nvidia.com/gpu": 3}, {"nvidia.com/gpu": 2})
        )


def test_the_plan_skips_a_pod_whose_bounds_are_invalid_and_says_why() -> None:
    rec = recommendation(
        containers=[crec("main", {"cpu": "500m"})],
        policy=(ContainerPolicy("main", {"cpu": 2.0}, {"cpu": 1.0}),),
    )
    pod = replicaset_pod(containers=[container("main", {"cpu": "1"})])
    plan = plan_pod(pod, rec, PlanPolicy(), Resolved("auto"))
    assert plan.skip == "invalid-bounds" and plan.changes == ()
    assert "container 'main'" in plan.detail


def test_whole_counts_round_inward() -> None:
    assert clip_count("nvidia.com/gpu", 4, ContainerPolicy("*", {}, {"nvidia.com/gpu": 2.5})) == (
        2,
        "nvidia.com/gpu clipped to maxAllowed 2 (wanted 4)",
    )
    assert clip_count("nvidia.com/gpu", 1, ContainerPolicy("*", {"nvidia.com/gpu": 1.5})) == (
        2,
        "nvidia.com/gpu raised to minAllowed 2 (wanted 1)",
    )
