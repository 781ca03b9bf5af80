"""Every number a setting takes has bounds, declared once with the field: a value outside is refused at
start naming the setting, the value as given and the allowed range (PODSIZER_MAX_MEMORY_BYTES=1Ei,
PODSIZER_MAX_CHANGE_FACTOR=1e308 and PODSIZER_MAX_BODY_BYTES=1e23 were once accepted)."""

from __future__ import annotations

from typing import cast

import annotated_types as at
import pytest
from pydantic.fields import FieldInfo

from podsizer.settings import ROLES, SettingsError, SharedSettings, load
from podsizer.settings.help import allowed_range
from podsizer.settings.names import where

NUMERIC: dict[str, tuple[type[SharedSettings], FieldInfo]] = {}
for _role in ROLES:
    for _name, _info in _role.model_fields.items():
        _kinds = str(_info.annotation)
        if ("int" in _kinds or "float" in _kinds) and "bool" not in _kinds:
            NUMERIC.setdefault(_name, (_role, _info))


def _upper(info: FieldInfo) -> float | None:
    high = next((m for m in info.metadata if isinstance(m, at.Le | at.Lt)), None)
    if high is None:
        return None
    return float(cast(float, high.le if isinstance(high, at.Le) else high.lt))


def test_the_settings_have_numbers_to_bound() -> None:
    assert len(NUMERIC) > 70


@pytest.mark.parametrize("name", sorted(NUMERIC))
def test_every_number_setting_has_an_upper_bound_and_a_value_above_it_is_refused_with_the_range(
    name: str,
) -> None:
    role, info = NUMERIC[name]
    upper = _upper(info)
    assert upper is not None, f"{where(name)} declares no upper bound"
    above = upper * 2
    text = str(int(above)) if above.is_integer() else repr(above)
    with pytest.raises(SettingsError) as err:
        load(role, env={f"PODSIZER_{name.upper()}": text})
    assert str(err.value) == f"{where(name)}: {text!r} is outside the allowed range, {allowed_range(info)}"


@pytest.mark.parametrize(
    ("name", "value", "allowed"),
    [
        ("max_memory_bytes", "1Ei", "1Gi to 64Ti"),
        ("max_change_factor", "1e308", "1 to 1000"),
        ("max_body_bytes", "100000000000000000000000", "1024 to 67108864"),
        ("max_cpu_cores", "1e9", "1 to 4096"),
        ("store_file_max_bytes", "8Gi", "1Mi to 1Gi"),
    ],
)
def test_the_absurd_values_of_the_probe_are_refused_naming_setting_value_and_range(
    name: str, value: str, allowed: str
) -> None:
    role, _ = NUMERIC[name]
    with pytest.raises(SettingsError) as err:
        load(role, env={f"PODSIZER_{name.upper()}": value})
    assert str(err.value) == f"{where(name)}: {value!r} is outside the allowed range, {allowed}"


def test_help_shows_the_allowed_range_in_the_settings_unit() -> None:
    _, info = NUMERIC["max_memory_bytes"]
    assert allowed_range(info) == "1Gi to 64Ti"
    assert allowed_range(NUMERIC["recency_half_life"][1]) == "0s to 90d"
    assert allowed_range(NUMERIC["spot_discount"][1]) == "0 to below 1"
