"""Round trips: Recommendation -> resource -> Recommendation, resource -> JSON -> resource, the JSON file."""

from __future__ import annotations

import copy
import tempfile
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from podsizer.api.identity import WorkloadRef
from podsizer.api.resource import (
    ContainerPolicy,
    ContainerRecommendation,
    Forecast,
    GpuRecommendation,
    Recommendation,
    Window,
    recommendation_from_resource,
    recommendation_to_resource,
)
from recommender.output.store import JsonFileStore
from tests.support.hypo import examples
from tests.unit.api.strategies import recommendations

GOLDEN = Path(__file__).parent / "golden" / "recommendation.json"


def _sample() -> Recommendation:
    """Every optional part present: what the golden file holds."""
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    return Recommendation(
        target=WorkloadRef("ml", "Deployment", "trainer"),
        generated_at=now,
        window=Window(now - timedelta(days=7), now, 20160),
        sizing_mode="autopilot",
        reason="HPA owns replicas; sized from per-replica steady state",
        containers=(
            ContainerRecommendation(
                name="main",
                requests={"cpu": "250m", "memory": "512Mi", "nvidia.com/gpu": "1"},
                limits={"memory": "640Mi", "nvidia.com/gpu": "1"},
                confidence=0.93456,
                reason="p99 + 15%",
            ),
            ContainerRecommendation("sidecar", {"cpu": "10m"}, {}, 1, "new", low_confidence=True),
        ),
        gpu=GpuRecommendation(
            model="NVIDIA A100-SXM4-80GB",
            allocated=1,
            sm_active_p95=0.123456,
            fb_used_max_bytes=9 * 2**30,
            idle=True,
            idle_since=now - timedelta(hours=3),
            suggested_resource="nvidia.com/mig-1g.10gb",
            hourly_cost=4.1,
            wasted_hourly_cost=3,
            activity_signal="GR_ENGINE_ACTIVE",
        ),
        forecast=Forecast(
            horizon_days=7, cpu_cores_peak=1.23456789, memory_bytes_peak=3.5 * 2**30, method="x"
        ),
        policy=(
            ContainerPolicy("*", min_allowed={"cpu": 0.05}, max_allowed={"memory": 8 * 2**30}),
            ContainerPolicy("main", max_allowed={"cpu": 2, "nvidia.com/gpu": 1}),
        ),
        resource_version="41",
    )


def test_encoding_is_byte_identical_to_the_stored_format() -> None:
    """GOLDEN was written by the codec before the wire models: files and CRs already stored stay valid."""
    encoded = orjson.dumps(recommendation_to_resource(_sample()), option=orjson.OPT_INDENT_2) + b"\n"
    assert encoded == GOLDEN.read_bytes()


def test_the_golden_object_decodes_to_the_rounded_sample() -> None:
    rec = recommendation_from_resource(orjson.loads(GOLDEN.read_bytes()))
    assert rec.target == WorkloadRef("ml", "Deployment", "trainer")
    assert rec.containers[0].confidence == 0.9346
    assert rec.gpu is not None and rec.gpu.sm_active_p95 == 0.1235
    assert rec.forecast is not None and rec.forecast.memory_bytes_peak == 3.5 * 2**30
    assert rec.policy == _sample().policy
    assert rec.resource_version == "41"


def test_cluster_is_written_only_when_set() -> None:
    plain = recommendation_to_resource(_sample())
    assert "cluster" not in plain["status"]
    with_cluster = replace(_sample(), target=_sample().target.in_cluster("east"))
    obj = recommendation_to_resource(with_cluster)
    assert obj["status"]["cluster"] == "east"
    assert next(iter(obj["status"])) == "cluster"
    decoded = recommendation_from_resource(obj)
    assert decoded.cluster == "east"
    assert decoded.target == WorkloadRef("ml", "Deployment", "trainer", "east")
    assert decoded.name == _sample().name  # the object's name does not carry the cluster


@settings(max_examples=examples(600))
@given(recommendations())
def test_recommendation_resource_recommendation(rec: Recommendation) -> None:
    assert recommendation_from_resource(recommendation_to_resource(rec)) == rec


@settings(max_examples=examples(400))
@given(recommendations())
def test_resource_json_resource(rec: Recommendation) -> None:
    obj = recommendation_to_resource(rec)
    again = orjson.loads(orjson.dumps(obj))
    assert again == obj
    assert recommendation_to_resource(recommendation_from_resource(again)) == obj


@settings(max_examples=examples(300))
@given(recommendations(), st.dictionaries(st.text(min_size=1, max_size=12), st.integers() | st.text()))
def test_unknown_fields_are_ignored(rec: Recommendation, extra: dict[str, object]) -> None:
    obj = recommendation_to_resource(rec)
    known = copy.deepcopy(obj)
    for node in (obj, obj["metadata"], obj["spec"], obj["spec"]["targetRef"], obj["status"]):
        node.update({f"future-{k}": v for k, v in extra.items()})
    for container in obj["status"]["containers"]:
        container.update({f"future-{k}": v for k, v in extra.items()})
    assert recommendation_from_resource(obj) == recommendation_from_resource(known) == rec


def _without_version(rec: Recommendation) -> Recommendation:
    return Recommendation(**{**rec.__dict__, "resource_version": None})


@settings(max_examples=examples(100))
@given(
    st.lists(
        recommendations().map(_without_version),
        max_size=5,
        unique_by=lambda r: (r.target.cluster, r.namespace, r.name),
    )
)
def test_json_file_store_round_trip(recs: list[Recommendation]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = JsonFileStore(Path(tmp) / "recs.json")
        assert store.put_many(recs) == []
        assert store.list() == sorted(recs, key=lambda r: (r.target.cluster, r.namespace, r.name))
        doc = orjson.loads((Path(tmp) / "recs.json").read_bytes())
    assert doc["kind"] == "RecommendationList"
    assert len(doc["items"]) == len(recs)
