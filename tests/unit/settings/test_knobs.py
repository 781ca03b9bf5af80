"""Each sizing knob is declared once (SizingPolicy) and reaches the policy from its variable and flag."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
from typing import get_type_hints

import annotated_types as at
import pytest

from podsizer.knobs import knob_of
from podsizer.settings import RecommenderSettings, SettingsError, SharedSettings, add_arguments, load
from podsizer.settings.group import owner_of
from podsizer.settings.help import allowed_range, flag_values
from podsizer.sizing_policy import SizingPolicy

HINTS = get_type_hints(SizingPolicy, include_extras=True)
KNOBS = [f for f in dataclasses.fields(SizingPolicy) if knob_of(HINTS[f.name]) is not None]
KNOB_NAMES = [f.name for f in KNOBS]


def _bounds(name: str) -> tuple[float, float | None]:
    """The knob's declared lower bound (0 when none) and upper bound (None when none)."""
    lo, hi = 0.0, None
    for m in HINTS[name].__metadata__:
        if isinstance(m, at.Ge | at.Gt):
            lo = float(m.ge if isinstance(m, at.Ge) else m.gt)
        if isinstance(m, at.Le | at.Lt):
            hi = float(m.le if isinstance(m, at.Le) else m.lt)
    return lo, hi


def _other_value(field: dataclasses.Field[object]) -> object:
    """A valid value of the knob that is not its default."""
    if isinstance(field.default, bool):
        return not field.default
    lo, upper = _bounds(field.name)
    hi = 100.0 if upper is None else upper
    value: float = lo + (hi - lo) * 0.375  # inside (lo, hi), away from both bounds
    if value == field.default:
        value = lo + (hi - lo) * 0.625
    return round(value) if isinstance(field.default, int) else value


def test_the_knobs_are_the_sizing_policy_less_the_shared_ceilings() -> None:
    plain = {f.name for f in dataclasses.fields(SizingPolicy)} - set(KNOB_NAMES)
    assert len(KNOB_NAMES) > 25
    assert plain == {"max_cpu_cores", "max_memory_bytes", "max_gpus"}
    assert plain <= set(SharedSettings.model_fields)
    defaults = {n: SharedSettings.model_fields[n].default for n in plain}
    assert defaults == {n: getattr(SizingPolicy(), n) for n in plain}


@pytest.mark.parametrize("name", KNOB_NAMES)
def test_a_knob_is_declared_once_and_its_setting_is_made_from_it(name: str) -> None:
    owner = owner_of(RecommenderSettings, name)
    declared_by_hand = [
        c.__name__
        for c in RecommenderSettings.__mro__
        if c is not owner and name in inspect.get_annotations(c)
    ]
    assert (owner.__name__, declared_by_hand) == ("SizingKnobs", [])
    info = RecommenderSettings.model_fields[name]
    knob = knob_of(HINTS[name])
    assert knob is not None
    default = next(f.default for f in KNOBS if f.name == name)
    assert (info.default, info.description) == (default, knob.help)


@pytest.mark.parametrize("field", KNOBS, ids=KNOB_NAMES)
def test_a_changed_variable_or_flag_changes_the_knob_of_the_policy(field: dataclasses.Field[object]) -> None:
    value = _other_value(field)
    text = str(value).lower() if isinstance(value, bool) else repr(value)
    from_env = load(RecommenderSettings, env={f"PODSIZER_{field.name.upper()}": text}).to_sizing_policy()
    parser = argparse.ArgumentParser()
    add_arguments(parser, RecommenderSettings)
    args = parser.parse_args([f"--{field.name.replace('_', '-')}={text}"])
    from_flag = load(RecommenderSettings, flag_values(args), env={}).to_sizing_policy()
    expected = dataclasses.replace(SizingPolicy(), **{field.name: value})
    assert (from_env, from_flag) == (expected, expected)


@pytest.mark.parametrize("name", KNOB_NAMES)
def test_a_knob_outside_its_declared_bounds_is_refused_naming_it_the_value_and_the_range(name: str) -> None:
    if isinstance(next(f.default for f in KNOBS if f.name == name), bool):
        cases = [("perhaps", "Input should be a valid boolean")]
    else:
        lo, hi = _bounds(name)
        assert hi is not None, f"{name} has no upper bound"
        allowed = allowed_range(RecommenderSettings.model_fields[name])
        cases = [(repr(v), f"{repr(v)!r} is outside the allowed range, {allowed}") for v in (lo - 1, hi + 1)]
    for bad, needle in cases:
        with pytest.raises(SettingsError) as err:
            load(RecommenderSettings, env={f"PODSIZER_{name.upper()}": bad})
        assert str(err.value).startswith(f"PODSIZER_{name.upper()} (--{name.replace('_', '-')}): {needle}")
