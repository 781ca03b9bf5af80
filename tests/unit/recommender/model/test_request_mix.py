"""Which requests a workload's pods had: the distinct sets counted, and the hint naming what differs."""

from __future__ import annotations

from recommender.model.request_mix import RequestSet, describe, request_mix

GI = 2.0**30


def test_pods_with_the_same_requests_agree_and_get_no_hint() -> None:
    mix = request_mix([{"cpu": 0.5, "memory": GI}, {"memory": GI, "cpu": 0.5}])
    assert mix == (RequestSet({"cpu": 0.5, "memory": GI}, 2),)
    assert list(mix[0].requests) == ["cpu", "memory"]  # in name order, whichever pod came first
    assert describe(mix) == "" and describe(()) == "" and request_mix([]) == ()


def test_differing_pods_are_counted_most_first_naming_only_what_differs() -> None:
    mix = request_mix([{"cpu": 0.25, "memory": GI}, {"cpu": 0.5, "memory": GI}, {"cpu": 0.5, "memory": GI}])
    assert [s.pods for s in mix] == [2, 1]
    assert describe(mix) == "pods differ: 2 request cpu 500m, 1 requests cpu 250m; now: the newest pod's"


def test_a_request_missing_on_some_pods_says_unset() -> None:
    mix = request_mix([{"cpu": 1.0}, {"cpu": 1.0, "memory": GI}])
    assert (
        describe(mix)
        == "pods differ: 1 requests memory unset, 1 requests memory 1024Mi; now: the newest pod's"
    )
