"""Settings grouped by concern: each group a model with a heading; a role is the groups it reads."""

from __future__ import annotations

import dataclasses
import inspect
from typing import TYPE_CHECKING, Annotated, ClassVar, get_args, get_type_hints

from pydantic import BaseModel, BeforeValidator, ConfigDict, JsonValue, create_model
from pydantic.fields import FieldInfo

from podsizer.knobs import Knob, knob_of
from podsizer.settings.types import PARSERS, empty_is_none

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


class SettingsGroup(BaseModel):
    """Settings of one concern, listed under `heading` in --help (PODSIZER_<NAME>, --<name> each)."""

    # inf or nan is never a setting: a timeout of inf kept a slow client's connection open for ever
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
    heading: ClassVar[str] = "settings"


def old_flags(*flags: str) -> dict[str, JsonValue]:
    """Extra spellings of a field's flag kept from before the one loader (json_schema_extra)."""
    return {"flags": list(flags)}


def knob_group(name: str, declared: type[DataclassInstance]) -> type[SettingsGroup]:
    """A group of one setting per Knob-annotated field of the frozen dataclass `declared`: its type,
    bounds, default, unit and help as declared there (the heading is the Knob's)."""
    hints = get_type_hints(declared, include_extras=True)
    fields: dict[str, tuple[object, FieldInfo]] = {}
    for field in dataclasses.fields(declared):
        hint = hints[field.name]
        knob = knob_of(hint)
        if knob is None:
            continue
        info = FieldInfo.from_field(
            field.default, description=knob.help, json_schema_extra={"group": knob.group}
        )
        fields[field.name] = (_parsed(hint, knob), info)
    # the field types are made at run time: not the TypeForm create_model's stubs ask for
    group: type[SettingsGroup] = create_model(name, __base__=SettingsGroup, **fields)  # type: ignore[call-overload]
    return group


def _parsed(hint: object, knob: Knob) -> object:
    """`hint` with the unit's parser and, where None is allowed, '' and 'none' meaning unset."""
    base, *_ = get_args(hint)
    extra: list[object] = [knob.unit]
    if knob.unit in PARSERS:
        extra.append(BeforeValidator(PARSERS[knob.unit]))
    if type(None) in get_args(base):
        extra.append(BeforeValidator(empty_is_none))
    return Annotated[hint, *extra]


def heading(role: type[BaseModel], name: str) -> str:
    """The heading `name` is listed under: its Knob's group, else the group class that declares it."""
    extra = role.model_fields[name].json_schema_extra
    if isinstance(extra, dict) and isinstance(extra.get("group"), str):
        return str(extra["group"])
    owner = owner_of(role, name)
    return owner.heading if issubclass(owner, SettingsGroup) else SettingsGroup.heading


def owner_of(role: type[BaseModel], name: str) -> type:
    """The class of `role`'s bases that declares the field `name`."""
    return next(c for c in role.__mro__ if name in inspect.get_annotations(c))
