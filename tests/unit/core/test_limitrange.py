"""Cluster policy in the pod plan: LimitRange min/max/ratio/defaults, pod-level resources, quota headroom."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from podsizer.limitrange import ClusterPolicy, fit
from podsizer.modes import Resolved
from podsizer.plan import PodPlan, plan_pod
from podsizer.podspec import container_slots, quantity
from podsizer.policy import LimitPolicy, PlanPolicy
from tests.support.hypo import examples
from tests.unit.webhook.builders import container, crec, recommendation, replicaset_pod

AUTO = Resolved("auto")


def _limit_range(*items: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "LimitRange",
        "metadata": {"name": "lr", "namespace": "shop"},
        "spec": {"limits": list(items)},
    }


def _quota(hard: dict[str, str], used: dict[str, str]) -> dict[str, Any]:
    return {"kind": "ResourceQuota", "spec": {"hard": hard}, "status": {"hard": hard, "used": used}}


def _plan(
    containers: list[dict[str, Any]],
    recs: list[Any],
    cluster: ClusterPolicy | None,
    limit_policy: LimitPolicy = "keep-ratio",
    pod_resources: dict[str, Any] | None = None,
) -> PodPlan:
    pod = replicaset_pod(containers=containers)
    if pod_resources is not None:
        pod["spec"]["resources"] = pod_resources
    return plan_pod(pod, recommendation(containers=recs), PlanPolicy(limit_policy), AUTO, cluster=cluster)


def _values(plan: PodPlan) -> dict[tuple[str, str, str], str | None]:
    return {(c.container, c.field, c.resource): c.new for c in plan.changes}


def test_requests_and_limits_are_clamped_into_the_container_min_and_max() -> None:
    lr = ClusterPolicy.of(
        [_limit_range({"type": "Container", "min": {"cpu": "100m"}, "max": {"cpu": "2", "memory": "4Gi"}})],
        [],
    )
    low = _plan([container("main", {"cpu": "250m"}, {"cpu": "300m"})], [crec("main", {"cpu": "80m"})], lr)
    assert _values(low)[("main", "requests", "cpu")] == "100m"
    assert _values(low)[("main", "limits", "cpu")] == "100m", "keep-ratio's 96m limit raised to the min"
    high = _plan(
        [container("main", {"cpu": "1", "memory": "1Gi"}, {"cpu": "2", "memory": "2Gi"})],
        [crec("main", {"cpu": "3", "memory": "3Gi"})],
        lr,
    )
    values = _values(high)
    assert values[("main", "requests", "cpu")] == "2"
    assert ("main", "limits", "cpu") not in values, "keep-ratio's 6 cores lowered to the max: the pod's own 2"
    assert values[("main", "requests", "memory")] == "3072Mi"
    assert values[("main", "limits", "memory")] == "4096Mi", "keep-ratio's 6Gi limit lowered to the max"


def test_the_ratio_is_kept_by_raising_the_request() -> None:
    lr = ClusterPolicy.of([_limit_range({"type": "Container", "maxLimitRequestRatio": {"cpu": "4"}})], [])
    plan = _plan(
        [container("main", {"cpu": "500m"}, {"cpu": "2"})], [crec("main", {"cpu": "300m"})], lr, "leave"
    )
    assert plan.skip == "no-change", "300m raised to 2/4 = 500m, what the pod already has"
    plan = _plan(
        [container("main", {"cpu": "800m"}, {"cpu": "2"})], [crec("main", {"cpu": "300m"})], lr, "leave"
    )
    assert _values(plan) == {("main", "requests", "cpu"): "500m"}


def test_the_ratio_lowers_the_limit_when_the_request_cannot_rise() -> None:
    # the limit stays 1 (the max); the request 300m may rise to 1/2 = 500m
    lr = ClusterPolicy.of(
        [_limit_range({"type": "Container", "max": {"cpu": "1"}, "maxLimitRequestRatio": {"cpu": "2"}})], []
    )
    plan = _plan(
        [container("main", {"cpu": "800m"}, {"cpu": "1"})], [crec("main", {"cpu": "300m"})], lr, "leave"
    )
    assert _values(plan) == {("main", "requests", "cpu"): "500m"}


def test_defaults_count_for_a_container_without_a_limit() -> None:
    # the LimitRanger writes the default limit 1 into the container: a 300m request would be a ratio of 3.3
    lr = ClusterPolicy.of(
        [_limit_range({"type": "Container", "default": {"cpu": "1"}, "maxLimitRequestRatio": {"cpu": "2"}})],
        [],
    )
    plan = _plan([container("main", {"cpu": "800m"})], [crec("main", {"cpu": "300m"})], lr)
    assert _values(plan) == {("main", "requests", "cpu"): "500m"}
    item = lr.limit_ranges[0]
    assert item.default_request == {"cpu": Decimal(1)}, (
        "defaultRequest defaults to default, as the apiserver does"
    )


def test_an_impossible_container_range_drops_that_containers_changes_with_a_reason() -> None:
    lr = ClusterPolicy.of([_limit_range({"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}})], [])
    plan = _plan(
        [container("main", {"cpu": "500m", "memory": "1Gi"}), container("side", {"memory": "1Gi"})],
        [crec("main", {"cpu": "300m", "memory": "512Mi"}), crec("side", {"memory": "256Mi"})],
        lr,
    )
    values = _values(plan)
    assert ("main", "requests", "cpu") not in values
    assert (
        values[("main", "requests", "memory")] == "512Mi"
        and values[("side", "requests", "memory")] == "256Mi"
    )
    assert any("main: the LimitRange's cpu min" in n for n in plan.notes)


def test_container_requests_over_a_pod_level_limit_are_skipped_with_a_reason() -> None:
    """The issue's case: container requests of 1557m under a pod-level limit of 1 CPU."""
    containers = [
        container("main", {"cpu": "500m", "memory": "1Gi"}),
        container("side", {"cpu": "200m", "memory": "256Mi"}),
    ]
    recs = [
        crec("main", {"cpu": "1257m", "memory": "768Mi"}),
        crec("side", {"cpu": "300m", "memory": "128Mi"}),
    ]
    pod_level = {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}
    unbounded = _plan(containers, recs, None)
    total = sum(
        Decimal(str(quantity(v)))
        for (_, f, r), v in _values(unbounded).items()
        if (f, r) == ("requests", "cpu")
    )
    assert total == Decimal("1.557")
    plan = _plan(containers, recs, None, pod_resources=pod_level)
    values = _values(plan)
    assert not any(r == "cpu" for (_, _, r) in values), "cpu increases skipped: 1557m would pass the pod's 1"
    assert values[("main", "requests", "memory")] == "768Mi", "memory is not bounded at pod level here"
    assert any("1557m above the pod-level" in n for n in plan.notes), plan.notes


