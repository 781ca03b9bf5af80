"""Why the plan writes other values than the estimate: each rule that moved a value is named, and nothing
is named where the plan writes the estimate (podsizer/plan_reasons.py)."""

from __future__ import annotations

from podsizer.api import ContainerPolicy
from podsizer.modes import Meta
from podsizer.plan_reasons import adjustments, shown_reason
from podsizer.plan_view import WorkloadPlan, plan_workload
from podsizer.plausibility import Ceilings
from podsizer.podspec import CurrentResources
from podsizer.policy import PlanPolicy
from tests.unit.webhook.builders import crec, recommendation

AUTO = PlanPolicy(default_mode="auto")


def _plan(
    requests: dict[str, str],
    current: dict[str, float],
    policy: PlanPolicy = AUTO,
    limits: dict[str, float] | None = None,
    bounds: tuple[ContainerPolicy, ...] = (),
    annotations: dict[str, str] | None = None,
) -> WorkloadPlan:
    rec = recommendation(containers=[crec("main", requests)], policy=bounds)
    cur = (CurrentResources.of("main", current, limits or {}, False),)
    return plan_workload(rec, cur, policy, Meta({}, annotations or {}))


def _rules(plan: WorkloadPlan) -> dict[tuple[str, str], list[str]]:
    return {(a.field, a.resource): [s.rule for s in a.steps] for a in adjustments(plan, "main")}


def test_a_value_the_plan_writes_as_estimated_has_no_adjustment() -> None:
    plan = _plan({"cpu": "300m", "memory": "256Mi"}, {"cpu": 0.5, "memory": 512 * 2**20})
    assert adjustments(plan, "main") == ()
    assert shown_reason("p99 + 15%", plan, "main") == "p99 + 15%"


def test_the_maximum_change_factor_is_named_with_its_factor_and_todays_value() -> None:
    plan = _plan({"cpu": "440m", "memory": "512Mi"}, {"cpu": 2.0, "memory": 512 * 2**20})
    (moved,) = adjustments(plan, "main")
    assert (moved.field, moved.resource, moved.estimate, moved.planned) == ("requests", "cpu", "440m", "500m")
    assert [s.rule for s in moved.steps] == ["max-change"]
    said = shown_reason("cpu: p99 382m + 15% margin", plan, "main")
    assert said == (
        "cpu: p99 382m + 15% margin; plan: cpu request 500m instead of 440m: clamped by the maximum change "
        "factor 4x of today's 2"
    )


def test_bounds_are_named_before_the_factor() -> None:
    bounds = (ContainerPolicy("main", min_allowed={"cpu": 8.0}),)
    plan = _plan({"cpu": "440m", "memory": "512Mi"}, {"cpu": 1.0, "memory": 512 * 2**20}, bounds=bounds)
    assert _rules(plan) == {("requests", "cpu"): ["bounds", "max-change"]}
    (moved,) = adjustments(plan, "main")
    assert moved.planned == "4000m" and "raised to minAllowed 8" in moved.steps[0].text


def test_the_node_ceiling_is_named() -> None:
    largest = Ceilings(2.0, 4 * 2**30, 1.0, "largest node's allocatable")
    node = PlanPolicy(default_mode="auto", ceilings=largest)
    plan = _plan({"cpu": "3", "memory": "512Mi"}, {"cpu": 1.0, "memory": 512 * 2**20}, node)
    (moved,) = adjustments(plan, "main")
    assert [s.rule for s in moved.steps] == ["ceiling"] and moved.planned == "2000m"
    assert moved.steps[0].text == "capped at node allocatable"


def test_the_limit_policy_leave_holds_a_request_at_the_current_limit() -> None:
    leave = PlanPolicy(limit_policy="leave", default_mode="auto", max_change_factor=None)
    plan = _plan({"cpu": "2", "memory": "512Mi"}, {"cpu": 0.5, "memory": 512 * 2**20}, leave, {"cpu": 1.0})
    assert _rules(plan) == {("requests", "cpu"): ["limit-policy"]}


def test_allow_large_change_lifts_the_factor_and_nothing_is_named() -> None:
    plan = _plan(
        {"cpu": "440m", "memory": "512Mi"},
        {"cpu": 2.0, "memory": 512 * 2**20},
        annotations={"podsizer.io/allow-large-change": "true"},
    )
    assert adjustments(plan, "main") == ()


def test_a_plan_that_does_not_apply_names_no_adjustment() -> None:
    plan = _plan(
        {"cpu": "440m", "memory": "512Mi"},
        {"cpu": 2.0, "memory": 512 * 2**20},
        annotations={"podsizer.io/exclude": "true"},
    )
    assert plan.plan.skip == "excluded-pod" and adjustments(plan, "main") == ()


def test_a_gpu_count_held_back_by_the_opt_in_is_named() -> None:
    one = crec("main", {"cpu": "1", "nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"})
    rec = recommendation(containers=[one])
    cur = (CurrentResources.of("main", {"cpu": 1.0, "nvidia.com/gpu": 2.0}, {"nvidia.com/gpu": 2.0}, False),)
    plan = plan_workload(rec, cur, AUTO, Meta({}, {}))
    (moved,) = adjustments(plan, "main")
    assert (moved.resource, moved.estimate, moved.planned) == ("nvidia.com/gpu", "1", "2")
    assert [s.rule for s in moved.steps] == ["gpu-opt-in"]
    resized = plan_workload(rec, cur, AUTO, Meta({}, {"podsizer.io/gpu": "resize"}))
    assert adjustments(resized, "main") == ()
