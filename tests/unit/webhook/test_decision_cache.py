"""The decision cache never changes an answer: cached and uncached Admitters reply byte for byte alike."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from podsizer.api import Recommendation
from podsizer.cluster import MetadataCache, OwnerCache
from podsizer.modes import NoMetadata
from podsizer.policy import Mode, PlanPolicy
from podsizer.snapshot import RecommendationSnapshot, SnapshotHolder
from tests.support.hypo import examples
from tests.unit.webhook import builders as b
from tests.unit.webhook.fuzz_strategies import CPU, MEM, pods, resources, scenarios
from webhook.admission import AdmissionConfig, Admitter, Decision, DecisionCache, _Cached
from webhook.wire import AdmissionReview

COMMON: Any = {
    "deadline": None,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
MODES = st.sampled_from(["auto", "dry-run"])
OPTIONS = st.builds(
    PlanPolicy,
    st.sampled_from(["keep-ratio", "cap", "leave", "recommended"]),
    st.booleans(),
    st.booleans(),
    st.sampled_from([0.0, 0.5]),
)
FIXED_STORE = [
    b.recommendation(
        kind,
        name,
        containers=[
            b.crec(
                "main", {"cpu": "250m", "memory": "512Mi", "nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"}
            ),
            b.crec("istio-proxy", {"cpu": "50m", "memory": "96Mi"}),
            b.crec("init-db", {"cpu": "10m", "memory": "32Mi"}),
        ],
    )
    for kind in ("Deployment", "Rollout", "DeploymentConfig", "StatefulSet", "DaemonSet")
    for name in ("web", "api-v2", "cart")
]


def _admitter(holder: SnapshotHolder, mode: Mode, opts: PlanPolicy, cache_size: int, **kw: Any) -> Admitter:
    config = AdmissionConfig(dataclasses.replace(opts, default_mode=mode), frozenset({"kube-system"}))
    return Admitter(
        config, holder, kw.pop("owners", OwnerCache()), kw.pop("metadata", NoMetadata()), cache_size
    )


def _holder(recs: list[Recommendation]) -> SnapshotHolder:
    holder = SnapshotHolder()
    holder.swap(RecommendationSnapshot.of(recs, b.T1))
    return holder


def _answer(admitter: Admitter, review: AdmissionReview) -> tuple[bytes, tuple[Any, ...]]:
    reply, d = admitter.review(copy.deepcopy(review))
    return orjson.dumps(reply), (d.outcome, d.reason, d.patch, d.workload, d.recommendation, d.changes)


def _same(cached: Admitter, uncached: Admitter, review: AdmissionReview) -> None:
    assert _answer(cached, review) == _answer(uncached, review)


@settings(max_examples=examples(600), **COMMON)
@given(scenario=scenarios(), mode=MODES, opts=OPTIONS, uid=st.uuids())
def test_cached_and_uncached_replies_are_identical_also_for_a_replica_with_another_uid(
    scenario: tuple[dict[str, Any], list[Recommendation]], mode: Mode, opts: PlanPolicy, uid: Any
) -> None:
    pod, recs = scenario
    holder = _holder(recs)
    cached, uncached = _admitter(holder, mode, opts, 4096), _admitter(holder, mode, opts, 0)
    first = b.review(pod, uid="first")
    _same(cached, uncached, first)
    replica = copy.deepcopy(pod)
    replica["metadata"]["name"] = f"{replica['metadata'].get('name', 'pod')}-x2"
    second = b.review(replica, uid=str(uid))
    _same(cached, uncached, second)  # a hit when the first was cached: the reply still echoes this uid
    assert orjson.loads(_answer(cached, second)[0])["response"]["uid"] == str(uid)


@st.composite
def pod_and_variant(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A pod and a copy that differs only in one container's resources."""
    pod = draw(pods())
    variant = copy.deepcopy(pod)
    slots = [
        c
        for s in ("initContainers", "containers")
        for c in variant["spec"].get(s) or []
        if isinstance(c, dict)
    ]
    target = slots[draw(st.integers(0, len(slots) - 1))]
    change = draw(st.sampled_from(["replace", "one-value", "drop"]))
    if change == "replace":
        res = draw(resources())
        if res is None:
            target.pop("resources", None)
        else:
            target["resources"] = res
    elif change == "one-value":
        section = target.setdefault("resources", {}).setdefault(
            draw(st.sampled_from(["requests", "limits"])), {}
        )
        name = draw(st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]))
        section[name] = draw({"cpu": CPU, "memory": MEM, "nvidia.com/gpu": st.sampled_from(["1", "2"])}[name])
    else:
        target["resources"] = None
    return pod, variant


@settings(max_examples=examples(600), **COMMON)
@given(pair=pod_and_variant(), mode=MODES, opts=OPTIONS)
def test_pods_that_differ_in_one_containers_resources_get_their_own_answers(
    pair: tuple[dict[str, Any], dict[str, Any]], mode: Mode, opts: PlanPolicy
) -> None:
    pod, variant = pair
    holder = _holder(FIXED_STORE)
    cached, uncached = _admitter(holder, mode, opts, 4096), _admitter(holder, mode, opts, 0)
    for p in (pod, variant, pod, variant):
        _same(cached, uncached, b.review(p, uid="u"))


