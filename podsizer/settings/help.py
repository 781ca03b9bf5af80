"""Settings as flags: one per setting, listed under its group's heading, its default in its unit."""

from __future__ import annotations

import argparse
from argparse import SUPPRESS
from collections.abc import Collection, Mapping
from pathlib import Path
from types import MappingProxyType

import annotated_types as at
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from podsizer.api.quantity import exact_quantity
from podsizer.knobs import Unit
from podsizer.settings.duration import show
from podsizer.settings.group import SettingsGroup, heading, owner_of
from podsizer.settings.names import env_name, flag_name

DEST_PREFIX = "setting_"
EMPTY = "(empty)"
_METAVARS = MappingProxyType(
    {Unit.CORES: "CORES", Unit.BYTES: "BYTES", Unit.SECONDS: "DURATION", Unit.LIST: "A,B,..."}
)


def unit_of(info: FieldInfo) -> Unit:
    return next((m for m in info.metadata if isinstance(m, Unit)), Unit.NUMBER)


def shown_default(info: FieldInfo) -> str:
    """The default as the docs write it: 4Ti, 10m, 24h, a,b, true, (empty)."""
    return shown_value(info, info.get_default(call_default_factory=True))


def allowed_range(info: FieldInfo) -> str | None:
    """The bounds a number setting declares, in its unit: "1Gi to 64Ti", "above 0 to 1h", "0 to below 1";
    None for a setting without bounds."""
    low = next((m for m in info.metadata if isinstance(m, at.Ge | at.Gt)), None)
    high = next((m for m in info.metadata if isinstance(m, at.Le | at.Lt)), None)
    if low is None and high is None:
        return None
    lower = "any" if low is None else _bound(info, low.ge if isinstance(low, at.Ge) else low.gt)
    upper = "any" if high is None else _bound(info, high.le if isinstance(high, at.Le) else high.lt)
    lower = f"above {lower}" if isinstance(low, at.Gt) else lower
    upper = f"below {upper}" if isinstance(high, at.Lt) else upper
    return f"{lower} to {upper}"


def _bound(info: FieldInfo, value: object) -> str:
    """A bound as its setting is written: a whole float without ".0" (3600, not 3600.0), a duration in
    days where whole (90d)."""
    unit = unit_of(info)
    if unit is Unit.NUMBER and isinstance(value, float) and value.is_integer():
        return str(int(value))
    if unit is Unit.SECONDS and isinstance(value, int | float):
        return show(value)
    return shown_value(info, value)


def shown_value(info: FieldInfo, value: object) -> str:
    """A value of the setting `info` as the docs write it: 4Ti, 10m, 24h, a,b, true, (empty)."""
    unit = unit_of(info)
    if value is None or value in ("", ()):
        return EMPTY
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    if unit is Unit.BYTES and isinstance(value, int | float):
        return exact_quantity("memory", value)
    if unit is Unit.CORES and isinstance(value, int | float):
        return exact_quantity("cpu", value)
    if unit is Unit.SECONDS and isinstance(value, int | float):
        return show(value, days=False)
    return str(value) if isinstance(value, str | int | float | Path) else repr(value)


def _old_flags(info: FieldInfo) -> list[str]:
    extra = info.json_schema_extra
    flags = extra.get("flags", []) if isinstance(extra, dict) else []
    return [str(f) for f in flags] if isinstance(flags, list) else []


def _help(name: str, info: FieldInfo, default: str | None = None) -> str:
    shown = shown_default(info) if default is None else default
    bounds = allowed_range(info)
    within = f", allowed: {bounds}" if bounds else ""
    return f"{info.description} [{env_name(name)}, default: {shown}{within}]".replace("%", "%%")


def grouped(settings: type[BaseModel]) -> dict[str, list[str]]:
    """The settings' field names by heading, headings in the order of the groups the role lists."""
    rank = {cls: i for i, cls in enumerate(settings.__mro__)}
    out: dict[str, list[str]] = {}
    for name in sorted(settings.model_fields, key=lambda n: rank[owner_of(settings, n)]):
        out.setdefault(heading(settings, name), []).append(name)
    return out


def add_arguments(
    parser: argparse.ArgumentParser,
    settings: type[BaseModel],
    unlisted: Collection[type[SettingsGroup]] = (),
    defaults: Mapping[str, str] | None = None,
) -> None:
    """One flag per setting (--cpu-margin for PODSIZER_CPU_MARGIN) under its heading; absent flags leave
    env and defaults. The settings of the `unlisted` groups are accepted but not shown in --help;
    `defaults`: what --help says a setting's default is where the command decides it otherwise.

    Booleans take `--flag`, `--flag true|false` and `--no-flag`."""
    hidden = {name for group in unlisted for name in group.model_fields}
    if parser.usage is None:  # the command's own options, not one line per setting
        own = parser.format_usage().removeprefix("usage: ").strip().replace("%", "%%")
        parser.usage = f"{own} [--SETTING VALUE ...]"
    for title, names in grouped(settings).items():
        shown = [n for n in names if n not in hidden]
        group = parser.add_argument_group(title if shown else None)
        for name in names:
            _add(group, name, settings.model_fields[name], name not in hidden, (defaults or {}).get(name))
    if hidden:
        headings = ", ".join(g.heading for g in unlisted)
        parser.epilog = (
            f"Also accepted, not listed: the settings of {headings}, which this command does not read."
        )


def _add(
    group: argparse._ArgumentGroup, name: str, info: FieldInfo, listed: bool, default: str | None
) -> None:
    # default=SUPPRESS: an absent flag leaves no attribute, so the environment and defaults apply
    flags = [flag_name(name), *_old_flags(info)]
    dest, about = DEST_PREFIX + name, _help(name, info, default) if listed else SUPPRESS
    if info.annotation is bool:
        off = "--no-" + flag_name(name)[2:]
        group.add_argument(
            *flags, dest=dest, nargs="?", const="true", metavar="BOOL", default=SUPPRESS, help=about
        )
        group.add_argument(
            off, dest=dest, action="store_const", const="false", default=SUPPRESS, help=SUPPRESS
        )
    else:
        metavar = _METAVARS.get(unit_of(info), name.upper())
        group.add_argument(*flags, dest=dest, metavar=metavar, default=SUPPRESS, help=about)


def flag_values(args: argparse.Namespace) -> dict[str, object]:
    """The settings given as flags, by field name."""
    return {k[len(DEST_PREFIX) :]: v for k, v in vars(args).items() if k.startswith(DEST_PREFIX)}
