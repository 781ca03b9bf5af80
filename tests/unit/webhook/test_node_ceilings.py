"""The webhook's ceilings from watched Nodes: only allocatable cpu/memory/GPUs is kept, the largest node
lowers the configured ceilings, and a Node event changes the next decision (never answered from the cache)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

from kubernetes.client import ApiClient

from podsizer.cluster import MetadataCache, NodeCache, OwnerCache, node_allocatable, start_cluster_watches
from podsizer.policy import PlanPolicy
from podsizer.resources import GPU
from podsizer.snapshot import SnapshotHolder
from tests.unit.webhook import builders as b
from webhook.admission import Admitter

GIB = 2.0**30


def _node(name: str, allocatable: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"allocatable": allocatable}}


def _huge_web_admitter(meta: MetadataCache, cache: bool = True) -> Admitter:
    rec = b.recommendation(containers=[b.crec("main", {"cpu": "1000", "memory": "1Ei"})])
    a = b.admitter(rec, policy=PlanPolicy(max_change_factor=None), metadata=meta)
    if not cache:
        a.cache = None
    return a


def _requests(a: Admitter, uid: str) -> dict[str, str]:
    pod = b.replicaset_pod("web", containers=[b.container("main", {"cpu": "1", "memory": "1Gi"})])
    reply, _ = a.review(b.review(pod, uid=uid))
    requests: dict[str, str] = b.resources_of(b.apply_reply(pod, reply), "main")["requests"]
    return requests


def test_node_allocatable_keeps_only_cpu_memory_and_gpus_and_drops_unreadable_values() -> None:
    node = _node(
        "n1",
        {"cpu": "7910m", "memory": "31Gi", GPU: "8", "pods": "110", "ephemeral-storage": "100Gi"},
    )
    assert dict(node_allocatable(node)) == {"cpu": 7.91, "memory": 31 * GIB, GPU: 8.0}
    bad = _node("n2", {"cpu": "lots", "memory": "-1Gi", GPU: {"x": 1}})
    assert dict(node_allocatable(bad)) == {}
    assert dict(node_allocatable({"metadata": {"name": "n3"}})) == {}


def test_the_node_cache_keeps_the_largest_allocatable_per_resource_over_list_and_events() -> None:
    cache = NodeCache()
    assert dict(cache.largest()) == {}
    cache.handler().replace([_node("a", {"cpu": "8", "memory": "64Gi"}), _node("b", {"cpu": "4", GPU: "2"})])
    assert dict(cache.largest()) == {"cpu": 8.0, "memory": 64 * GIB, GPU: 2.0}
    before = cache.largest()
    cache.handler().event("MODIFIED", _node("b", {"cpu": "4", GPU: "2"}))
    assert cache.largest() is before  # unchanged: the same object (decisions may key on it)
    cache.handler().event("ADDED", _node("c", {"cpu": "32", "memory": "16Gi"}))
    assert dict(cache.largest()) == {"cpu": 32.0, "memory": 64 * GIB, GPU: 2.0}
    cache.handler().event("DELETED", _node("a", {}))
    assert dict(cache.largest()) == {"cpu": 32.0, "memory": 16 * GIB, GPU: 2.0}


def test_the_webhook_clamps_to_the_largest_watched_nodes_allocatable() -> None:
    meta = MetadataCache()
    meta.nodes.handler().replace([_node("small", {"cpu": "4", "memory": "16Gi"}), _node("big", {"cpu": "8"})])
    got = _requests(_huge_web_admitter(meta), "u1")
    assert got == {"cpu": "8000m", "memory": "16384Mi"}


def test_a_node_event_changes_the_next_decision_even_with_the_decision_cache_on() -> None:
    meta = MetadataCache()
    meta.nodes.handler().replace([_node("a", {"cpu": "8", "memory": "32Gi"})])
    cached, uncached = _huge_web_admitter(meta), _huge_web_admitter(meta, cache=False)
    first = _requests(cached, "u1")
    meta.nodes.handler().event("ADDED", _node("b", {"cpu": "16", "memory": "64Gi"}))
    second = _requests(cached, "u2")
    assert (first, second) == (
        {"cpu": "8000m", "memory": "32768Mi"},
        {"cpu": "16000m", "memory": "65536Mi"},
    )
    assert second == _requests(uncached, "u3")
    meta.nodes.handler().event("DELETED", _node("b", {}))
    meta.nodes.handler().event("DELETED", _node("a", {}))
    assert _requests(cached, "u4") == {"cpu": "256000m", "memory": f"{4 * 2**20}Mi"}  # configured ceilings


def test_a_node_larger_than_the_configured_ceiling_never_raises_it() -> None:
    meta = MetadataCache()
    meta.nodes.handler().replace([_node("bogus", {"cpu": "100000", "memory": "1Ei"})])
    assert _requests(_huge_web_admitter(meta), "u1") == {"cpu": "256000m", "memory": f"{4 * 2**20}Mi"}


def test_the_cluster_watches_list_nodes_into_the_node_cache() -> None:
    stop = threading.Event()
    stop.set()  # nothing runs: only the informers' wiring is looked at
    meta = MetadataCache()
    informers = start_cluster_watches(
        ApiClient(), SnapshotHolder(), OwnerCache(), meta, lambda: datetime.now(UTC), stop
    )
    (nodes,) = [i for i in informers if i.name == "nodes"]
    assert getattr(nodes.list_fn, "__name__", "") == "list_node"
    nodes.handler.replace([_node("a", {"cpu": "2"})])
    assert dict(meta.largest_allocatable()) == {"cpu": 2.0}
