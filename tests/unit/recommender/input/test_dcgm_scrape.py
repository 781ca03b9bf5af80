"""DCGM scraping: the real exporter captures parse as is, labels of every exporter style normalise,
a malformed endpoint is reported while the others are stored, and the on-disk journal survives restarts."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from podsizer.api import WorkloadRef
from podsizer.owners import OwnerGraph, PodOwner
from recommender.input.dcgm_scrape import DcgmScrapeSource, normalize_labels, parse_exposition
from recommender.input.local_store import SeriesStore
from tests.support.trickle import Phase, TrickleServer

FIXTURES = Path("/work/shared/fixtures")
SAMPLE = (FIXTURES / "dcgm-sample.txt").read_text()
MIG_SAMPLE = (FIXTURES / "dcgm-mig-sample.txt").read_text()
T0 = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def test_real_capture_parses_as_is() -> None:
    samples = parse_exposition(SAMPLE)
    metrics = {m for m, _, _, _ in samples}
    # SM_ACTIVE is not in the default counters, so the capture lacks it.
    assert metrics == {
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_FB_RESERVED",
    }
    labels = samples[0][1]
    assert labels == {
        "hostname": "gpu1-wl8sg",
        "uuid": "GPU-5b4e07f6-3a86-4340-039d-25f2a83cdc43",
        "gpu": "0",
        "model": "NVIDIA L40S",
    }
    values = {m: v for m, _, v, _ in samples}
    assert values["DCGM_FI_DEV_FB_FREE"] == 45459
    assert values["DCGM_FI_PROF_DRAM_ACTIVE"] == pytest.approx(0.000131)


def test_mig_old_namespace_capture_parses_as_is() -> None:
    samples = parse_exposition(MIG_SAMPLE)
    assert [m for m, _, _, _ in samples] == ["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] * 3
    profiles = [(lbl["uuid"][:12], lbl["mig_profile"], lbl["mig_instance"]) for _, lbl, _, _ in samples]
    assert profiles == [
        ("GPU-ed1353d6", "3g.40gb", "1"),
        ("GPU-ed1353d6", "4g.40gb", "2"),
        ("GPU-6043e4b2", "3g.40gb", "1"),
    ]
    assert all("pod" not in lbl for _, lbl, _, _ in samples)  # empty pod_name = not attached


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({"Hostname": "a", "UUID": "U"}, {"hostname": "a", "uuid": "U"}),
        ({"hostname": "b", "uuid": "u"}, {"hostname": "b", "uuid": "u"}),
        (
            {"pod": "p", "namespace": "n", "container": "c"},
            {"pod": "p", "namespace": "n", "container": "c"},
        ),
        (
            {"pod_name": "p", "pod_namespace": "n", "container_name": "c"},
            {"pod": "p", "namespace": "n", "container": "c"},
        ),
        (
            {
                "pod": "dcgm-exporter-x",
                "exported_pod": "p",
                "namespace": "gpu-operator",
                "exported_namespace": "n",
                "container": "exporter",
                "exported_container": "c",
            },
            {"pod": "p", "namespace": "n", "container": "c"},
        ),
        ({"pod": "", "namespace": "", "container": ""}, {}),
        ({"GPU_I_PROFILE": "1g.10gb", "GPU_I_ID": "7"}, {"mig_profile": "1g.10gb", "mig_instance": "7"}),
        (
            {"modelName": "NVIDIA H100 80GB HBM3", "vgpu": "2"},
            {"model": "NVIDIA H100 80GB HBM3", "vgpu": "2"},
        ),
    ],
)
def test_label_styles_normalise(labels: dict[str, str], expected: dict[str, str]) -> None:
    assert normalize_labels(labels) == expected


def _pod_capture(pod: str, sm: float | None, gr: float, used: float) -> str:
    lbl = (
        f'gpu="0",UUID="GPU-{pod}",device="nvidia0",modelName="NVIDIA A100 80GB PCIe",hostname="node-{pod}",'
        f'namespace="ml",pod="{pod}",container="main"'
    )
    lines = [
        "# HELP DCGM_FI_PROF_GR_ENGINE_ACTIVE Ratio of time the graphics engine is active.",
        "# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge",
        f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{lbl}}} {gr}",
        f"DCGM_FI_DEV_FB_USED{{{lbl}}} {used}",
        f"DCGM_FI_DEV_FB_FREE{{{lbl}}} {81920 - 512 - used}",
        f"DCGM_FI_DEV_FB_RESERVED{{{lbl}}} 512",
        f"DCGM_FI_DEV_POWER_USAGE{{{lbl}}} 100",
    ]
    if sm is not None:
        lines.append(f"DCGM_FI_PROF_SM_ACTIVE{{{lbl}}} {sm}")
    return "\n".join(lines) + "\n"


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


GRAPH = OwnerGraph.build(
    [PodOwner("ml", "infer-0", "StatefulSet", "infer"), PodOwner("ml", "train-0", "StatefulSet", "train")], []
)


def _source(
    pages: dict[str, Callable[[], httpx.Response]], store: SeriesStore, clock: Clock
) -> DcgmScrapeSource:
    def handler(request: httpx.Request) -> httpx.Response:
        return pages[str(request.url)]()

    return DcgmScrapeSource(list(pages), store, clock, httpx.MockTransport(handler), resolver=GRAPH)


def test_malformed_endpoint_is_reported_and_others_stored() -> None:
    clock = Clock()
    store = SeriesStore(retention_seconds=7 * 86400)
    pages = {
        "http://a:9400/metrics": lambda: httpx.Response(200, text=_pod_capture("infer-0", 0.3, 0.4, 2000)),
        "http://b:9400/metrics": lambda: httpx.Response(200, text='DCGM_FI_DEV_GPU_UTIL{gpu="0" 12\n'),
        "http://c:9400/metrics": lambda: httpx.Response(503, text="exporter starting"),
        "http://d:9400/metrics": lambda: httpx.Response(200, text=SAMPLE),
    }
    with _source(pages, store, clock) as source:
        result = source.scrape_once()
    assert result.endpoints_ok == 2
    errors = {e.endpoint: e.message for e in result.errors}
    assert set(errors) == {"http://b:9400/metrics", "http://c:9400/metrics"}
    assert errors["http://b:9400/metrics"].startswith("malformed exposition text: could not convert string")
    assert "HTTP 503" in errors["http://c:9400/metrics"]
    assert result.samples == 5 + 6  # infer-0: 5 read metrics; the fixture: 6


def test_transport_failure_is_reported() -> None:
    def boom() -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    with _source({"http://x:9400/metrics": boom}, SeriesStore(3600), Clock()) as source:
        result = source.scrape_once()
    assert result.endpoints_ok == 0
    assert "ConnectError: connection refused" in result.errors[0].message


@pytest.mark.parametrize("phase", ["headers", "body"])
def test_a_trickling_exporter_is_given_up_after_the_timeout_in_all(phase: Phase) -> None:
    with TrickleServer(every=0.5, phase=phase, lasting=60.0) as server:
        source = DcgmScrapeSource([f"{server.url}/metrics"], SeriesStore(3600), Clock(), timeout=2.0)
        t0 = time.monotonic()
        with source:
            result = source.scrape_once()
        took = time.monotonic() - t0
    assert took < 10, f"{took:.1f}s against a trickle of 60s"
    assert result.endpoints_ok == 0
    assert result.errors[0].message == "no complete answer within 2s (ReadTimeout)"


def test_collect_turns_scrapes_into_gpu_usage() -> None:
    clock = Clock()
    store = SeriesStore(retention_seconds=7 * 86400)
    state = {"i": 0}

    def infer() -> httpx.Response:
        return httpx.Response(
            200, text=_pod_capture("infer-0", 0.1 * state["i"], 0.5, 1000 + 100 * state["i"])
        )

    def train() -> httpx.Response:  # default counters: no SM_ACTIVE
        return httpx.Response(200, text=_pod_capture("train-0", None, 0.9, 70000))

    pages = {
        "http://a:9400/metrics": infer,
        "http://b:9400/metrics": train,
        "http://c:9400/metrics": lambda: httpx.Response(200, text=SAMPLE),
    }
    with _source(pages, store, clock) as source:
        for i in range(5):
            state["i"] = i
            clock.now = T0 + timedelta(seconds=30 * i)
            source.scrape_once()
        snap = source.collect(T0, T0 + timedelta(minutes=5))
    by_pod = {g.pod: g for g in snap.gpus}
    infer_usage, train_usage = by_pod["infer-0"], by_pod["train-0"]
    assert infer_usage.workload == WorkloadRef("ml", "StatefulSet", "infer")
    assert infer_usage.activity_signal == "SM_ACTIVE"
    assert infer_usage.activity.max == pytest.approx(0.4)
    assert infer_usage.fb_used_max_mib == 1400
    assert infer_usage.fb_total_mib == 81920
    assert infer_usage.node == "node-infer-0"
    assert train_usage.activity_signal == "GR_ENGINE_ACTIVE"
    assert train_usage.activity.p50 == pytest.approx(0.9)
    assert snap.source == "dcgm-scrape"
    assert any(s.reason == "GPU not attached to a pod" for s in snap.skipped)


def test_without_resolver_pods_are_skipped() -> None:
    pages = {"http://a/metrics": lambda: httpx.Response(200, text=_pod_capture("infer-0", 0.3, 0.4, 1))}
    source = DcgmScrapeSource(
        list(pages), SeriesStore(3600), Clock(), httpx.MockTransport(lambda r: pages[str(r.url)]())
    )
    source.scrape_once()
    snap = source.collect(T0, T0 + timedelta(minutes=1))
    source.close()
    assert snap.gpus == ()
    assert "no owner resolver" in snap.skipped[0].reason


def test_journal_survives_restart_and_retention_drops_old(tmp_path: Path) -> None:
    path = tmp_path / "dcgm.journal"
    store = SeriesStore(retention_seconds=120, path=path)
    for i in range(5):
        store.append(1000.0 + 60 * i, [("DCGM_FI_DEV_GPU_UTIL", {"uuid": "U"}, float(i))])
    ((_, ts, vs),) = list(store.series())
    assert ts.tolist() == [1120.0, 1180.0, 1240.0]  # older than 120 s before the newest are gone
    with path.open("ab") as fh:
        fh.write(b'{"t": 1300, "s": [["DCGM_FI_DEV_GPU_UTIL", {"uuid"')  # torn last line
    again = SeriesStore(retention_seconds=120, path=path)
    ((_, ts2, vs2),) = list(again.series())
    assert ts2.tolist() == ts.tolist() and vs2.tolist() == vs.tolist()
    assert again.skipped_lines == 1


def test_journal_is_compacted(tmp_path: Path) -> None:
    path = tmp_path / "dcgm.journal"
    store = SeriesStore(retention_seconds=10, path=path)
    batch = [("DCGM_FI_DEV_GPU_UTIL", {"uuid": f"U{i}"}, 1.0) for i in range(50)]
    for i in range(200):
        store.append(float(i), batch)
    lines = path.read_bytes().splitlines()
    assert len(lines) < 100  # without compaction: 200
    assert store.live_samples() == 50 * 11
    assert SeriesStore(retention_seconds=10, path=path).live_samples() == 50 * 11


def test_store_window_filter() -> None:
    store = SeriesStore(retention_seconds=1000)
    for t in (10.0, 20.0, 30.0):
        store.append(t, [("M", {}, t)])
    ((_, ts, _),) = list(store.series(15.0, 30.0))
    assert ts.tolist() == [20.0]
