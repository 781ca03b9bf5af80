"""`podsizer console` settings: flags over PODSIZER_CONSOLE_* variables over defaults."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

import pytest

from console.cli import add_arguments
from podsizer.settings import ConsoleSettings, SettingsError, load_from_args


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="podsizer console")
    add_arguments(parser)
    return parser.parse_args(list(argv))


def load_settings(args: argparse.Namespace, env: Mapping[str, str]) -> ConsoleSettings:
    return load_from_args(ConsoleSettings, args, env)


def test_defaults_listen_on_localhost_8080_with_demo_data() -> None:
    s = load_settings(_args(), {})
    assert (s.console_host, s.console_port, s.chosen_source()) == (
        "127.0.0.1",
        8080,
        ("demo", "console_source"),
    )
    assert s.console_refresh_seconds == 300.0


def test_a_prometheus_url_given_means_prometheus_not_the_demo() -> None:
    s = load_settings(_args("--prometheus-url", "http://127.0.0.1:9090"), {})
    assert s.chosen_source() == ("prometheus", "prometheus_url")
    env = {"PODSIZER_PROMETHEUS_URL": "http://127.0.0.1:9090"}
    assert load_settings(_args(), env).chosen_source() == ("prometheus", "prometheus_url")
    assert load_settings(_args("--source", "demo"), env).chosen_source() == ("demo", "source")
    assert load_settings(_args("--console-source", "demo"), env).chosen_source() == ("demo", "console_source")


def test_flag_wins_over_environment_which_wins_over_default() -> None:
    env = {"PODSIZER_CONSOLE_PORT": "9001", "PODSIZER_CONSOLE_HOST": "0.0.0.0"}
    assert load_settings(_args(), env).console_port == 9001
    s = load_settings(_args("--console-port", "9002"), env)
    assert (s.console_host, s.console_port) == ("0.0.0.0", 9002)


def test_the_older_flags_still_work() -> None:
    s = load_settings(_args("--host", "0.0.0.0", "--port", "9003", "--source", "prometheus"), {})
    assert (s.console_host, s.console_port, s.chosen_source()) == ("0.0.0.0", 9003, ("prometheus", "source"))


def test_bad_values_name_the_variable_and_the_flag() -> None:
    with pytest.raises(
        SettingsError, match=r"^PODSIZER_CONSOLE_PORT \(--console-port\): .*\(got 'eighty'\)$"
    ):
        load_settings(_args(), {"PODSIZER_CONSOLE_PORT": "eighty"})
    with pytest.raises(
        SettingsError,
        match=r"^PODSIZER_CONSOLE_PORT \(--console-port\): '70000' is outside the allowed range, 1 to 65535$",
    ):
        load_settings(_args("--port", "70000"), {})
    with pytest.raises(
        SettingsError, match=r"^PODSIZER_CONSOLE_SOURCE \(--console-source\): Input should be 'demo'"
    ):
        load_settings(_args("--console-source", "thanos"), {})