@pytest.fixture(scope="module")
def shared() -> tuple[Admitter, Admitter]:
    """One long-lived cached Admitter over a fixed store: entries of earlier examples must not leak."""
    holder = _holder(FIXED_STORE)
    opts = PlanPolicy("keep-ratio", gpu_resize=True, allow_mig_swap=True)
    return _admitter(holder, "auto", opts, 64), _admitter(holder, "auto", opts, 0)


@settings(max_examples=examples(600), **COMMON)
@given(pod=pods())
def test_a_long_lived_cache_answers_every_new_pod_like_no_cache(
    shared: tuple[Admitter, Admitter], pod: dict[str, Any]
) -> None:
    cached, uncached = shared
    _same(cached, uncached, b.review(pod, uid="u"))
    assert cached.cache is not None and len(cached.cache) <= 64


def _web(cpu: str) -> Recommendation:
    return b.recommendation("Deployment", "web", containers=[b.crec("main", {"cpu": cpu, "memory": "512Mi"})])


def test_replicas_share_one_entry_and_a_new_snapshot_is_not_answered_from_the_old_one() -> None:
    holder = _holder([_web("250m")])
    a = _admitter(holder, "auto", PlanPolicy(), 4096)
    pod = b.replicaset_pod("web", containers=[b.container("main", {"cpu": "1", "memory": "1Gi"})])
    for i in range(3):
        _, d = a.review(b.review(pod, uid=f"u{i}"))
        assert d.outcome == "applied"
    assert a.cache is not None and len(a.cache) == 1
    holder.swap(RecommendationSnapshot.of([_web("750m")], b.T1))  # same name, same generatedAt
    reply, _ = a.review(b.review(pod, uid="u9"))
    assert b.resources_of(b.apply_reply(pod, reply), "main")["requests"]["cpu"] == "750m"


def test_the_cache_is_bounded_and_drops_the_least_recently_used() -> None:
    rec = _web("250m")
    cache = DecisionCache(2)
    entries = {k: _Cached(rec, Decision("skipped", k), None) for k in ("a", "b", "c")}
    cache.put("a", entries["a"])
    cache.put("b", entries["b"])
    assert cache.get("a") is entries["a"]  # now "b" is the least recently used
    cache.put("c", entries["c"])
    assert len(cache) == 2
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (entries["a"], None, entries["c"])


def test_members_that_are_not_text_bypass_the_cache() -> None:
    holder = _holder([_web("250m")])
    cached, uncached = (
        _admitter(holder, "auto", PlanPolicy(), 4096),
        _admitter(holder, "auto", PlanPolicy(), 0),
    )
    for value in (1, True, "1", 1.0):  # equal as dict keys, different as quantities
        pod = b.replicaset_pod("web", containers=[b.container("main", {"cpu": value})])  # type: ignore[dict-item]
        _same(cached, uncached, b.review(pod, uid="u"))
    assert cached.cache is not None and len(cached.cache) == 1  # only the text "1"


def _gpu_web() -> Recommendation:
    return b.recommendation(
        "Deployment",
        "web",
        containers=[b.crec("main", {"cpu": "250m", "nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"})],
    )


def _gpu_pod(opt_in: str | None) -> dict[str, Any]:
    return b.replicaset_pod(
        "web",
        containers=[b.container("main", {"cpu": "1", "nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "2"})],
        annotations={"podsizer.io/gpu": opt_in} if opt_in else {},
    )


def test_the_gpu_opt_in_is_part_of_the_key() -> None:
    holder = _holder([_gpu_web()])
    cached, uncached = (
        _admitter(holder, "auto", PlanPolicy(), 4096),
        _admitter(holder, "auto", PlanPolicy(), 0),
    )
    answers = []
    for opt_in in (None, "resize", "keep", "Resize"):  # same containers; only the opt-in differs
        _same(cached, uncached, b.review(_gpu_pod(opt_in), uid="u"))
        reply, _ = cached.review(b.review(_gpu_pod(opt_in), uid="u"))
        answers.append(b.resources_of(b.apply_reply(_gpu_pod(opt_in), reply), "main")["requests"])
    assert [a["nvidia.com/gpu"] for a in answers] == ["2", "1", "2", "1"]
    assert cached.cache is not None and len(cached.cache) == 2


def test_a_workload_opt_in_arriving_later_is_not_answered_from_the_cache() -> None:
    holder = _holder([_gpu_web()])
    meta = MetadataCache()
    a = _admitter(holder, "auto", PlanPolicy(), 4096, metadata=meta)
    pod = _gpu_pod(None)
    before, _ = a.review(b.review(pod, uid="u1"))
    meta.handler("Deployment").event(
        "ADDED",
        {"metadata": {"name": "web", "namespace": "shop", "annotations": {"podsizer.io/gpu": "resize"}}},
    )
    after, _ = a.review(b.review(pod, uid="u2"))
    held = [
        b.resources_of(b.apply_reply(pod, r), "main")["requests"]["nvidia.com/gpu"] for r in (before, after)
    ]
    assert held == ["2", "1"]
