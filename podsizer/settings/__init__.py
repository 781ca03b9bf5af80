"""One settings loader for every process: PODSIZER_* variables and --flags, one default per setting."""

from podsizer.settings.base import SharedSettings
from podsizer.settings.help import add_arguments, flag_values
from podsizer.settings.loader import (
    TOOLING_VARIABLES,
    SettingsError,
    known_variables,
    load,
    load_from_args,
    run_reporting_errors,
    setting_error,
)
from podsizer.settings.names import env_name, flag_name
from podsizer.settings.roles import (
    ONE_RUN_ONLY,
    ROLES,
    RUN_ONLY,
    ConsoleSettings,
    RecommenderSettings,
    UpdaterSettings,
    WebhookSettings,
)

__all__ = [
    "ONE_RUN_ONLY",
    "ROLES",
    "RUN_ONLY",
    "TOOLING_VARIABLES",
    "ConsoleSettings",
    "RecommenderSettings",
    "SettingsError",
    "SharedSettings",
    "UpdaterSettings",
    "WebhookSettings",
    "add_arguments",
    "env_name",
    "flag_name",
    "flag_values",
    "known_variables",
    "load",
    "load_from_args",
    "run_reporting_errors",
    "setting_error",
]
