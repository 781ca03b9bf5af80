"""`podsizer console`: serve the read-only web console (flags, PODSIZER_CONSOLE_* variables, run)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from recommender.config import ConfigError

ENV_PREFIX = "PODSIZER_CONSOLE_"


class ConsoleSettings(BaseModel):
    """The console's settings; each is a flag and a PODSIZER_CONSOLE_* variable (the flag wins)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str = Field("127.0.0.1", min_length=1, description="address to listen on")
    port: int = Field(8080, ge=1, le=65535, description="port to listen on")
    source: Literal["demo"] = Field(
        "demo", description="where the data comes from; only the built-in demo cluster for now"
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the console's flags to a (sub)parser; unset flags fall back to the environment, then defaults."""
    for name, field in ConsoleSettings.model_fields.items():
        env = ENV_PREFIX + name.upper()
        extra: dict[str, object] = {"type": int} if name == "port" else {}
        if name == "source":
            extra["choices"] = ("demo",)
        parser.add_argument(
            f"--{name}",
            default=None,
            help=f"{field.description} (env {env}, default {field.default})",
            **extra,  # type: ignore[arg-type]
        )


def load_settings(args: argparse.Namespace, environ: Mapping[str, str]) -> ConsoleSettings:
    """Flags over PODSIZER_CONSOLE_* over defaults; ConfigError names the variable or flag at fault."""
    values: dict[str, object] = {}
    origin: dict[str, str] = {}
    for name in ConsoleSettings.model_fields:
        env = ENV_PREFIX + name.upper()
        if env in environ:
            values[name], origin[name] = environ[env], env
        flag = getattr(args, name, None)
        if flag is not None:
            values[name], origin[name] = flag, f"--{name}"
    try:
        return ConsoleSettings.model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        name = str(err["loc"][0]) if err["loc"] else ""
        where = origin.get(name, name)
        raise ConfigError(f"{where}: {err['msg']} (got {values.get(name)!r})") from exc


def run(args: argparse.Namespace) -> int:
    """Build the data once, then serve it until interrupted; returns the exit status."""
    import uvicorn

    from console.app import create_console_app
    from console.demo import DemoConsoleData

    settings = load_settings(args, os.environ)
    data = DemoConsoleData.build(datetime.now(UTC))
    print(
        f"podsizer console: serving the {settings.source} data on http://{settings.host}:{settings.port}/",
        flush=True,
    )
    uvicorn.run(create_console_app(data), host=settings.host, port=settings.port, log_level="warning")
    return 0
