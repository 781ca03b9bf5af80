"""Recommendation objects in the test apiserver: the shared codec; status written through /status."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes import client

from podsizer.api import (
    API_GROUP,
    API_VERSION,
    PLURAL,
    ContainerRecommendation,
    Recommendation,
    Window,
    WorkloadRef,
    recommendation_to_resource,
)


def simple_recommendation(
    target: WorkloadRef, containers: Mapping[str, Mapping[str, str]], confidence: float = 0.9
) -> Recommendation:
    """A static-mode Recommendation: the given requests per container name (limits are the webhook's)."""
    now = datetime.now(UTC).replace(microsecond=0)
    return Recommendation(
        target=target,
        generated_at=now,
        window=Window(now - timedelta(days=7), now, 2016),
        sizing_mode="static",
        containers=tuple(
            ContainerRecommendation(name, dict(requests), {}, confidence, "e2e fixture")
            for name, requests in containers.items()
        ),
        reason="e2e fixture",
    )


def put_recommendation(api_client: client.ApiClient, rec: Recommendation) -> dict[str, Any]:
    """Creates the Recommendation (spec), then writes its status through /status; returns what is stored."""
    custom = client.CustomObjectsApi(api_client)
    obj = recommendation_to_resource(rec)
    status = obj.pop("status")
    custom.create_namespaced_custom_object(API_GROUP, API_VERSION, rec.namespace, PLURAL, obj)
    stored = custom.patch_namespaced_custom_object_status(
        API_GROUP,
        API_VERSION,
        rec.namespace,
        PLURAL,
        rec.name,
        {"status": status},
        _content_type="application/merge-patch+json",
    )
    if not isinstance(stored, dict):
        raise TypeError(f"unexpected answer to the status patch of {rec.namespace}/{rec.name}: {stored!r}")
    return stored
