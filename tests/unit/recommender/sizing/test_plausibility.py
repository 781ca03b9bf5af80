"""The recommender under bad metrics: impossible samples cannot move a recommendation, nothing above the
ceiling or unencodable is emitted, stores skip what they cannot encode, negative usage never replaces a
good recommendation, and every sample ignored is named in the container's reason."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import orjson
import pytest

from podsizer.api.identity import WorkloadRef
from podsizer.api.listdoc import list_document
from podsizer.api.quantity import MIB, parse
from podsizer.api.resource import ContainerRecommendation, Recommendation, recommendation_to_resource
from podsizer.plausibility import Ceilings
from podsizer.resources import GPU
from podsizer.sizing_policy import SizingPolicy
from podsizer.subject import Subject
from recommender.model import (
    ContainerUsage,
    NodeInfo,
    Quantiles,
    RejectedSamples,
    TimeSeries,
    UsageSnapshot,
    WorkloadDemand,
)
from recommender.model.aggregate import aggregate
from recommender.model.histogram import CPU_BUCKETS
from recommender.model.raw import ContainerSamples, OwnerLink, PodInfo, RawDataset
from recommender.output.store.jsonfile import JsonFileStore
from recommender.sizing.cost import PriceTable
from recommender.sizing.engine import RecommendationRun, recommend
from recommender.sizing.robust import SPIKE_FACTOR, RobustUsage, robust_usage

END = datetime(2026, 11, 8, tzinfo=UTC)
START = END - timedelta(days=7)
NOW = END + timedelta(minutes=5)
WEB = WorkloadRef("shop", "Deployment", "web")
GIB = 2.0**30
RNG = np.random.default_rng(7)


def _usage(cpu: np.ndarray, memory: np.ndarray, **extra: object) -> ContainerUsage:
    return ContainerUsage(
        WEB,
        "app",
        Quantiles.of(cpu),
        Quantiles.of(memory),
        float(np.median(cpu)),
        float(np.median(memory)),
        20160,
        START,
        END,
        **extra,  # type: ignore[arg-type]
    )


def _steady_cpu(n: int = 5000) -> np.ndarray:
    return RNG.uniform(0.1, 0.2, n)


def _steady_memory(n: int = 5000) -> np.ndarray:
    return RNG.uniform(400, 500, n) * MIB


def _run(*containers: ContainerUsage, nodes: tuple[NodeInfo, ...] = (), **policy: float) -> RecommendationRun:
    snap = UsageSnapshot(START, END, containers=containers, nodes=nodes)
    return recommend(snap, SizingPolicy(**policy), PriceTable.load(), NOW)


def _only(run: RecommendationRun) -> ContainerRecommendation:
    (rec,) = run.recommendations
    (c,) = rec.containers
    return c


def test_one_2_64_byte_sample_among_thousands_moves_neither_the_percentile_nor_the_peak_floor() -> None:
    memory = np.append(_steady_memory(), 2.0**64 - 1)
    clean = _only(_run(_usage(_steady_cpu(), _steady_memory())))
    c = _only(_run(_usage(_steady_cpu(), memory)))
    assert parse(c.requests["memory"]) < 600 * MIB
    assert abs(parse(c.requests["memory"]) - parse(clean.requests["memory"])) <= 20 * MIB
    assert "memory peak 17592186044416Mi above the configured ceiling ignored" in c.reason


def test_a_sample_above_the_largest_nodes_allocatable_is_ignored_and_named() -> None:
    nodes = (NodeInfo("a", "m5.4xlarge", "on-demand", allocatable={"cpu": 16.0, "memory": 60 * GIB}),)
    memory = np.append(_steady_memory(), 100 * GIB)
    c = _only(_run(_usage(_steady_cpu(), memory), nodes=nodes))
    assert parse(c.requests["memory"]) < 600 * MIB
    assert "memory peak 102400Mi above node allocatable ignored" in c.reason


def test_samples_the_aggregation_rejected_are_named_with_their_count() -> None:
    rejected = (RejectedSamples("memory", "above-allocatable", 1), RejectedSamples("cpu", "negative", 3))
    c = _only(_run(_usage(_steady_cpu(), _steady_memory(), rejected=rejected)))
    assert "1 sample of memory above node allocatable ignored" in c.reason
    assert "3 samples of cpu negative ignored" in c.reason


def test_an_isolated_spike_far_above_the_next_highest_sample_does_not_set_the_peak_floor() -> None:
    q = Quantiles(400 * MIB, 450 * MIB, 470 * MIB, 490 * MIB, 40 * GIB, 430 * MIB, second_max=500 * MIB)
    usage = _usage(_steady_cpu(), _steady_memory())
    robust = robust_usage(
        ContainerUsage(WEB, "app", usage.cpu_cores, q, 0.15, 430 * MIB, 20160, START, END), Ceilings()
    )
    assert robust.usage.memory_bytes.max == 500 * MIB
    assert robust.notes == (
        f"memory peak 40960Mi ignored (1 sample, fewer than 3 samples reach 1/{SPIKE_FACTOR:g} of it: not "
        "corroborated); peak 500Mi",
    )


def test_a_peak_within_the_spike_factor_is_kept_as_the_floor() -> None:
    q = Quantiles(400 * MIB, 450 * MIB, 470 * MIB, 490 * MIB, 2 * GIB, 430 * MIB, second_max=1 * GIB)
    usage = ContainerUsage(WEB, "app", Quantiles.of(_steady_cpu()), q, 0.15, 430 * MIB, 20160, START, END)
    assert robust_usage(usage, Ceilings()) == RobustUsage(usage)  # unchanged, nothing named


def test_a_1e300_core_sample_neither_crashes_the_run_nor_the_json_store(tmp_path: Path) -> None:
    run = _run(_usage(np.append(_steady_cpu(), 1e300), _steady_memory()))
    c = _only(run)
    assert parse(c.requests["cpu"]) < 1.0
    store = JsonFileStore(tmp_path / "recs.json")
    assert store.put_many(run.recommendations) == []
    assert store.list()[0].containers[0].requests == c.requests


def test_every_sample_at_1e300_is_refused_at_the_ceiling_not_written_as_1e300(tmp_path: Path) -> None:
    run = _run(_usage(np.full(5000, 1e300), np.full(5000, 1e300)))
    c = _only(run)
    assert c.requests["cpu"] == "256000m" and c.requests["memory"] == f"{4 * 2**20}Mi"
    assert c.limits["memory"] == f"{4 * 2**20}Mi"  # request x 1.25, capped too
    assert "capped at the configured ceiling" in c.reason
    assert (c.low_confidence, c.confidence) == (True, 0.0)  # refused: never applied
    refused = "implausible cpu series: the estimate reaches the configured ceiling 256000m: not applied"
    assert refused in c.reason
    assert JsonFileStore(tmp_path / "recs.json").put_many(run.recommendations) == []


def test_a_series_just_under_the_ceiling_is_recommended_with_its_confidence() -> None:
    run = _run(_usage(np.full(5000, 100.0), _steady_memory()))  # 100 cores, under the 256-core ceiling
    c = _only(run)
    assert not c.low_confidence and "implausible" not in c.reason


def test_a_gpu_count_above_the_ceiling_is_capped() -> None:
    from recommender.sizing.engine import _gpu_count

    assert _gpu_count(GPU, 1000, Ceilings()) == (
        16,
        "nvidia.com/gpu 1000 capped at the configured ceiling 16",
    )
    assert _gpu_count("nvidia.com/mig-1g.10gb", 1000, Ceilings())[0] == 1000
    assert _gpu_count(GPU, 4, Ceilings(gpus=8.0, source="nodes")) == (4, "")


def test_an_impossible_forecast_is_left_out_and_the_recommendation_still_stores(tmp_path: Path) -> None:
    hours = np.full(24 * 7, 1e300)
    demand = WorkloadDemand(WEB, TimeSeries(START, 3600.0, hours), TimeSeries(START, 3600.0, hours))
    snap = UsageSnapshot(START, END, containers=(_usage(_steady_cpu(), _steady_memory()),), demand=(demand,))
    (rec,) = recommend(snap, SizingPolicy(), PriceTable.load(), NOW).recommendations
    assert rec.forecast is None and "forecast unavailable: implausible" in rec.reason
    assert JsonFileStore(tmp_path / "recs.json").put_many([rec]) == []


def test_negative_samples_count_as_zero_and_are_named() -> None:
    memory = np.concatenate([_steady_memory(4990), np.full(10, -5 * GIB)])
    usage = _usage(_steady_cpu(), memory)
    with_min = replace(usage, memory_bytes=replace(usage.memory_bytes, min=-5 * GIB))  # as aggregated
    c = _only(_run(with_min))
    assert parse(c.requests["memory"]) > 400 * MIB
    assert "negative memory samples counted as zero" in c.reason


def test_negative_usage_never_replaces_a_good_recommendation_with_floors(tmp_path: Path) -> None:
    store = JsonFileStore(tmp_path / "recs.json")
    good = _run(_usage(_steady_cpu(), _steady_memory()))
    assert store.put_many(good.recommendations) == []
    bad = _run(_usage(np.full(5000, -0.5), _steady_memory()))
    assert bad.recommendations == ()
    (skip,) = bad.skipped
    assert skip.subject == Subject.of_workload(WEB) and skip.failed
    assert "cpu: no usable samples" in skip.reason
    assert store.put_many(bad.recommendations) == []
    assert store.list()[0].containers == good.recommendations[0].containers


def _unencodable() -> Recommendation:
    good = _run(_usage(_steady_cpu(), _steady_memory())).recommendations[0]
    (c,) = good.containers
    broken = ContainerRecommendation(c.name, {"cpu": "1" + "0" * 300}, {}, c.confidence, c.reason)
    return Recommendation(WorkloadRef("shop", "Deployment", "bad"), NOW, good.window, "static", (broken,))


def test_the_json_store_skips_an_unencodable_recommendation_and_writes_the_rest(tmp_path: Path) -> None:
    good = _run(_usage(_steady_cpu(), _steady_memory())).recommendations[0]
    store = JsonFileStore(tmp_path / "recs.json")
    failed = store.put_many([_unencodable(), good])
    assert [rec.target.name for rec, _ in failed] == ["bad"]
    assert "over 2^63-1" in str(failed[0][1])
    assert [r.target for r in store.list()] == [WEB]


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"maxAllowed": {"cpu": "-1"}}, "maxAllowed.cpu: quantity '-1' is negative"),
        (
            {"minAllowed": {"cpu": "2"}, "maxAllowed": {"cpu": "1"}},
            "minAllowed.cpu: 2 is above maxAllowed.cpu 1",
        ),
    ],
)
def test_the_store_rejects_bad_bounds_and_the_recommender_reports_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, policy: dict[str, object], message: str
) -> None:
    good = _run(_usage(_steady_cpu(), _steady_memory())).recommendations[0]
    item = recommendation_to_resource(good)
    item["spec"]["resourcePolicy"] = {"containers": [{"containerName": "*", **policy}]}
    doc = list_document([item])
    path = tmp_path / "recs.json"
    path.write_bytes(orjson.dumps(doc))
    with caplog.at_level(logging.WARNING, logger="podsizer.store"):
        assert JsonFileStore(path).bounds() == {}
    assert message in caplog.text and "skipped" in caplog.text


# --- the aggregation: impossible samples are gaps, counted, and named by sizing ----------------------------

_AGG_START = END - timedelta(hours=2)
_TS = _AGG_START.timestamp() + 300.0 * np.arange(24)


def _raw(cpu: np.ndarray, memory: np.ndarray, nodes: tuple[NodeInfo, ...] = ()) -> RawDataset:
    """One container's samples, 5 minutes apart up to END (24 of them: the last two hours)."""
    pod = PodInfo("shop", "web-abc-1", "n1", "ReplicaSet", "web-abc")
    owner = OwnerLink("shop", "ReplicaSet", "web-abc", "Deployment", "web")
    ts = _TS if cpu.size == _TS.size else END.timestamp() - 300.0 * np.arange(cpu.size, 0, -1)
    series = ContainerSamples("shop", "web-abc-1", "app", ts, cpu, memory)
    return RawDataset(
        min(_AGG_START, datetime.fromtimestamp(ts[0], UTC)), END, (pod,), (owner,), (series,), nodes=nodes
    )


