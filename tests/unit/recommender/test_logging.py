"""HTTP client request logs (httpx, httpcore) are off at the default level and on at debug."""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Iterator

import pytest

from recommender.commands import QUIET_LOGGERS, add_recommend_arguments, load_settings


@pytest.fixture
def restore_levels(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)
    before = {name: logging.getLogger(name).level for name in ("", *QUIET_LOGGERS)}
    yield
    for name, level in before.items():
        logging.getLogger(name).setLevel(level)


def settings_at(*argv: str) -> None:
    parser = argparse.ArgumentParser()
    add_recommend_arguments(parser)
    load_settings(parser.parse_args(["--source", "demo", *argv]))


def test_default_level_drops_http_request_lines(
    restore_levels: None, caplog: pytest.LogCaptureFixture
) -> None:
    settings_at()
    caplog.set_level(logging.INFO)  # the root at INFO, as a default run has it
    logging.getLogger("httpx").info('HTTP Request: GET http://prom/api/v1/query "HTTP/1.1 200 OK"')
    logging.getLogger("httpcore.connection").info("connect_tcp.started")
    logging.getLogger("httpx").warning("retrying")
    assert [r.getMessage() for r in caplog.records] == ["retrying"]


def test_debug_level_keeps_http_request_lines(restore_levels: None, caplog: pytest.LogCaptureFixture) -> None:
    settings_at("--log-level", "debug")
    caplog.set_level(logging.DEBUG)
    logging.getLogger("httpx").info("HTTP Request: GET http://prom/api/v1/query")
    assert [r.name for r in caplog.records] == ["httpx"]