def test_pod_level_limits_bound_each_container_limit() -> None:
    plan = _plan(
        [container("main", {"cpu": "400m"}, {"cpu": "800m"})],
        [crec("main", {"cpu": "600m"})],
        None,
        pod_resources={"limits": {"cpu": "1"}},
    )
    assert plan.skip == "policy-limited" and "pod-level limit" in plan.detail


def test_quota_headroom_skips_increases_that_do_not_fit_and_keeps_decreases() -> None:
    containers = [container("main", {"cpu": "500m", "memory": "2Gi"})]
    recs = [crec("main", {"cpu": "900m", "memory": "1Gi"})]
    tight = ClusterPolicy.of(
        [], [_quota({"requests.cpu": "10", "memory": "20Gi"}, {"requests.cpu": "9700m"})]
    )
    assert tight.quota_headroom["requests.cpu"] == Decimal("0.3")
    assert tight.quota_headroom["requests.memory"] == Decimal(20 * 2**30), "`memory` is `requests.memory`"
    plan = _plan(containers, recs, tight)
    assert _values(plan) == {("main", "requests", "memory"): "1024Mi"}
    assert any("ResourceQuota's headroom" in n for n in plan.notes)
    roomy = ClusterPolicy.of([], [_quota({"requests.cpu": "10"}, {"requests.cpu": "1"})])
    assert _values(_plan(containers, recs, roomy))[("main", "requests", "cpu")] == "900m"


