"""The shapes settings share, each one annotated type: its parser, its unit for --help, named once.

`memory_min_bytes: Bytes = Field(default=..., ge=0)` accepts 33554432 or 32Mi and --help shows 32Mi.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Annotated

from pydantic import BeforeValidator

from podsizer.api.quantity import parse as parse_quantity
from podsizer.knobs import Unit
from podsizer.settings.duration import seconds


def empty_is_none(value: object) -> object:
    """'' and 'none' (any case) in an optional setting mean unset."""
    if isinstance(value, str) and value.strip().lower() in ("", "none"):
        return None
    return value


def lowered(value: object) -> object:
    """Case-insensitive choices: compare lower-cased, stripped text."""
    return value.strip().lower() if isinstance(value, str) else value


def comma_list(value: object) -> object:
    """'a, b,,c' -> ('a', 'b', 'c'); other values pass through to validation."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


def quantity(value: object) -> object:
    """A Kubernetes quantity ('32Mi', '10m') as a number; numbers and other input pass through."""
    if isinstance(value, str) and value.strip():
        return parse_quantity(value.strip())
    return value


def whole_seconds(value: object) -> object:
    """A duration setting (60, 60s, 1m) as whole seconds; ValueError for a fraction of a second."""
    value = seconds(empty_is_none(value))
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, float):
        raise ValueError(f"{value:g}s is not a whole number of seconds")
    return value


PARSERS: Mapping[Unit, Callable[[object], object]] = MappingProxyType(
    {Unit.CORES: quantity, Unit.BYTES: quantity, Unit.SECONDS: seconds, Unit.LIST: comma_list}
)

Lowered = BeforeValidator(lowered)  # for Literal choices: Annotated[LogLevel, Lowered]
Cores = Annotated[float, Unit.CORES, BeforeValidator(quantity)]
Bytes = Annotated[float, Unit.BYTES, BeforeValidator(quantity)]
WholeBytes = Annotated[int, Unit.BYTES, BeforeValidator(quantity)]
WholeSeconds = Annotated[int, Unit.SECONDS, BeforeValidator(whole_seconds)]
CommaList = Annotated[tuple[str, ...], Unit.LIST, BeforeValidator(comma_list)]
OptionalPath = Annotated[Path | None, BeforeValidator(empty_is_none)]
OptionalText = Annotated[str | None, BeforeValidator(empty_is_none)]
OptionalFactor = Annotated[float | None, BeforeValidator(empty_is_none)]