def test_the_aggregation_drops_negative_infinite_and_above_allocatable_samples_and_counts_them() -> None:
    cpu = np.full(24, 0.2)
    cpu[[1, 2]] = -1.0
    cpu[3] = np.inf
    memory = np.full(24, 400 * MIB)
    memory[4] = 100 * GIB
    nodes = (NodeInfo("n1", None, "on-demand", allocatable={"cpu": 8.0, "memory": 32 * GIB}),)
    (usage,) = aggregate(_raw(cpu, memory, nodes), source="test").containers
    assert usage.cpu_cores.max == 0.2 and usage.memory_bytes.max == 400 * MIB
    assert usage.cpu_cores.p50 == pytest.approx(0.2, abs=CPU_BUCKETS.resolution(0.2))
    assert set(usage.rejected) == {
        RejectedSamples("cpu", "negative", 2),
        RejectedSamples("cpu", "non-finite", 1),
        RejectedSamples("memory", "above-allocatable", 1),
    }
    (rec,) = recommend(
        UsageSnapshot(START, END, containers=(usage,), nodes=nodes), SizingPolicy(), PriceTable.load(), NOW
    ).recommendations
    assert "1 sample of memory above node allocatable ignored" in rec.containers[0].reason
    assert "2 samples of cpu negative ignored" in rec.containers[0].reason


