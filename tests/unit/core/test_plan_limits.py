"""The pod plan for cpu/memory: requests from the recommendation, bounds, and every limit policy."""

from __future__ import annotations

from typing import Any

import pytest

from podsizer.api import ContainerPolicy
from podsizer.modes import Resolved
from podsizer.plan import plan_pod
from podsizer.policy import LimitPolicy, PlanPolicy
from tests.unit.webhook.builders import container, crec, recommendation, replicaset_pod

MI = 2**20
AUTO = Resolved("auto")


def _changes(
    pod_containers: list[dict[str, Any]],
    rec_containers: list[Any],
    policy: LimitPolicy = "keep-ratio",
    bounds: tuple[ContainerPolicy, ...] = (),
    init: list[dict[str, Any]] | None = None,
    min_confidence: float = 0.0,
) -> dict[tuple[str, str, str], tuple[str | None, str | None]]:
    pod = replicaset_pod(containers=pod_containers, init=init or [])
    rec = recommendation(containers=rec_containers, policy=bounds)
    # limits and bounds, not the plausibility guard's change factor, are under test here
    plan = plan_pod(pod, rec, PlanPolicy(policy, min_confidence=min_confidence, max_change_factor=None), AUTO)
    return {(c.container, c.field, c.resource): (c.old, c.new) for c in plan.changes}


# (pod requests, pod limits, recommended requests, policy) -> expected changes
CASES = [
    pytest.param(
        {"cpu": "500m", "memory": "1Gi"},
        {"cpu": "1", "memory": "2Gi"},
        {"cpu": "250m", "memory": "512Mi"},
        "keep-ratio",
        {
            ("main", "requests", "cpu"): ("500m", "250m"),
            ("main", "limits", "cpu"): ("1", "500m"),
            ("main", "requests", "memory"): ("1Gi", "512Mi"),
            ("main", "limits", "memory"): ("2Gi", "1024Mi"),
        },
        id="keep-ratio halves limits with requests",
    ),
    pytest.param(
        {"cpu": "500m", "memory": "1Gi"},
        {"cpu": "1", "memory": "2Gi"},
        {"cpu": "250m", "memory": "512Mi"},
        "cap",
        {("main", "requests", "cpu"): ("500m", "250m"), ("main", "requests", "memory"): ("1Gi", "512Mi")},
        id="cap keeps limits that stay above the request",
    ),
    pytest.param(
        {"cpu": "100m", "memory": "128Mi"},
        {"cpu": "200m", "memory": "256Mi"},
        {"cpu": "400m", "memory": "512Mi"},
        "cap",
        {
            ("main", "requests", "cpu"): ("100m", "400m"),
            ("main", "limits", "cpu"): ("200m", "400m"),
            ("main", "requests", "memory"): ("128Mi", "512Mi"),
            ("main", "limits", "memory"): ("256Mi", "512Mi"),
        },
        id="cap raises a limit the new request would exceed",
    ),
    pytest.param(
        {"cpu": "100m", "memory": "128Mi"},
        {"cpu": "200m", "memory": "256Mi"},
        {"cpu": "400m", "memory": "200Mi"},
        "leave",
        {("main", "requests", "cpu"): ("100m", "200m"), ("main", "requests", "memory"): ("128Mi", "200Mi")},
        id="leave never touches limits and stops requests at them",
    ),
    pytest.param(
        None,
        None,
        {"cpu": "250m", "memory": "512Mi"},
        "keep-ratio",
        {("main", "requests", "cpu"): (None, "250m"), ("main", "requests", "memory"): (None, "512Mi")},
        id="no resources at all: requests added, no limits invented",
    ),
    pytest.param(
        None,
        {"memory": "1Gi"},
        {"memory": "512Mi"},
        "keep-ratio",
        {("main", "requests", "memory"): (None, "512Mi"), ("main", "limits", "memory"): ("1Gi", "512Mi")},
        id="limit only: request defaulted to limit, ratio 1",
    ),
    pytest.param(
        {"cpu": "250m", "memory": "512Mi"},
        None,
        {"cpu": "0.25", "memory": "536870912"},
        "keep-ratio",
        {},
        id="numerically equal values are not changed",
    ),
    pytest.param(
        {"cpu": "1"},
        {"cpu": "3"},
        {"cpu": "333m"},
        "keep-ratio",
        {("main", "requests", "cpu"): ("1", "333m"), ("main", "limits", "cpu"): ("3", "999m")},
        id="keep-ratio 3x",
    ),
    pytest.param(
        {"cpu": "100m"},
        {"cpu": "100m"},
        {"cpu": "0.0001"},
        "keep-ratio",
        {("main", "requests", "cpu"): ("100m", "1m"), ("main", "limits", "cpu"): ("100m", "1m")},
        id="tiny recommendation rounds up to 1m",
    ),
    pytest.param(
        {"cpu": "garbage"},
        None,
        {"cpu": "1", "memory": "1Gi"},
        "keep-ratio",
        {("main", "requests", "memory"): (None, "1024Mi")},
        id="an unreadable current value is left alone",
    ),
]


