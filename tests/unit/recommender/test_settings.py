"""Recommender settings: defaults, PODSIZER_* environment, flags over env, errors naming the variable."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from podsizer.settings import (
    RecommenderSettings,
    SettingsError,
    add_arguments,
    env_name,
    flag_name,
    flag_values,
    load,
)
from podsizer.sizing_policy import SizingPolicy


def load_settings(
    flags: dict[str, object] | None = None, env: dict[str, str] | None = None
) -> RecommenderSettings:
    return load(RecommenderSettings, flags, env)


def parse(argv: list[str]) -> dict[str, object]:
    parser = argparse.ArgumentParser()
    add_arguments(parser, RecommenderSettings)
    return flag_values(parser.parse_args(argv))


def test_defaults_give_the_default_sizing_policy() -> None:
    s = load_settings(env={})
    assert s.to_sizing_policy() == SizingPolicy()
    assert (s.source, s.window_days, s.interval_seconds, s.store) == ("prometheus", 7.0, 3600.0, "json")
    assert s.forecast_horizon_days == 7.0
    assert s.leader_election is False
    assert s.namespaces == ()


def test_every_sizing_policy_field_is_a_setting() -> None:
    missing = [
        f.name for f in dataclasses.fields(SizingPolicy) if f.name not in RecommenderSettings.model_fields
    ]
    assert missing == []


def test_environment_variables_fill_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODSIZER_FORECAST_HORIZON_DAYS", "14")
    monkeypatch.setenv("PODSIZER_NAMESPACES", "shop, ml,,")
    monkeypatch.setenv("PODSIZER_MEMORY_MIN_BYTES", "64Mi")
    monkeypatch.setenv("PODSIZER_CPU_MIN_CORES", "20m")
    monkeypatch.setenv("PODSIZER_LEADER_ELECTION", "true")
    monkeypatch.setenv("PODSIZER_CPU_LIMIT_FACTOR", "2")
    s = load_settings()
    policy = s.to_sizing_policy()
    assert policy.forecast_horizon_days == 14.0
    assert policy.memory_min_bytes == 64 * 1024 * 1024
    assert policy.cpu_min_cores == pytest.approx(0.02)
    assert policy.cpu_limit_factor == 2.0
    assert s.namespaces == ("shop", "ml")
    assert s.leader_election is True


def test_flags_override_the_environment() -> None:
    env = {"PODSIZER_CPU_MARGIN": "0.3", "PODSIZER_SOURCE": "demo", "PODSIZER_LEADER_ELECTION": "true"}
    s = load_settings(parse(["--cpu-margin", "0.5", "--no-leader-election"]), env=env)
    assert s.cpu_margin == 0.5
    assert s.source == "demo"
    assert s.leader_election is False


def test_absent_flags_leave_env_and_defaults_alone() -> None:
    assert parse([]) == {}
    assert parse(["--store-file", "/tmp/x.json"]) == {"store_file": "/tmp/x.json"}
    assert load_settings(parse(["--store-file", "/tmp/x.json"]), env={}).store_file == Path("/tmp/x.json")


def test_empty_optional_values_mean_none() -> None:
    s = load_settings(env={"PODSIZER_CPU_LIMIT_FACTOR": "", "PODSIZER_PRICE_FILE": "none"})
    assert s.cpu_limit_factor is None
    assert s.price_file is None


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        (
            {"PODSIZER_CPU_MARGIN": "-1"},
            "PODSIZER_CPU_MARGIN (--cpu-margin): '-1' is outside the allowed range, 0 to 10",
        ),
        (
            {"PODSIZER_CPU_PERCENTILE": "1.5"},
            "PODSIZER_CPU_PERCENTILE (--cpu-percentile): '1.5' is outside the allowed range, above 0 to 1",
        ),
        (
            {"PODSIZER_WINDOW_DAYS": "seven"},
            "PODSIZER_WINDOW_DAYS (--window-days): Input should be a valid number",
        ),
        (
            {"PODSIZER_SOURCE": "influx"},
            "PODSIZER_SOURCE (--source): Input should be 'prometheus', 'demo', 'file' or 'dcgm'",
        ),
        (
            {"PODSIZER_MEMORY_MIN_BYTES": "lots"},
            "PODSIZER_MEMORY_MIN_BYTES (--memory-min-bytes): invalid Kubernetes quantity",
        ),
        ({"PODSIZER_METRICS_PORT": "70000"}, "PODSIZER_METRICS_PORT"),
        (
            {"PODSIZER_LEADER_ELECTION": "perhaps"},
            "PODSIZER_LEADER_ELECTION (--leader-election): Input should be a valid boolean",
        ),
    ],
)
def test_bad_values_name_the_variable(env: dict[str, str], needle: str) -> None:
    with pytest.raises(SettingsError) as err:
        load_settings(env=env)
    assert needle in str(err.value)


def test_a_bad_flag_names_the_flag_and_the_variable_and_all_errors_are_reported() -> None:
    with pytest.raises(SettingsError) as err:
        load_settings(parse(["--cpu-margin", "x"]), env={"PODSIZER_GPU_IDLE_THRESHOLD": "2"})
    msg = str(err.value)
    assert "PODSIZER_CPU_MARGIN (--cpu-margin): Input should be a valid number" in msg
    assert (
        "PODSIZER_GPU_IDLE_THRESHOLD (--gpu-idle-threshold): '2' is outside the allowed range, 0 to 1" in msg
    )


def test_every_setting_has_a_flag_and_a_description() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser, RecommenderSettings)
    help_text = parser.format_help()
    assert len(RecommenderSettings.model_fields) > 20
    for name, field in RecommenderSettings.model_fields.items():
        assert "--" + name.replace("_", "-") in help_text
        assert env_name(name) in help_text
        assert field.description


def test_store_file_is_accepted_as_the_webhooks_name_for_the_json_store() -> None:
    assert load_settings(env={"PODSIZER_STORE": "file"}).store == "json"
    assert load_settings(env={"PODSIZER_STORE": "crd"}).store == "crd"


def test_the_docs_list_every_setting_with_its_flag() -> None:
    docs = (Path(__file__).resolve().parents[3] / "docs" / "recommender.md").read_text()
    missing = [
        name
        for name in RecommenderSettings.model_fields
        if f"`{env_name(name)}`" not in docs or f"`{flag_name(name)}`" not in docs
    ]
    assert missing == []
