"""The OpenMetrics writer: valid exposition (prometheus_client parses it), one file per 2 h block."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from recommender.model.raw import ContainerSamples, GpuSamples, PodInfo, RawDataset
from tests.support.openmetrics import BLOCK_SECONDS, dataset_families, window_text, write_dataset

START = datetime(2026, 12, 1, tzinfo=UTC)
END = START + timedelta(hours=5)


def dataset() -> RawDataset:
    ts = np.arange(START.timestamp(), END.timestamp() + 1, 60.0)
    cpu = np.full(ts.size, 0.5)
    cpu[3] = np.nan
    return RawDataset(
        START,
        END,
        pods=(PodInfo("ns", "web-1", "n1", "ReplicaSet", "web-abc", labels={"app": "web"}),),
        owners=(),
        containers=(ContainerSamples("ns", "web-1", "app", ts, cpu, np.full(ts.size, 1e8)),),
        gpus=(
            GpuSamples(
                "ns", "web-1", "app", "n1", "0", "GPU-1", "NVIDIA L40S", ts,
                np.full(ts.size, 100.0), np.full(ts.size, 900.0), gr_engine_active=np.full(ts.size, 0.3),
            ),
        ),
    )  # fmt: skip


def test_window_text_parses_as_openmetrics_with_counter_integrated_from_cores() -> None:
    fams = dataset_families(dataset())
    lo = START.timestamp()
    families = {f.name: f for f in text_string_to_metric_families(window_text(fams, lo, lo + BLOCK_SECONDS))}
    cpu = families["container_cpu_usage_seconds"]
    assert cpu.type == "counter"
    samples = [s for s in cpu.samples if s.name == "container_cpu_usage_seconds_total"]
    assert len(samples) == 120 - 1  # the NaN sample is not written
    assert samples[-1].value - samples[-2].value == 0.5 * 60
    assert families["kube_pod_labels"].samples[0].labels["label_app"] == "web"
    gr = families["DCGM_FI_PROF_GR_ENGINE_ACTIVE"].samples[0].labels
    assert (gr["UUID"], gr["Hostname"], gr["namespace"], gr["pod"]) == ("GPU-1", "n1", "ns", "web-1")


def test_one_file_per_two_hour_block_each_ending_with_eof(tmp_path: Path) -> None:
    files = write_dataset(dataset(), tmp_path, workers=2)
    assert [int(f.stem) % BLOCK_SECONDS for f in files] == [0] * len(files)
    assert len(files) == 3  # 00:00-05:00 touches three 2 h blocks
    for f in files:
        assert f.read_text().endswith("# EOF\n")