def test_the_smallest_headroom_over_several_quotas_applies() -> None:
    policy = ClusterPolicy.of(
        [],
        [_quota({"limits.cpu": "4"}, {"limits.cpu": "1"}), _quota({"limits.cpu": "8"}, {"limits.cpu": "7"})],
    )
    assert policy.quota_headroom == {"limits.cpu": Decimal(1)}


def test_pod_limit_range_max_bounds_the_sum_over_containers() -> None:
    lr = ClusterPolicy.of([_limit_range({"type": "Pod", "max": {"memory": "3Gi"}})], [])
    containers = [
        container("a", {"memory": "1Gi"}, {"memory": "1Gi"}),
        container("b", {"memory": "1Gi"}, {"memory": "1Gi"}),
    ]
    plan = _plan(containers, [crec("a", {"memory": "3Gi"}), crec("b", {"memory": "512Mi"})], lr)
    assert _values(plan) == {("b", "requests", "memory"): "512Mi", ("b", "limits", "memory"): "512Mi"}


def test_the_pod_max_counts_the_default_limit_of_an_unchanged_container() -> None:
    """Found by the property test: `side` has no limit, so the LimitRanger gives it the default 2 cores;
    keep-ratio's 1200m limit for `main` would bring the pod's limits to 3.2 cores, over the Pod max 3."""
    lr = ClusterPolicy.of(
        [
            _limit_range(
                {"type": "Container", "max": {"cpu": "2"}, "default": {"cpu": "2"}},
                {"type": "Pod", "max": {"cpu": "3"}},
            )
        ],
        [],
    )
    containers = [container("main", {"cpu": "50m"}, {"cpu": "300m"}), container("side", {"cpu": "50m"})]
    plan = _plan(containers, [crec("main", {"cpu": "200m"}), crec("side", {"cpu": "50m"})], lr)
    assert ("main", "limits", "cpu") not in _values(plan)
    assert plan.skip == "policy-limited" and "above the LimitRange's Pod max 3" in plan.detail, plan


def test_no_cluster_policy_and_no_pod_level_resources_change_nothing() -> None:
    pod = replicaset_pod(containers=[container("main", {"cpu": "500m"}, {"cpu": "1"})])
    plan = plan_pod(pod, recommendation(containers=[crec("main", {"cpu": "2"})]), PlanPolicy(), AUTO)
    fitted = fit(pod, plan.changes, container_slots(pod), ClusterPolicy())
    assert fitted.changes == plan.changes and fitted.reasons == ()


# --- property: a pod the cluster accepts without podsizer is accepted with it --------------------------

CPU_M = [50, 100, 200, 300, 500, 800, 1000, 1500, 2000]
MEM_MI = [64, 128, 256, 512, 768, 1024, 2048, 4096]


def _q(resource: str, n: int) -> str:
    return f"{n}m" if resource == "cpu" else f"{n}Mi"


@st.composite
def _amount(draw: st.DrawFn, resource: str) -> str:
    return _q(resource, draw(st.sampled_from(CPU_M if resource == "cpu" else MEM_MI)))


