"""The webhook uses only its own cluster's Recommendations (PODSIZER_CLUSTER_NAME) from a json file holding
several clusters' and from the crd watch; pods name no cluster, so lookups ignore it."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import orjson

from podsizer.api import Recommendation, WorkloadRef, recommendation_to_resource
from podsizer.api.resource import ContainerRecommendation
from podsizer.cluster import CrdWatchLoader
from podsizer.snapshot import RecommendationSnapshot, SnapshotHolder
from tests.unit.webhook.builders import recommendation
from webhook.file_store import FileStoreLoader

NOW = datetime(2026, 12, 2, tzinfo=UTC)
WEB = WorkloadRef("shop", "Deployment", "web")


def rec(cluster: str, cpu: str, name: str = "web") -> Recommendation:
    base = recommendation(name=name)
    c = ContainerRecommendation("app", {"cpu": cpu}, {}, 0.9, "p99")
    return replace(base, target=base.target.in_cluster(cluster), containers=(c,))


def cpu(snapshot: RecommendationSnapshot | None, ref: WorkloadRef = WEB) -> str | None:
    assert snapshot is not None
    got = snapshot.get(ref)
    return None if got is None else got.containers[0].requests["cpu"]


def _file(tmp_path: Path, *recs: Recommendation) -> Path:
    path = tmp_path / "recs.json"
    items = [recommendation_to_resource(r) for r in recs]
    doc = {"apiVersion": "podsizer.io/v1alpha1", "kind": "RecommendationList", "items": items}
    path.write_bytes(orjson.dumps(doc))
    return path


def test_the_file_loader_uses_only_this_clusters_recommendations(tmp_path: Path) -> None:
    path = _file(tmp_path, rec("east", "100m"), rec("west", "200m"), rec("", "300m", name="db"))
    for cluster, want in (("east", "100m"), ("west", "200m")):
        holder = SnapshotHolder(cluster_name=cluster)
        assert FileStoreLoader(path, holder, lambda: NOW).load_once()
        snap = holder.current()
        assert cpu(snap) == want
        assert cpu(snap, WorkloadRef("shop", "Deployment", "db")) == "300m"  # unlabelled: used as well
        assert snap is not None and snap.skipped[-1].startswith(
            "1 recommendations of other clusters left out"
        )


def test_without_a_cluster_name_several_clusters_recommendations_are_not_used(tmp_path: Path) -> None:
    path = _file(tmp_path, rec("east", "100m"), rec("west", "200m"), rec("", "300m", name="db"))
    holder = SnapshotHolder()
    assert FileStoreLoader(path, holder, lambda: NOW).load_once()
    snap = holder.current()
    assert cpu(snap) is None and cpu(snap, WorkloadRef("shop", "Deployment", "db")) == "300m"
    assert snap is not None and "PODSIZER_CLUSTER_NAME is empty" in snap.skipped[-1]


def test_a_single_clusters_file_is_used_without_a_cluster_name(tmp_path: Path) -> None:
    holder = SnapshotHolder()
    assert FileStoreLoader(_file(tmp_path, rec("east", "100m")), holder, lambda: NOW).load_once()
    assert cpu(holder.current()) == "100m" and cpu(holder.current(), WEB.in_cluster("east")) == "100m"


def test_the_crd_loader_uses_only_this_clusters_recommendations() -> None:
    holder = SnapshotHolder(cluster_name="west")
    loader = CrdWatchLoader(holder, lambda: NOW, debounce=0)
    loader.replace([recommendation_to_resource(rec("east", "100m"))])
    assert cpu(holder.current()) is None
    loader.event("ADDED", recommendation_to_resource(rec("west", "200m", name="api")))
    assert cpu(holder.current(), WorkloadRef("shop", "Deployment", "api")) == "200m"
