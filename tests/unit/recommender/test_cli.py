"""The podsizer CLI and the recommender commands: output and exit codes, run --once, lazy subcommands."""

from __future__ import annotations

import argparse
import http.server
import io
import json
import subprocess
import sys
import threading
import types
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from podsizer.api.identity import WorkloadRef
from podsizer.api.resource import ContainerRecommendation, Recommendation, Window
from podsizer.cli import COMMANDS, Command, main
from podsizer.settings import run_reporting_errors
from recommender.commands import add_recommend_arguments, run_recommend
from recommender.model import Progress, SourceError, UsageSnapshot
from recommender.progress import ProgressPrinter
from recommender.wiring import Wiring


class FakeSource:
    name = "fake"

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
        if self.error is not None:
            raise self.error
        if progress:
            progress(1, 1, "namespace shop")
        return UsageSnapshot(start, end, ())


class FakeRun:
    def __init__(self, now: datetime) -> None:
        self.recommendations = (
            Recommendation(
                target=WorkloadRef("shop", "Deployment", "web"),
                generated_at=now,
                window=Window(now - timedelta(days=7), now, 10),
                sizing_mode="static",
                containers=(ContainerRecommendation("main", {"cpu": "120m"}, {}, 0.8, "p99"),),
            ),
        )
        self.skipped = ()
        self.waste = ()
        self.costs = None


@dataclass
class FakePipeline:
    """A Wiring whose source and sizing are fakes; `source` can be swapped by a test."""

    source: FakeSource = field(default_factory=FakeSource)

    def wiring(self) -> Wiring:
        return Wiring(
            source=lambda settings, now: self.source,
            prices=lambda settings: None,
            sizing=lambda snapshot, policy, prices, now, bounds: FakeRun(now),
        )

    def recommend(self, *argv: str) -> int:
        """`podsizer recommend ARGV` with this pipeline, exit status as the CLI reports it."""
        parser = argparse.ArgumentParser(prog="podsizer recommend")
        add_recommend_arguments(parser)
        wiring = self.wiring()
        return run_reporting_errors("recommend", lambda a: run_recommend(a, wiring), parser.parse_args(argv))


@pytest.fixture
def fake_pipeline(monkeypatch: pytest.MonkeyPatch) -> FakePipeline:
    for name in list(__import__("os").environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)
    return FakePipeline()


