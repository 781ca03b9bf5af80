"""Named estimator presets (PODSIZER_PROFILE): defaults for sizing settings; an explicit setting wins.

The one place the profiles are defined. `with_profile` runs before validation of the recommender's
settings: every preset value fills a setting only when that setting was not given (as PODSIZER_<NAME> or
--<name>), so `PODSIZER_PROFILE=balanced PODSIZER_CPU_MARGIN=0.2` is balanced with a 20 % CPU margin. A
preset naming a setting the role does not have raises ValueError (a broken preset is never silent).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal, get_args

Profile = Literal["conservative", "balanced", "aggressive"]
DEFAULT_PROFILE: Profile = "conservative"

PRESETS: Mapping[Profile, Mapping[str, object]] = MappingProxyType(
    {
        # The defaults of every setting: P99 + 15 %, no burst path, a certain trend feeds 2 days ahead.
        # No profile sets recency_half_life: 24 h (its default) measured best in every profile; 12 h
        # made aggressive riskier on weekly cycles, 48 h changed nothing (docs/recommender.md "Profiles").
        "conservative": MappingProxyType({}),
        # Below VPA's total at no more risk (docs/recommender.md "Profiles" has the benchmark's figures).
        "balanced": MappingProxyType(
            {
                "cpu_percentile": 0.98,
                "cpu_margin": 0.05,
                "cpu_burst_path": True,
            }
        ),
        # Cheapest: P95 + 5 % CPU, P99 + 10 % memory (never below its peak), burst path, 1 day of trend.
        "aggressive": MappingProxyType(
            {
                "cpu_percentile": 0.95,
                "cpu_margin": 0.05,
                "memory_margin": 0.10,
                "cpu_burst_path": True,
                "forecast_feed_days": 1.0,
            }
        ),
    }
)


def _check(fields: frozenset[str]) -> None:
    """ValueError naming every preset key that is not a setting of the role."""
    unknown = sorted(
        f"{name}.{key}" for name, preset in PRESETS.items() for key in preset if key not in fields
    )
    if unknown:
        raise ValueError(f"profile presets name unknown settings: {', '.join(unknown)}")


def with_profile(data: object, fields: frozenset[str]) -> object:
    """`data` (the raw settings by field name) with the chosen profile's presets under what was given.

    An unknown profile name is left to the field's validation (which names the allowed ones)."""
    _check(fields)
    if not isinstance(data, Mapping):
        return data
    raw = data.get("profile", DEFAULT_PROFILE)
    name = raw.strip().lower() if isinstance(raw, str) else raw
    preset = PRESETS.get(name) if isinstance(name, str) else None  # type: ignore[call-overload]
    if not preset:
        return data
    return {**preset, **data}


def profile_help() -> str:
    """The --profile help: each preset's values, and that explicit settings win."""
    parts = []
    for name in get_args(Profile):
        preset = PRESETS[name]
        values = ", ".join(f"{k.replace('_', '-')} {v}" for k, v in preset.items()) or "the defaults"
        parts.append(f"{name}: {values}")
    return (
        "estimator preset: " + "; ".join(parts) + ". A preset only supplies defaults: a setting given "
        "explicitly (PODSIZER_<NAME> or --<name>) wins"
    )
