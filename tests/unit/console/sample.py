"""Hand-built ConsoleData for the console's unit tests (numbers chosen so each figure is checkable)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from console.data import (
    Chart,
    ContainerRow,
    CostLine,
    CostRollup,
    GpuDevice,
    GpuNode,
    GpuPodRow,
    Line,
    Meta,
    MigInstance,
    PodDetail,
    PodRow,
    Reference,
    SkippedRow,
    StaticConsoleData,
    WorkloadRow,
)
from podsizer.api.identity import WorkloadRef
from podsizer.subject import Subject
from recommender.sizing.waste import WasteFinding

MIB = 1024.0 * 1024.0
GIB = 1024.0 * MIB
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
START = NOW - timedelta(days=7)

WEB = WorkloadRef("shop", "Deployment", "web")
BILLING = WorkloadRef("legacy", "DeploymentConfig", "billing")
TRAIN = WorkloadRef("ml", "StatefulSet", "train")
NOTEBOOK = WorkloadRef("ml", "Deployment", "notebook")


def _ts(n: int) -> np.ndarray:
    return START.timestamp() + 300.0 * np.arange(n, dtype=np.float64)


def sample_data() -> StaticConsoleData:
    workloads = (
        WorkloadRow(
            workload=WEB,
            mode="auto",
            mode_source="podsizer.io/mode annotation",
            sizing_mode="static",
            reason="static: no horizontal autoscaler",
            pods=("web-abc12", "web-def34"),
            containers=(
                ContainerRow(
                    name="web",
                    current_requests={"cpu": 1.0, "memory": 2 * GIB},
                    recommended_requests={"cpu": 0.25, "memory": 512 * MIB},
                    recommended_limits={"memory": 640 * MIB},
                    confidence=0.9,
                    low_confidence=False,
                    reason="P99 + 15 %",
                    current_limits={"memory": 2 * GIB},
                    planned_requests={"cpu": 0.25, "memory": 512 * MIB},
                    planned_limits={"memory": 512 * MIB},  # keep-ratio: limit == request before and after
                ),
            ),
        ),
        WorkloadRow(
            workload=BILLING,
            mode="dry-run",
            mode_source="default",
            sizing_mode="static",
            reason="static: no horizontal autoscaler",
            pods=("billing-7-x1y2z",),
            containers=(
                ContainerRow(
                    name="billing",
                    current_requests={"cpu": 0.5, "memory": 1 * GIB},
                    recommended_requests={"cpu": 0.75, "memory": 1 * GIB},
                    recommended_limits={"memory": 1.25 * GIB},
                    confidence=0.4,
                    low_confidence=False,
                    reason="thin history",
                    planned_requests={"cpu": 0.75, "memory": 1 * GIB},
                ),
            ),
        ),
        WorkloadRow(
            workload=TRAIN,
            mode="auto",
            mode_source="podsizer.io/mode pod annotation",
            sizing_mode="autopilot",
            reason="autopilot: HorizontalPodAutoscaler train",
            pods=("train-0",),
            containers=(
                ContainerRow(
                    name="trainer",
                    current_requests={"cpu": 8.0, "memory": 64 * GIB, "nvidia.com/gpu": 4.0},
                    recommended_requests={"cpu": 6.0, "memory": 48 * GIB, "nvidia.com/gpu": 2.0},
                    recommended_limits={"memory": 60 * GIB, "nvidia.com/gpu": 2.0},
                    confidence=1.0,
                    low_confidence=False,
                    reason="activity p95 0.7 over 4 GPUs",
                    planned_requests={"cpu": 6.0, "memory": 48 * GIB, "nvidia.com/gpu": 2.0},
                ),
            ),
            gpu_resize=True,
            gpu_hourly_cost=10.0,
            gpu_wasted_hourly_cost=0.0,
            gpu_allocated=4,
        ),
        WorkloadRow(
            workload=NOTEBOOK,
            mode="dry-run",
            mode_source="default",
            sizing_mode="static",
            reason="static: no horizontal autoscaler",
            pods=("notebook-q8r9s",),
            containers=(
                ContainerRow(
                    name="jupyter",
                    current_requests={"cpu": 2.0, "memory": 8 * GIB, "nvidia.com/gpu": 1.0},
                    recommended_requests={"cpu": 0.5, "memory": 6 * GIB, "nvidia.com/gpu": 1.0},
                    recommended_limits={"memory": 7.5 * GIB, "nvidia.com/gpu": 1.0},
                    confidence=1.0,
                    low_confidence=False,
                    reason="idle GPU",
                    planned_requests={"cpu": 0.5, "memory": 6 * GIB, "nvidia.com/gpu": 1.0},
                ),
            ),
            gpu_hourly_cost=1.861,
            gpu_wasted_hourly_cost=1.861,
            gpu_allocated=1,
            gpu_suggested_resource="nvidia.com/mig-1g.10gb",
        ),
    )
    nodes = (
        GpuNode(
            name="gpu-a",
            model="NVIDIA-A100-SXM4-80GB",
            gpu_count=2,
            gpu_memory_mib=81920.0,
            instance_type="p4de.24xlarge",
            capacity_type="on-demand",
            mig_strategy="mixed",
            allocated_gpus=1,
            allocated_mig={"3g.40gb": 1},
            devices=(
                GpuDevice(
                    "0",
                    "GPU-aaaa",
                    "NVIDIA A100 80GB",
                    ("ml/train-0",),
                    (MigInstance("3g.40gb", "1", "ml/train-0"), MigInstance("4g.40gb", "2", None)),
                ),
                GpuDevice("1", "GPU-bbbb", "NVIDIA A100 80GB", ("ml/train-0",)),
            ),
        ),
        GpuNode(
            name="gpu-b",
            model="NVIDIA-L40S",
            gpu_count=1,
            gpu_memory_mib=46068.0,
            instance_type="g6e.xlarge",
            capacity_type="spot",
            mig_strategy=None,
            allocated_gpus=1,
            devices=(GpuDevice("0", "GPU-cccc", "NVIDIA L40S", ("ml/notebook-q8r9s",)),),
        ),
    )
    gpu_pods = (
        GpuPodRow(
            TRAIN,
            "train-0",
            "trainer",
            "gpu-a",
            "NVIDIA A100 80GB",
            4,
            None,
            "SM_ACTIVE",
            0.7,
            0.55,
            0.42,
            30000.0,
            327680.0,
            10.0,
            False,
        ),
        GpuPodRow(
            NOTEBOOK,
            "notebook-q8r9s",
            "jupyter",
            "gpu-b",
            "NVIDIA L40S",
            1,
            None,
            "GR_ENGINE_ACTIVE",
            0.02,
            0.01,
            None,
            12000.0,
            46068.0,
            1.861,
            True,
        ),
    )
    waste = (
        WasteFinding(
            workload=NOTEBOOK,
            container="jupyter",
            pod="notebook-q8r9s",
            node="gpu-b",
            model="NVIDIA L40S",
            gpus=1,
            activity_signal="GR_ENGINE_ACTIVE",
            idle_since=NOW - timedelta(hours=30),
            idle_hours=30.0,
            threshold=0.05,
            hourly_cost=1.861,
            wasted_hourly_cost=1.861,
            price_basis="on-demand",
        ),
    )
    costs = CostRollup(
        by_workload=(CostLine(str(NOTEBOOK), 1.861, 1.861), CostLine(str(TRAIN), 10.0, 0.0)),
        by_namespace=(CostLine("ml", 11.861, 1.861),),
        cluster=CostLine("cluster", 11.861, 1.861),
    )
    n = 2016
    ts = _ts(n)
    cpu = 0.2 + 0.05 * np.sin(np.arange(n) / 50.0)
    mem = 400 * MIB + 10 * MIB * np.cos(np.arange(n) / 80.0)
    activity = np.full(n, 0.6)
    activity[100:200] = np.nan  # a scrape gap
    details = (
        PodDetail(
            PodRow("shop", "web-abc12", "node-1", WEB, False),
            (
                Chart(
                    "cpu",
                    "CPU usage",
                    "cores",
                    (Line("web", ts, cpu),),
                    (Reference("web request", 1.0), Reference("web recommended", 0.25)),
                ),
                Chart(
                    "memory",
                    "Memory working set",
                    "bytes",
                    (Line("web", ts, mem),),
                    (Reference("web request", 2 * GIB),),
                ),
            ),
        ),
        PodDetail(PodRow("shop", "web-def34", "node-2", WEB, False), ()),
        PodDetail(
            PodRow("ml", "train-0", "gpu-a", TRAIN, True),
            (
                Chart(
                    "gpu-activity",
                    "GPU activity (SM_ACTIVE)",
                    "ratio",
                    (Line("GPU 0", ts, activity), Line("GPU 1", ts[:500], np.full(500, 0.8))),
                ),
                Chart(
                    "framebuffer",
                    "Framebuffer used",
                    "MiB",
                    (Line("GPU 0", ts, np.full(n, 30000.0)),),
                    (Reference("GPU 0 total", 81920.0),),
                ),
            ),
        ),
    )
    return StaticConsoleData(
        info=Meta("hand-built", NOW, START, NOW),
        workload_rows=workloads,
        skipped_rows=(
            SkippedRow(Subject.of_pod("legacy", "billing-7-deploy"), "OpenShift deployer or hook pod"),
        ),
        nodes=nodes,
        gpu_pod_rows=gpu_pods,
        waste_rows=waste,
        cost_rollup=costs,
        details=details,
    )
