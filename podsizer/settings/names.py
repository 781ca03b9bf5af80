"""How a setting is named to users: field cpu_margin is PODSIZER_CPU_MARGIN and --cpu-margin."""

from __future__ import annotations

ENV_PREFIX = "PODSIZER_"


def env_name(field: str) -> str:
    return ENV_PREFIX + field.upper()


def flag_name(field: str) -> str:
    return "--" + field.replace("_", "-")


def where(field: str) -> str:
    """How an error names a setting: 'PODSIZER_CPU_MARGIN (--cpu-margin)'."""
    return f"{env_name(field)} ({flag_name(field)})"
