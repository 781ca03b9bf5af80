"""What a tunable value's annotation carries besides its type: its help, its heading and its unit.

A frozen dataclass field `Annotated[float, Ge(0), Knob("CPU floor", SIZING, Unit.CORES)] = 0.01` is the
one declaration of a setting: the settings loader makes PODSIZER_<NAME> and --<name> of it, parses
its unit, checks its annotated_types bounds and shows its default in that unit.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Unit(Enum):
    """How a setting is written: its text is parsed, and its default shown, in this unit."""

    NUMBER = "number"  # plain numbers and booleans
    CORES = "cores"  # CPU: cores or a Kubernetes quantity (10m, 1.5)
    BYTES = "bytes"  # memory: bytes or a Kubernetes quantity (32Mi, 4Ti)
    SECONDS = "seconds"  # a duration: seconds or 90s, 2m, 24h
    LIST = "list"  # comma-separated text


@dataclass(frozen=True)
class Knob:
    """A setting's help text (its flag's help) and the heading it is listed under."""

    help: str
    group: str
    unit: Unit = Unit.NUMBER


def knob_of(hint: object) -> Knob | None:
    """The Knob of an `Annotated[...]` type hint (get_type_hints(..., include_extras=True)), if any."""
    return next((m for m in getattr(hint, "__metadata__", ()) if isinstance(m, Knob)), None)