@st.composite
def _case(draw: st.DrawFn) -> tuple[dict[str, Any], Any, ClusterPolicy, LimitPolicy]:
    names = [f"c{i}" for i in range(draw(st.integers(1, 3)))]
    containers, recs = [], []
    for n in names:
        req: dict[str, str] = {}
        lim: dict[str, str] = {}
        for r in ("cpu", "memory"):
            if draw(st.booleans()):
                req[r] = draw(_amount(r))
            if draw(st.booleans()):
                lim[r] = draw(_amount(r))
                if r in req and quantity(lim[r]) < quantity(req[r]):  # type: ignore[operator]
                    req[r], lim[r] = lim[r], req[r]
        containers.append(container(n, req, lim))
        recs.append(
            crec(n, {r: draw(_amount(r)) for r in ("cpu", "memory")}, {"memory": draw(_amount("memory"))})
        )
    item: dict[str, Any] = {"type": "Container"}
    pod_item: dict[str, Any] = {"type": "Pod"}
    for r in ("cpu", "memory"):
        bounds = sorted(draw(st.lists(_amount(r), min_size=2, max_size=2)), key=lambda t: quantity(t) or 0)
        if draw(st.booleans()):
            item.setdefault("min", {})[r] = bounds[0]
        if draw(st.booleans()):
            item.setdefault("max", {})[r] = bounds[1]
        if draw(st.booleans()):
            item.setdefault("maxLimitRequestRatio", {})[r] = draw(st.sampled_from(["1", "1.5", "2", "4"]))
        if draw(st.booleans()):
            pod_item.setdefault("max", {})[r] = _q(r, 3 * (CPU_M if r == "cpu" else MEM_MI)[-1] // 2)
    quota = {"status": {"hard": {"requests.cpu": "3", "limits.memory": "8Gi"}, "used": {}}}
    cluster = ClusterPolicy.of([_limit_range(item, pod_item)], [quota] if draw(st.booleans()) else [])
    pod = replicaset_pod(containers=containers)
    if draw(st.booleans()):
        pod["spec"]["resources"] = {"limits": {"cpu": "2", "memory": "4Gi"}}
    policy: LimitPolicy = draw(st.sampled_from(["keep-ratio", "cap", "leave", "recommended"]))
    return pod, recommendation(containers=recs), cluster, policy


def _rejections(pod: dict[str, Any], cluster: ClusterPolicy) -> list[str]:
    """An independent oracle: what LimitRanger, pod validation and quota admission would reject."""
    out: list[str] = []
    zero = Decimal(0)
    spec = pod["spec"]
    pod_level = spec.get("resources", {})
    for r in ("cpu", "memory"):
        mn, mx = cluster.bound("Container", "min", r), cluster.bound("Container", "max", r)
        ratio = cluster.bound("Container", "max_ratio", r)
        total_req, total_lim = zero, zero
        for c in spec["containers"]:
            res = c.get("resources", {})
            lim = quantity(res.get("limits", {}).get(r)) or cluster.default("limits", r)
            req = quantity(res.get("requests", {}).get(r))
            req = req if req is not None else (lim if lim is not None else cluster.default("requests", r))
            total_req += req or zero
            total_lim += lim or zero
            name = f"{c['name']} {r}"
            if req is not None and lim is not None and req > lim:
                out.append(f"{name}: request over limit")
            if mn is not None and (req is None or req < mn or (lim is not None and lim < mn)):
                out.append(f"{name}: under min")
            if mx is not None and (lim is None or lim > mx or (req is not None and req > mx)):
                out.append(f"{name}: over max")
            if ratio is not None and lim is not None and (not req or lim / req > ratio):
                out.append(f"{name}: ratio")
            pod_lim = quantity(pod_level.get("limits", {}).get(r))
            if pod_lim is not None and lim is not None and lim > pod_lim:
                out.append(f"{name}: over the pod-level limit")
        pmx = cluster.bound("Pod", "max", r)
        if pmx is not None and (total_req > pmx or total_lim > pmx):
            out.append(f"pod {r}: over the Pod max")
        pod_lim = quantity(pod_level.get("limits", {}).get(r))
        if pod_lim is not None and total_req > pod_lim:
            out.append(f"pod {r}: requests over the pod-level limit")
        for field_, total in (("requests", total_req), ("limits", total_lim)):
            room = cluster.quota_headroom.get(f"{field_}.{r}")
            if room is not None and total > room:
                out.append(f"pod {field_}.{r}: over the quota")
    return out


@settings(max_examples=examples(2000), deadline=None)
@given(_case())
def test_a_pod_the_cluster_accepts_is_still_accepted_after_the_plan(
    case: tuple[dict[str, Any], Any, ClusterPolicy, LimitPolicy],
) -> None:
    pod, rec, cluster, limit_policy = case
    assume(not _rejections(pod, cluster))
    plan = plan_pod(pod, rec, PlanPolicy(limit_policy), AUTO, cluster=cluster)
    patched = copy.deepcopy(pod)
    for c in plan.changes:
        res = patched["spec"][c.section][c.index].setdefault("resources", {}).setdefault(c.field, {})
        if c.new is None:
            res.pop(c.resource, None)
        else:
            res[c.resource] = c.new
    assert _rejections(patched, cluster) == [], (plan.changes, plan.notes)
