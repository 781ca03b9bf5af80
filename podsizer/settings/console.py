"""`podsizer console`'s settings: where the read-only web console listens and what it shows."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field

from podsizer.settings.duration import DAY
from podsizer.settings.group import SettingsGroup, old_flags
from podsizer.settings.source import MetricsSourceSettings
from podsizer.settings.types import empty_is_none, lowered

ConsoleSource = Literal["demo", "file", "prometheus"]


def _console_source(value: object) -> object:
    return empty_is_none(lowered(value))


class ConsoleOwnSettings(SettingsGroup):
    """The console's listener, source and refresh."""

    heading = "console"
    console_host: str = Field(
        default="127.0.0.1",
        min_length=1,
        description="address to listen on",
        json_schema_extra=old_flags("--host"),
    )
    console_port: int = Field(
        default=8080, ge=1, le=65535, description="port to listen on", json_schema_extra=old_flags("--port")
    )
    console_source: Annotated[ConsoleSource | None, BeforeValidator(_console_source)] = Field(
        default=None,
        description="where the data comes from: demo, file or prometheus (empty: PODSIZER_SOURCE / "
        "--source when set, else prometheus when PODSIZER_PROMETHEUS_URL / --prometheus-url is given, else "
        "demo, the built-in data set)",
    )
    console_refresh_seconds: float = Field(
        default=300.0,
        gt=0,
        le=DAY,
        description="seconds between rebuilds of the data from the source and store (at most a day)",
    )


class ConsoleSettings(ConsoleOwnSettings, MetricsSourceSettings):
    """`podsizer console`: where the read-only web console listens and what it shows."""

    def chosen_source(self) -> tuple[str, str]:
        """(source, the setting that chose it): console_source, else source when set, else Prometheus when
        its URL was given, else the demo."""
        if self.console_source is not None:
            return self.console_source, "console_source"
        if "source" in self.model_fields_set:
            return self.source, "source"
        if "prometheus_url" in self.model_fields_set:
            return "prometheus", "prometheus_url"
        return "demo", "console_source"
