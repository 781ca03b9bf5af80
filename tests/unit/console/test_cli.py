"""`podsizer console` settings: flags over PODSIZER_CONSOLE_* variables over defaults."""

from __future__ import annotations

import argparse

import pytest

from console.cli import add_arguments, load_settings
from recommender.config import ConfigError


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="podsizer console")
    add_arguments(parser)
    return parser.parse_args(list(argv))


def test_defaults_listen_on_localhost_8080_with_demo_data() -> None:
    s = load_settings(_args(), {})
    assert (s.host, s.port, s.source) == ("127.0.0.1", 8080, "demo")


def test_flag_wins_over_environment_which_wins_over_default() -> None:
    env = {"PODSIZER_CONSOLE_PORT": "9001", "PODSIZER_CONSOLE_HOST": "0.0.0.0"}
    assert load_settings(_args(), env).port == 9001
    s = load_settings(_args("--port", "9002"), env)
    assert (s.host, s.port) == ("0.0.0.0", 9002)


def test_bad_values_name_the_variable_or_flag() -> None:
    with pytest.raises(ConfigError, match=r"^PODSIZER_CONSOLE_PORT: .*(got 'eighty')"):
        load_settings(_args(), {"PODSIZER_CONSOLE_PORT": "eighty"})
    with pytest.raises(ConfigError, match=r"^--port: Input should be less than or equal to 65535"):
        load_settings(_args("--port", "70000"), {})
    with pytest.raises(ConfigError, match=r"^PODSIZER_CONSOLE_SOURCE: Input should be 'demo'"):
        load_settings(_args(), {"PODSIZER_CONSOLE_SOURCE": "prometheus"})


def test_unknown_source_flag_is_rejected_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _args("--source", "prometheus")
    assert "invalid choice: 'prometheus'" in capsys.readouterr().err
