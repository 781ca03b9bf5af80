"""Profiles (PODSIZER_PROFILE): named presets that supply defaults; explicit settings (env, flag) win."""

from __future__ import annotations

import argparse
from typing import get_args

import pytest

from podsizer.settings import RecommenderSettings, SettingsError, add_arguments, flag_values, load
from podsizer.settings.profiles import DEFAULT_PROFILE, PRESETS, Profile, profile_help, with_profile
from podsizer.sizing_policy import SizingPolicy

FIELDS = frozenset(RecommenderSettings.model_fields)


def settings(env: dict[str, str] | None = None, argv: list[str] | None = None) -> RecommenderSettings:
    parser = argparse.ArgumentParser()
    add_arguments(parser, RecommenderSettings)
    return load(RecommenderSettings, flag_values(parser.parse_args(argv or [])), env or {})


def test_the_default_profile_is_conservative_and_is_every_settings_default() -> None:
    s = settings()
    assert s.profile == DEFAULT_PROFILE == "conservative"
    assert PRESETS["conservative"] == {}
    assert s.to_sizing_policy() == SizingPolicy()


@pytest.mark.parametrize("profile", get_args(Profile))
def test_every_preset_names_settings_and_loads_to_its_values(profile: Profile) -> None:
    s = settings({"PODSIZER_PROFILE": profile})
    assert set(PRESETS[profile]) <= FIELDS
    for key, value in PRESETS[profile].items():
        assert getattr(s, key) == value


def test_balanced_and_aggressive_turn_the_burst_path_on_and_ask_less_cpu() -> None:
    cons, bal, agg = (settings({"PODSIZER_PROFILE": p}).to_sizing_policy() for p in get_args(Profile))
    assert not cons.cpu_burst_path and bal.cpu_burst_path and agg.cpu_burst_path
    assert (
        agg.cpu_percentile * (1 + agg.cpu_margin)
        < bal.cpu_percentile * (1 + bal.cpu_margin)
        < cons.cpu_percentile * (1 + cons.cpu_margin)
    )


def test_an_explicit_variable_wins_over_the_preset() -> None:
    s = settings({"PODSIZER_PROFILE": "balanced", "PODSIZER_CPU_MARGIN": "0.2"})
    assert s.cpu_margin == 0.2
    assert s.cpu_percentile == PRESETS["balanced"]["cpu_percentile"]


def test_an_explicit_flag_wins_over_the_preset_and_the_profile_flag_over_the_variable() -> None:
    s = settings({"PODSIZER_PROFILE": "conservative"}, ["--profile", "aggressive", "--no-cpu-burst-path"])
    assert s.profile == "aggressive"
    assert s.cpu_burst_path is False
    assert s.cpu_percentile == PRESETS["aggressive"]["cpu_percentile"]


def test_an_explicit_value_equal_to_the_default_still_wins() -> None:
    s = settings({"PODSIZER_PROFILE": "aggressive", "PODSIZER_CPU_PERCENTILE": "0.99"})
    assert s.cpu_percentile == 0.99


def test_the_profile_name_is_case_insensitive_and_an_unknown_one_is_refused() -> None:
    assert settings({"PODSIZER_PROFILE": " Balanced "}).profile == "balanced"
    with pytest.raises(SettingsError, match=r"PODSIZER_PROFILE \(--profile\).*conservative"):
        settings({"PODSIZER_PROFILE": "reckless"})


def test_a_preset_naming_an_unknown_setting_fails_loudly() -> None:
    with pytest.raises(ValueError, match="cpu_margin"):
        with_profile({}, FIELDS - {"cpu_margin"})


def test_the_help_lists_each_preset_and_says_explicit_settings_win() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser, RecommenderSettings)
    text = " ".join(parser.format_help().split())
    assert "balanced: cpu-percentile 0.98" in text
    assert "explicitly (PODSIZER_<NAME> or --<name>) wins" in text
    assert all(p in profile_help() for p in get_args(Profile))
