"""The custom resources podsizer lists, watches or writes, each named once (group, version, plural, kind)."""

from __future__ import annotations

from dataclasses import dataclass

from podsizer.api.resource import PLURAL
from podsizer.api.wire import API_GROUP, API_VERSION, KIND


@dataclass(frozen=True)
class CustomResource:
    """One custom resource type; `name` is how messages call it (`recommendations.podsizer.io`)."""

    group: str
    version: str
    plural: str
    kind: str

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


RECOMMENDATIONS = CustomResource(API_GROUP, API_VERSION, PLURAL, KIND)
USAGE_CHECKPOINTS = CustomResource(API_GROUP, API_VERSION, "usagecheckpoints", "UsageCheckpoint")
ROLLOUTS = CustomResource("argoproj.io", "v1alpha1", "rollouts", "Rollout")
DEPLOYMENT_CONFIGS = CustomResource("apps.openshift.io", "v1", "deploymentconfigs", "DeploymentConfig")
POD_METRICS = CustomResource("metrics.k8s.io", "v1beta1", "pods", "PodMetrics")
