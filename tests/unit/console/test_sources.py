"""`podsizer console` source and store selection: the chosen source or a clear error (never the demo
instead), the store's Recommendations over a computed run, background refresh keeping the last data."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from fastapi.testclient import TestClient

from console.app import create_console_app
from console.data import StaticConsoleData
from console.refresh import RefreshingConsoleData
from console.sources import build, build_inputs, url_host
from podsizer.api.listdoc import list_document
from podsizer.cli import main
from podsizer.settings import ConsoleSettings, SettingsError, load
from recommender.input.demo_cluster import build_demo_dataset
from recommender.input.file import dump_dataset
from recommender.output.store.jsonfile import JsonFileStore
from recommender.sizing.engine import recommend
from tests.unit.console.sample import sample_data

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
ONE_DAY = {"PODSIZER_WINDOW_DAYS": "1"}


@pytest.fixture(autouse=True)
def _no_podsizer_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)


def _settings(env: Mapping[str, str], tmp_path: Path) -> ConsoleSettings:
    store = {"PODSIZER_STORE_FILE": str(tmp_path / "absent.json")}
    return load(ConsoleSettings, env={**store, **ONE_DAY, **env})


def test_no_setting_serves_the_demo(tmp_path: Path) -> None:
    assert build_inputs(_settings({}, tmp_path)).source_label == "demo"


def test_the_shared_source_setting_is_honoured_with_the_prometheus_host(tmp_path: Path) -> None:
    env = {"PODSIZER_SOURCE": "prometheus", "PODSIZER_PROMETHEUS_URL": "https://u:secret@prom.example:9091/x"}
    assert build_inputs(_settings(env, tmp_path)).source_label == "prometheus (prom.example:9091)"


def test_the_console_source_wins_over_the_shared_one(tmp_path: Path) -> None:
    env = {"PODSIZER_SOURCE": "prometheus", "PODSIZER_CONSOLE_SOURCE": "demo"}
    assert build_inputs(_settings(env, tmp_path)).source_label == "demo"


def test_a_source_the_console_cannot_read_is_an_error_naming_the_setting(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"^PODSIZER_SOURCE \(--source\): the console cannot read"):
        build_inputs(_settings({"PODSIZER_SOURCE": "dcgm"}, tmp_path))


def test_an_unknown_console_source_is_an_error_naming_the_setting(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"^PODSIZER_CONSOLE_SOURCE \(--console-source\): Input should"):
        _settings({"PODSIZER_CONSOLE_SOURCE": "dcgm"}, tmp_path)


def test_the_file_source_needs_its_file(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"^PODSIZER_SOURCE_FILE \(--source-file\): required when"):
        build_inputs(_settings({"PODSIZER_CONSOLE_SOURCE": "file"}, tmp_path))
    missing = {"PODSIZER_CONSOLE_SOURCE": "file", "PODSIZER_SOURCE_FILE": str(tmp_path / "no.json")}
    with pytest.raises(SettingsError, match=r"^PODSIZER_SOURCE_FILE \(--source-file\): .*no such file"):
        build_inputs(_settings(missing, tmp_path))


def test_the_file_source_serves_the_files_data(tmp_path: Path) -> None:
    dump_dataset(build_demo_dataset(NOW, days=1), tmp_path / "data.json")
    env = {"PODSIZER_CONSOLE_SOURCE": "file", "PODSIZER_SOURCE_FILE": str(tmp_path / "data.json")}
    data = build(build_inputs(_settings(env, tmp_path)), NOW)
    demo = build(build_inputs(_settings({}, tmp_path)), NOW)
    assert data.meta().source == f"file:{tmp_path / 'data.json'}"
    assert [r.workload for r in data.workloads()] == [r.workload for r in demo.workloads()]


def test_an_unreachable_prometheus_fails_at_start_instead_of_serving_the_demo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["console", "--source", "prometheus", "--prometheus-url", "http://127.0.0.1:9"]
    argv += ["--prometheus-timeout-seconds", "2", "--store-file", str(tmp_path / "absent.json")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "podsizer console: cannot read prometheus (127.0.0.1:9) (PODSIZER_SOURCE (--source)):"
    )


def test_the_profile_shapes_the_run_the_console_computes(tmp_path: Path) -> None:
    default = build_inputs(_settings({}, tmp_path)).sizing
    balanced = build_inputs(_settings({"PODSIZER_PROFILE": "balanced"}, tmp_path)).sizing
    assert (default.cpu_percentile, default.cpu_burst_path) == (0.99, False)
    assert (balanced.cpu_percentile, balanced.cpu_burst_path) == (0.98, True)


def test_url_host_never_shows_credentials() -> None:
    assert url_host("http://user:pw@thanos:10902/") == "thanos:10902"


def test_without_a_store_the_recommendations_are_computed_and_the_header_says_so(tmp_path: Path) -> None:
    data = build(build_inputs(_settings({}, tmp_path)), NOW)
    assert data.workloads()
    assert data.meta().store == f"json {tmp_path / 'absent.json'} (absent)"
    assert data.meta().origin == "computed from the source's data (store absent)"


def test_an_empty_store_falls_back_to_the_computed_run(tmp_path: Path) -> None:
    (tmp_path / "recs.json").write_bytes(orjson.dumps(list_document([])))
    data = build(build_inputs(_settings({"PODSIZER_STORE_FILE": str(tmp_path / "recs.json")}, tmp_path)), NOW)
    assert data.workloads()
    assert data.meta().origin == "computed from the source's data (store empty)"


def test_the_stores_recommendations_win_over_the_computed_run(tmp_path: Path) -> None:
    inputs = build_inputs(_settings({}, tmp_path))
    _, snapshot = inputs.dataset(NOW - inputs.window, NOW)
    chosen = recommend(snapshot, inputs.sizing, inputs.prices, NOW).recommendations[:2]
    recs_path = tmp_path / "recs.json"
    assert JsonFileStore(recs_path).put_many(chosen) == []
    data = build(build_inputs(_settings({"PODSIZER_STORE_FILE": str(recs_path)}, tmp_path)), NOW)
    assert {r.workload for r in data.workloads()} == {r.target for r in chosen}
    assert (data.meta().origin, data.meta().store) == ("2 from the store", f"json {recs_path}")


def _static(source: str) -> StaticConsoleData:
    data = sample_data()
    return dataclasses.replace(data, info=dataclasses.replace(data.info, source=source))


def test_a_failed_refresh_keeps_the_last_data_and_shows_the_error() -> None:
    results: list[StaticConsoleData | Exception] = [_static("first"), RuntimeError("prometheus down")]

    def build_fn(now: datetime) -> StaticConsoleData:
        item = results.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    data = RefreshingConsoleData(build_fn, lambda: NOW)
    assert data.refresh() is False
    assert (data.meta().source, data.meta().error) == ("first", "RuntimeError: prometheus down")
    assert data.workloads() == _static("first").workloads()
    page = TestClient(create_console_app(data.current)).get("/").text
    assert "refresh failed" in page and "prometheus down" in page
    results.append(_static("second"))
    assert data.refresh() is True
    assert (data.meta().source, data.meta().error) == ("second", None)


def test_a_build_failing_at_start_raises() -> None:
    def failing(now: datetime) -> StaticConsoleData:
        raise RuntimeError("no source")

    with pytest.raises(RuntimeError, match="no source"):
        RefreshingConsoleData(failing, lambda: NOW)


def test_an_unreadable_store_fails_at_start_naming_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "recs.json").write_text("not json")
    argv = ["console", "--window-days", "1", "--store-file", str(tmp_path / "recs.json")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        f"podsizer console: cannot read the store json {tmp_path / 'recs.json'} (PODSIZER_STORE"
    )


def test_each_request_reads_one_build_when_the_data_is_swapped_between_reads() -> None:
    a, b = _static("a"), dataclasses.replace(_static("b"), workload_rows=())
    calls: list[StaticConsoleData] = []

    def current() -> StaticConsoleData:  # a different build at every call, as if refreshed meanwhile
        calls.append(b if len(calls) % 2 else a)
        return calls[-1]

    body = TestClient(create_console_app(current)).get("/api/overview").json()
    assert (body["meta"]["source"], len(body["workloads"])) == ("a", len(a.workloads()))
    assert len(calls) == 1 and a.workloads()
