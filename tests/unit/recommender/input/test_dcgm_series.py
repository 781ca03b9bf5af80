"""dcgm-exporter series of any label style become one GpuSamples per GPU and container."""

from __future__ import annotations

import math

import numpy as np

from recommender.input.dcgm import gpu_samples, normalize_labels
from recommender.model import FloatArray


def arr(*xs: float) -> FloatArray:
    return np.array(xs, dtype=np.float64)


CURRENT = {"gpu": "0", "UUID": "GPU-1", "Hostname": "n1", "namespace": "ml", "pod": "p", "container": "c"}
OLD = {
    "gpu": "0",
    "uuid": "GPU-1",
    "hostname": "n1",
    "pod_namespace": "ml",
    "pod_name": "p",
    "container_name": "c",
}


def test_metrics_of_one_gpu_in_any_label_style_share_one_time_grid() -> None:
    (g,) = gpu_samples(
        [
            ("DCGM_FI_PROF_SM_ACTIVE", normalize_labels(CURRENT), arr(0, 60), arr(0.5, 0.7)),
            ("dcgm_fi_dev_fb_used", normalize_labels(OLD), arr(60, 120), arr(100.0, 200.0)),
            ("DCGM_FI_DEV_FB_RESERVED", normalize_labels(CURRENT), arr(0), arr(608.0)),
            ("DCGM_FI_DEV_POWER_USAGE", normalize_labels(CURRENT), arr(0), arr(300.0)),
        ]
    )
    assert (g.namespace, g.pod, g.container, g.hostname, g.uuid) == ("ml", "p", "c", "n1", "GPU-1")
    assert g.timestamps.tolist() == [0, 60, 120]
    assert g.sm_active is not None and g.sm_active[:2].tolist() == [0.5, 0.7] and math.isnan(g.sm_active[2])
    assert math.isnan(g.fb_used_mib[0]) and g.fb_used_mib[1:].tolist() == [100.0, 200.0]
    assert g.fb_reserved_mib == 608.0
    assert g.gr_engine_active is None and g.gpu_util_percent is None


def test_two_series_of_one_gpu_and_metric_join_into_one_time_line() -> None:
    labels = normalize_labels(CURRENT)
    (g,) = gpu_samples(
        [
            ("DCGM_FI_DEV_GPU_UTIL", labels, arr(120, 180), arr(30.0, 40.0)),
            ("DCGM_FI_DEV_GPU_UTIL", labels, arr(0, 60), arr(10.0, 20.0)),
        ]
    )
    assert g.gpu_util_percent is not None and g.gpu_util_percent.tolist() == [10.0, 20.0, 30.0, 40.0]


def test_mig_instances_of_one_card_stay_apart() -> None:
    mig = {"GPU_I_PROFILE": "3g.40gb"}
    a, b = gpu_samples(
        [
            (
                "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                normalize_labels(OLD | mig | {"GPU_I_ID": "1"}),
                arr(0),
                arr(0.1),
            ),
            (
                "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                normalize_labels(OLD | mig | {"GPU_I_ID": "2"}),
                arr(0),
                arr(0.2),
            ),
        ]
    )
    assert (a.mig_instance_id, b.mig_instance_id) == ("1", "2")
    assert a.mig_profile == b.mig_profile == "3g.40gb"