def test_recommend_prints_json_and_exits_0(
    fake_pipeline: FakePipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    assert fake_pipeline.recommend("-o", "json", "--no-progress") == 0
    doc = json.loads(capsys.readouterr().out)
    assert [i["metadata"]["name"] for i in doc["items"]] == ["deployment-web"]


def test_recommend_write_stores_to_the_json_file(
    fake_pipeline: FakePipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "recs.json"
    assert fake_pipeline.recommend("--write", "--store-file", str(path), "--no-progress") == 0
    assert json.loads(path.read_text())["items"][0]["metadata"]["name"] == "deployment-web"
    assert f"wrote 1 recommendations to {path}" in capsys.readouterr().err


def test_source_error_is_one_line_and_exit_1(
    fake_pipeline: FakePipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_pipeline.source = FakeSource(SourceError("Prometheus at http://127.0.0.1:1 is unreachable"))
    assert fake_pipeline.recommend("--no-progress") == 1
    err = capsys.readouterr().err
    assert err == "podsizer recommend: Prometheus at http://127.0.0.1:1 is unreachable\n"


class _NoMethods(http.server.BaseHTTPRequestHandler):
    """Answers every request 501 (no do_GET, no do_POST), as `python -m http.server` answers a POST."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_server_that_answers_501_is_not_prometheus_not_one_in_trouble(
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NoMethods)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        code = main(["recommend", "--source", "prometheus", "--prometheus-url", url, "--no-progress"])
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    err = capsys.readouterr().err
    assert code == 1
    assert err == (
        f"podsizer recommend: {url} does not answer like the Prometheus API: HTTP 501 text/html (Error "
        "response) for /api/v1/query: set PODSIZER_PROMETHEUS_URL (--prometheus-url) to the API's base URL, "
        "without /api/v1 (a login page means a proxy wants credentials)\n"
    )


def test_corrupt_store_with_write_is_exit_1_and_names_the_file(
    fake_pipeline: FakePipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "recs.json"
    path.write_text("{oops")
    assert fake_pipeline.recommend("--write", "--store-file", str(path), "--no-progress") == 1
    assert str(path) in capsys.readouterr().err
    assert path.read_text() == "{oops"


def test_bad_setting_is_exit_2_naming_the_variable(
    fake_pipeline: FakePipeline, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PODSIZER_CPU_MARGIN", "-0.5")
    assert fake_pipeline.recommend() == 2
    err = capsys.readouterr().err
    assert err == (
        "podsizer recommend: PODSIZER_CPU_MARGIN (--cpu-margin): '-0.5' is outside the allowed range, "
        "0 to 10\n"
    )
    assert "Traceback" not in err


def test_usage_errors_are_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert main(["recommend", "-o", "xml"]) == 2
    assert main(["no-such-command"]) == 2
    assert main(["--help"]) == 0


def test_a_bad_choice_is_one_line_and_a_pointer_to_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recommend", "-o", "xml"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "podsizer recommend: error: argument -o/--output: invalid choice: 'xml' (choose from 'table', 'json',"
        " 'yaml', 'csv', 'html', 'markdown')",
        "(see `podsizer recommend --help`)",
    ]


def test_an_unknown_option_names_the_closest_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recommend", "--sorce", "demo", "--max-cpu-cors=4", "stray"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[0] == (
        "podsizer recommend: error: unknown option --sorce (did you mean --source?);"
        " unknown option --max-cpu-cors (did you mean --max-cpu-cores?); unexpected argument 'stray'"
    )
    assert "usage:" not in err


def test_an_unknown_command_names_the_closest_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recomend"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("podsizer: error: unknown command 'recomend' (did you mean recommend?); commands: ")
    assert main(["zzz"]) == 2
    assert "did you mean" not in capsys.readouterr().err


def test_a_validators_message_has_no_pydantic_prefix(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PODSIZER_RECENCY_HALF_LIFE", "soon")
    assert main(["recommend", "--source", "demo"]) == 2
    err = capsys.readouterr().err
    assert "PODSIZER_RECENCY_HALF_LIFE (--recency-half-life): not a duration: 'soon'" in err
    assert "Value error" not in err


def test_version_answers_without_importing_the_settings() -> None:
    code = "import sys; from podsizer.cli import main; main(['--version']); print('pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "False"


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"podsizer {version('podsizer')}\n"


def test_every_command_of_the_table_parses_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    names = [cmd.name for cmd in COMMANDS]
    assert names == ["recommend", "explain", "run", "webhook", "updater", "console", "certs", "demo"]
    codes = {name: main([name, "--help"]) for name in names}
    assert codes == dict.fromkeys(names, 0)


def test_a_missing_subcommand_module_says_not_available(capsys: pytest.CaptureFixture[str]) -> None:
    commands = (*COMMANDS, Command("ghost", "not installed", "podsizer_no_such_module.cli"))
    assert main(["ghost", "--x"], commands) == 1
    assert "podsizer ghost: not available" in capsys.readouterr().err
    assert main(["recommend", "--help"], commands) == 0  # the rest of the CLI still works


def test_module_subcommands_are_imported_only_when_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    mod = types.ModuleType("podsizer_fake_cmd")

    def add_arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--name")

    def run(args: argparse.Namespace) -> int:
        seen.append(args.name)
        return 7

    mod.add_arguments = add_arguments  # type: ignore[attr-defined]
    mod.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "podsizer_fake_cmd", mod)
    commands = (
        Command("fake", "a fake", "podsizer_fake_cmd"),
        Command("ghost", "never imported", "podsizer_no_such_module"),
    )
    assert main(["fake", "--name", "x"], commands) == 7
    assert seen == ["x"]


def test_progress_on_a_tty_rewrites_one_line_and_clears_it() -> None:
    stream, t = io.StringIO(), [0.0]
    p = ProgressPrinter(stream, tty=True, clock=lambda: t[0])
    p(1, 40, "namespace shop")
    t[0] = 0.01
    p(2, 40, "namespace ml")  # throttled
    t[0] = 1.0
    p(12, 40, "namespace ml")
    p.finish()
    out = stream.getvalue()
    assert out.startswith("\r[1/40] namespace shop")
    assert "[2/40]" not in out
    assert "\r[12/40] namespace ml" in out
    assert out.endswith("\r") and "\n" not in out


def test_progress_off_a_tty_prints_periodic_lines_and_nothing_for_short_runs() -> None:
    stream, t = io.StringIO(), [0.0]
    quick = ProgressPrinter(stream, tty=False, interval=10, clock=lambda: t[0])
    quick(1, 2, "a")
    quick(2, 2, "b")
    quick.finish()
    assert stream.getvalue() == ""
    slow = ProgressPrinter(stream, tty=False, interval=10, clock=lambda: t[0])
    for i in range(1, 31):
        t[0] = float(i)
        slow(i, 30, f"namespace n{i}")
    slow.finish()
    assert stream.getvalue().splitlines() == [
        "[10/30] namespace n10",
        "[20/30] namespace n20",
        "[30/30] namespace n30",
        "[30/30] namespace n30",
    ]


def test_recommend_on_the_demo_data_set(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end through the real demo source and sizing engine."""
    for name in list(__import__("os").environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)
    assert (
        main(["recommend", "--source", "demo", "-o", "json", "--no-progress", "--namespaces", "legacy"]) == 0
    )
    doc = json.loads(capsys.readouterr().out)
    names = [i["metadata"]["name"] for i in doc["items"]]
    assert names and all(i["metadata"]["namespace"] == "legacy" for i in doc["items"])
    assert "deploymentconfig-billing" in names
    assert doc["skipped"] and all(s["subject"].startswith("legacy/") for s in doc["skipped"])


def test_run_once_writes_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(__import__("os").environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)
    path = tmp_path / "recs.json"
    assert main(["run", "--once", "--source", "demo", "--namespaces", "shop", "--store-file", str(path)]) == 0
    items = json.loads(path.read_text())["items"]
    assert items and {i["metadata"]["namespace"] for i in items} == {"shop"}


def test_run_serves_metrics_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    """`podsizer run` as a real process: one run on the demo data, /metrics answers, SIGTERM ends it."""
    import os
    import signal
    import socket
    import subprocess
    import time

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = tmp_path / "recs.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODSIZER_")}
    env.update(
        PODSIZER_SOURCE="demo",
        PODSIZER_NAMESPACES="shop",
        PODSIZER_STORE_FILE=str(store),
        PODSIZER_METRICS_PORT=str(port),
        PODSIZER_METRICS_HOST="127.0.0.1",
    )
    code = "import sys; from podsizer.cli import main; sys.exit(main(['run']))"
    log = (tmp_path / "stderr.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stderr=log, text=True, cwd=Path(__file__).parents[3]
    )
    try:
        deadline = time.monotonic() + 60
        body = ""
        while time.monotonic() < deadline:
            try:
                body = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2).text
                if 'podsizer_recommender_loop_duration_seconds_count{outcome="ok"} 1.0' in body:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        assert 'podsizer_recommender_loop_duration_seconds_count{outcome="ok"} 1.0' in body
        assert "podsizer_recommender_leader 1.0" in body
        assert json.loads(store.read_text())["items"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    assert "Traceback" not in (tmp_path / "stderr.log").read_text()


def test_recommend_from_a_dcgm_exporter_endpoint_without_a_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--source dcgm scrapes the endpoint once; with no cluster to resolve pods, GPU pods are skipped."""
    import http.server
    import threading

    sample = Path("/work/shared/fixtures/dcgm-sample.txt")
    if not sample.exists():
        pytest.skip("fixture dcgm-sample.txt not present")
    body = sample.read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    for name in list(__import__("os").environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
        argv = ["recommend", "--source", "dcgm", "--dcgm-urls", url, "--kubeconfig", str(tmp_path / "none")]
        assert main([*argv, "-o", "json", "--no-progress"]) == 0
    finally:
        server.shutdown()
        server.server_close()
    doc = json.loads(capsys.readouterr().out)
    assert doc["items"] == []
    assert doc["skipped"], "GPU pods without a resolver must be reported as skipped"


def test_recommend_with_no_dcgm_endpoint_answering_is_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    for name in list(__import__("os").environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    url = f"http://127.0.0.1:{port}/metrics"
    argv = ["recommend", "--source", "dcgm", "--dcgm-urls", url, "--kubeconfig", str(tmp_path / "none")]
    assert main([*argv, "--no-progress"]) == 1
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith(f"podsizer recommend: no dcgm-exporter endpoint answered: {url}")
