"""The shipped CRDs install on a real apiserver and keep every field the Recommendation codec writes."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes import client

from podsizer.api import (
    API_GROUP,
    API_VERSION,
    PLURAL,
    ContainerRecommendation,
    Forecast,
    GpuRecommendation,
    Recommendation,
    Window,
    WorkloadRef,
    recommendation_from_resource,
)
from tests.controlplane.recommendations import put_recommendation
from tests.controlplane.rollouts import argo_crd_files
from tests.support.progress import TEST_TIMEOUT_S

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT_S)]

ARGO_CRDS = [
    "analysisruns.argoproj.io",
    "analysistemplates.argoproj.io",
    "clusteranalysistemplates.argoproj.io",
    "experiments.argoproj.io",
    "rollouts.argoproj.io",
]


def test_shipped_crds_are_established_and_served(
    admin_client: client.ApiClient, podsizer_crds: list[dict[str, Any]]
) -> None:
    names = sorted(crd["metadata"]["name"] for crd in podsizer_crds)
    # Argo Rollouts' own CRDs, as scripts/build_tools.py copied them (when it did).
    argo = ARGO_CRDS if argo_crd_files() else []
    assert names == sorted(
        [
            "deploymentconfigs.apps.openshift.io",
            "recommendations.podsizer.io",
            "usagecheckpoints.podsizer.io",
            *argo,
        ]
    )
    custom = client.CustomObjectsApi(admin_client)
    for crd in podsizer_crds:
        spec = crd["spec"]
        served = [v["name"] for v in spec["versions"] if v["served"]]
        for version in served:
            listed = custom.list_cluster_custom_object(spec["group"], version, spec["names"]["plural"])
            assert isinstance(listed, dict)
            assert listed["kind"] == spec["names"]["listKind"]


def test_recommendation_survives_the_crd_schema(
    admin_client: client.ApiClient,
    podsizer_crds: list[dict[str, Any]],
    make_namespace: Callable[..., str],
) -> None:
    ns = make_namespace(webhook=False)
    now = datetime.now(UTC).replace(microsecond=0)
    rec = Recommendation(
        target=WorkloadRef(ns, "Deployment", "trainer"),
        generated_at=now,
        window=Window(now - timedelta(days=7), now, 20160),
        sizing_mode="autopilot",
        containers=(
            ContainerRecommendation(
                "main",
                {"cpu": "1500m", "memory": "3Gi", "nvidia.com/gpu": "1"},
                {"memory": "4Gi", "nvidia.com/gpu": "1"},
                0.83,
                "p99 of 7 d plus 15 %",
            ),
        ),
        reason="HPA owns replicas",
        gpu=GpuRecommendation(
            model="NVIDIA A100-SXM4-80GB",
            allocated=1,
            sm_active_p95=0.12,
            fb_used_max_bytes=9 * 2**30,
            idle=False,
            suggested_resource="nvidia.com/mig-1g.10gb",
            hourly_cost=3.67,
            wasted_hourly_cost=2.9,
        ),
        forecast=Forecast(7.0, 1.4, float(3 * 2**30), "seasonal-naive"),
    )
    put_recommendation(admin_client, rec)
    stored = client.CustomObjectsApi(admin_client).get_namespaced_custom_object(
        API_GROUP, API_VERSION, ns, PLURAL, rec.name
    )
    back = recommendation_from_resource(stored)
    assert back.resource_version
    assert back == dataclasses.replace(rec, resource_version=back.resource_version)