def test_quantiles_carry_the_next_highest_sample_so_an_isolated_spike_is_seen() -> None:
    memory = np.full(240, 400 * MIB)
    memory[7] = 30 * GIB  # below the configured ceiling, but 75x every other sample
    (usage,) = aggregate(_raw(np.full(240, 0.2), memory), source="test").containers
    assert usage.memory_bytes.second_max == 400 * MIB
    assert robust_usage(usage, Ceilings()).usage.memory_bytes.max == 400 * MIB


def test_a_short_series_keeps_its_peak_whatever_its_shape() -> None:
    """A few-minute Job: two samples at 1 GiB after a 50 MiB start is its profile, not two bad scrapes."""
    memory = np.full(24, 50 * MIB)
    memory[[10, 11]] = GIB
    (usage,) = aggregate(_raw(np.full(24, 0.2), memory), source="test").containers
    assert robust_usage(usage, Ceilings()).usage.memory_bytes.max == GIB


def test_a_container_whose_cpu_samples_are_all_negative_skips_its_workload_naming_why() -> None:
    snap = aggregate(_raw(np.full(24, -0.5), np.full(24, 400 * MIB)), source="test")
    run = recommend(snap, SizingPolicy(), PriceTable.load(), NOW)
    assert run.recommendations == ()
    assert any("cpu: no usable samples (24 samples negative rejected)" in s.reason for s in run.skipped)