@pytest.mark.parametrize(("requests", "limits", "recommended", "policy", "expected"), CASES)
def test_limit_policies(
    requests: dict[str, str] | None,
    limits: dict[str, str] | None,
    recommended: dict[str, str],
    policy: LimitPolicy,
    expected: dict[tuple[str, str, str], tuple[str, str]],
) -> None:
    assert _changes([container("main", requests, limits)], [crec("main", recommended)], policy) == expected


def test_bounds_clamp_requests_and_the_container_entry_replaces_the_wildcard() -> None:
    bounds = (
        ContainerPolicy("*", {"cpu": 0.3}, {"memory": 256 * MI}),
        ContainerPolicy("main", {}, {"memory": 384 * MI}),
    )
    got = _changes(
        [container("main", {"cpu": "1", "memory": "1Gi"}), container("side", {"cpu": "1", "memory": "1Gi"})],
        [crec("main", {"cpu": "100m", "memory": "512Mi"}), crec("side", {"cpu": "100m", "memory": "512Mi"})],
        bounds=bounds,
    )
    assert got == {
        ("main", "requests", "cpu"): ("1", "100m"),  # main's own entry has no cpu bound; "*" does not apply
        ("main", "requests", "memory"): ("1Gi", "384Mi"),
        ("side", "requests", "cpu"): ("1", "300m"),
        ("side", "requests", "memory"): ("1Gi", "256Mi"),
    }


def test_containers_without_recommendation_and_low_confidence_ones_are_untouched() -> None:
    got = _changes(
        [
            container("main", {"cpu": "1"}),
            container("istio-proxy", {"cpu": "100m"}),
            container("batch", {"cpu": "2"}),
        ],
        [
            crec("main", {"cpu": "500m"}),
            crec("batch", {"cpu": "1"}, low_confidence=True),
            crec("ghost", {"cpu": "1"}),
        ],
    )
    assert got == {("main", "requests", "cpu"): ("1", "500m")}


def test_below_min_confidence_is_not_applied() -> None:
    got = _changes(
        [container("main", {"cpu": "1"})], [crec("main", {"cpu": "500m"}, confidence=0.4)], min_confidence=0.5
    )
    assert got == {}


def test_init_containers_and_sidecars_are_matched_by_name() -> None:
    sidecar = container("log-shipper", {"cpu": "200m"})
    sidecar["restartPolicy"] = "Always"
    got = _changes(
        [container("main", {"cpu": "1"})],
        [crec("log-shipper", {"cpu": "50m"}), crec("main", {"cpu": "1"})],
        init=[sidecar],
    )
    assert got == {("log-shipper", "requests", "cpu"): ("200m", "50m")}
    pod = replicaset_pod(containers=[container("main")], init=[sidecar])
    rec = recommendation(containers=[crec("log-shipper", {"cpu": "50m"})])
    (change,) = plan_pod(pod, rec, PlanPolicy(), AUTO).changes
    assert (change.section, change.index) == ("initContainers", 0)


@pytest.mark.parametrize(
    ("limits", "rec_limits", "bounds", "expected_limits"),
    [
        pytest.param(
            {"cpu": "1", "memory": "2Gi"},
            {"memory": "640Mi"},
            (),
            {"memory": ("2Gi", "640Mi")},
            id="the recommended memory limit is written; cpu without one keeps its limit",
        ),
        pytest.param(
            None,
            {"cpu": "500m", "memory": "640Mi"},
            (),
            {"cpu": (None, "500m"), "memory": (None, "640Mi")},
            id="a limit the pod did not have is written",
        ),
        pytest.param(
            {"memory": "2Gi"},
            {"memory": "640Mi"},
            (ContainerPolicy("main", {"memory": 1024 * MI}),),
            {"memory": ("2Gi", "1024Mi")},
            id="never below the request that bounds raised",
        ),
        pytest.param(
            {"cpu": "100m"},
            {},
            (),
            {"cpu": ("100m", "250m")},
            id="no recommended limit: raised to the request like cap",
        ),
    ],
)
def test_recommended_limit_policy_writes_the_recommendations_limits(
    limits: dict[str, str] | None,
    rec_limits: dict[str, str],
    bounds: tuple[ContainerPolicy, ...],
    expected_limits: dict[str, tuple[str | None, str]],
) -> None:
    got = _changes(
        [container("main", {"cpu": "500m", "memory": "1Gi"}, limits)],
        [crec("main", {"cpu": "250m", "memory": "512Mi"}, rec_limits)],
        "recommended",
        bounds,
    )
    assert {r: v for (_, f, r), v in got.items() if f == "limits"} == expected_limits
    assert got[("main", "requests", "cpu")] == ("500m", "250m")  # requests follow the recommendation
