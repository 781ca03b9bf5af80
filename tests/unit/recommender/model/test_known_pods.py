"""KnownPods (recommender.model.pods): the pods and owner links a delta cycle no longer looks up."""

from __future__ import annotations

from datetime import UTC, datetime

from recommender.model.pods import KnownPods
from recommender.model.raw import OwnerLink, PodInfo, RawDataset

T = datetime(2026, 12, 1, tzinfo=UTC)
WEB = PodInfo("shop", "web-1", "n1", "ReplicaSet", "web-7d", requests={"app": {"cpu": 0.5}})
LINK = OwnerLink("shop", "ReplicaSet", "web-7d", "Deployment", "web")


def dataset(*pods: PodInfo, owners: tuple[OwnerLink, ...] = ()) -> RawDataset:
    return RawDataset(T, T, pods, owners, ())


def test_a_pod_not_looked_up_again_stays_known_until_it_leaves_the_window() -> None:
    known = KnownPods()
    known.update(dataset(WEB, owners=(LINK,)), 100.0)
    known.update(dataset(PodInfo("shop", "web-2", "n1", "ReplicaSet", "web-7d")), 200.0)
    raw = known.applied(dataset())
    assert {p.name for p in raw.pods} == {"web-1", "web-2"} and raw.owners == (LINK,)
    known.forget_before(150.0)
    assert {p.name for p in known.applied(dataset()).pods} == {"web-2"}
    assert known.applied(dataset()).owners == ()


def test_a_later_lookup_without_samples_keeps_the_pods_requests() -> None:
    known = KnownPods()
    known.update(dataset(WEB), 100.0)
    known.update(dataset(PodInfo("shop", "web-1", "n2", "ReplicaSet", "web-7d", labels={"a": "b"})), 200.0)
    (pod,) = known.applied(dataset()).pods
    assert pod.requests == WEB.requests and pod.labels == {"a": "b"} and pod.node == "n2"
