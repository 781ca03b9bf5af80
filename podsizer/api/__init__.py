"""The contract the recommender and the webhook share: workload identity and the Recommendation resource."""

from podsizer.api.identity import (
    SUPPORTED_KINDS,
    WorkloadRef,
    is_deployer_or_hook_pod,
)
from podsizer.api.resource import (
    PLURAL,
    ContainerPolicy,
    ContainerRecommendation,
    Forecast,
    GpuRecommendation,
    Recommendation,
    RecommendationError,
    SizingMode,
    Window,
    recommendation_from_resource,
    recommendation_to_resource,
)
from podsizer.api.wire import API_GROUP, API_VERSION, KIND

__all__ = [
    "API_GROUP",
    "API_VERSION",
    "KIND",
    "PLURAL",
    "SUPPORTED_KINDS",
    "ContainerPolicy",
    "ContainerRecommendation",
    "Forecast",
    "GpuRecommendation",
    "Recommendation",
    "RecommendationError",
    "SizingMode",
    "Window",
    "WorkloadRef",
    "is_deployer_or_hook_pod",
    "recommendation_from_resource",
    "recommendation_to_resource",
]
