"""Each role's settings, composed of groups (PODSIZER_<NAME> and --<name> for every field)."""

from __future__ import annotations

from podsizer.settings.base import SharedSettings
from podsizer.settings.console import ConsoleSettings, ConsoleSource
from podsizer.settings.recommender import ONE_RUN_ONLY, RUN_ONLY, RecommenderSettings
from podsizer.settings.source import MetricsSourceSettings, SourceName
from podsizer.settings.updater import UpdateModeSetting, UpdaterSettings
from podsizer.settings.webhook import OLM_CERT_DIR, WebhookSettings

ROLES: tuple[type[SharedSettings], ...] = (
    RecommenderSettings,
    WebhookSettings,
    ConsoleSettings,
    UpdaterSettings,
)

__all__ = [
    "OLM_CERT_DIR",
    "ONE_RUN_ONLY",
    "ROLES",
    "RUN_ONLY",
    "ConsoleSettings",
    "ConsoleSource",
    "MetricsSourceSettings",
    "RecommenderSettings",
    "SourceName",
    "UpdateModeSetting",
    "UpdaterSettings",
    "WebhookSettings",
]
