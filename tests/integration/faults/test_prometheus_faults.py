"""Fault injection: the recommender against a broken or hostile Prometheus (faults/fakeprom.py).

Each case drives the real path (`podsizer recommend --write` through recommender.commands, or the loop's
Runner over the real Prometheus source and client) and asserts its outcome: no crash, a clear error naming
the setting, no absurd value in the stored Recommendations, rejected samples counted.
"""

from __future__ import annotations

import argparse
import os
import re
import threading
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from podsizer.keys import ALLOW_LARGE_CHANGE_KEY
from podsizer.settings import RecommenderSettings, load_from_args
from podsizer.settings import add_arguments as add_setting_arguments
from podsizer.subject import Subject
from recommender.commands import add_run_arguments, run_loop
from recommender.input.prometheus import PrometheusSource
from recommender.metrics import RecommenderMetrics
from recommender.model import SourceError
from recommender.output.store.jsonfile import JsonFileStore
from recommender.runner import Runner, engine_recommender
from recommender.wiring import Wiring, build_prices, build_prometheus_source
from tests.integration.faults.conftest import recommend
from tests.integration.faults.fakeprom import MEMORY_BYTES, Served
from tests.unit.webhook import builders as wb

CEILINGS = RecommenderSettings().ceilings()
SETTING = "PODSIZER_PROMETHEUS_MAX_RESPONSE_BYTES"


def settings_for(url: str, *extra: str) -> RecommenderSettings:
    parser = argparse.ArgumentParser()
    add_setting_arguments(parser, RecommenderSettings)
    args = parser.parse_args([f"--prometheus-url={url}", "--namespaces=shop", "--window-days=1", *extra])
    return load_from_args(RecommenderSettings, args)


def window() -> tuple[datetime, datetime]:
    end = datetime.now(UTC)
    return end - timedelta(days=1), end


# --- bad values ----------------------------------------------------------------------------------


def test_a_2_pow_64_bytes_outlier_never_reaches_the_stored_memory_request(
    prom: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prom.fake.mode = "outlier"
    got = recommend(prom.url, tmp_path / "recs.json", capsys)
    assert got.status == 0, got.stderr
    memory = got.memory_requests()
    assert len(memory) == 1
    assert memory[0] <= CEILINGS.memory_bytes
    assert memory[0] < 4 * MEMORY_BYTES  # sized from the real usage (~200Mi), not from the outlier


def test_1e300_cpu_and_memory_samples_and_requests_neither_crash_nor_reach_the_store(
    prom: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prom.fake.mode = "overflow"
    got = recommend(prom.url, tmp_path / "recs.json", capsys)
    assert got.status == 0, got.stderr
    assert len(got.stored) == 1
    assert all(v <= CEILINGS.memory_bytes for v in got.memory_requests())
    assert all(v <= CEILINGS.cpu_cores for v in got.cpu_requests())
    assert got.memory_requests() and got.cpu_requests()


def test_a_persistent_absurd_cpu_series_is_refused_not_recommended_at_the_ceiling(
    prom: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every CPU sample 1e300: stored low-confidence (confidence 0) with the reason, so the webhook applies
    nothing even to a pod without requests that opts in to large changes (it got the ceilings before)."""
    prom.fake.mode = "absurd-cpu"
    got = recommend(prom.url, tmp_path / "recs.json", capsys)
    assert got.status == 0, got.stderr
    (container,) = got.stored[0].containers
    assert (container.low_confidence, container.confidence) == (True, 0.0)
    assert "implausible cpu series: the estimate reaches the configured ceiling 256000m" in container.reason
    pod = wb.replicaset_pod(
        containers=[wb.container("app")], annotations={ALLOW_LARGE_CHANGE_KEY: "true"}, template_hash="6d4b"
    )
    reply, decision = wb.admitter(got.stored[0]).review(wb.review(pod))
    assert (decision.reason, wb.decode_patch(reply)) == ("low-confidence", [])


def test_working_set_samples_above_the_containers_memory_limit_are_never_sized(
    prom: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every sample 1e300, the pods' memory limit 1 GiB: no working set can be above it (the cgroup holds
    it under), so every memory sample is rejected and the workload is not sized, naming why; nothing is
    stored for the webhook to apply."""
    prom.fake.mode = "absurd"
    got = recommend(prom.url, tmp_path / "recs.json", capsys)
    assert got.status == 0, got.stderr
    assert got.stored == ()
    (skip,) = got.skipped
    why = r"memory: no usable samples \(\d+ samples above the container's memory limit rejected\): not sized"
    assert re.search(why, str(skip["reason"])), skip


def test_negative_samples_do_not_replace_a_stored_recommendation_with_floors(
    prom: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "recs.json"
    good = recommend(prom.url, store, capsys)
    assert good.status == 0 and good.memory_requests()
    prom.fake.mode = "negative"
    got = recommend(prom.url, store, capsys)
    assert got.status == 0, got.stderr
    assert got.memory_requests() == good.memory_requests()  # not 32Mi
    assert got.cpu_requests() == good.cpu_requests()  # not 10m


def test_nan_and_inf_samples_are_dropped_and_counted_by_recommend(
    prom: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prom.fake.mode = "nan"
    got = recommend(prom.url, tmp_path / "recs.json", capsys)
    assert got.status == 0, got.stderr
    assert prom.fake.non_finite_sent > 0
    assert f"left out {prom.fake.non_finite_sent} non-finite samples" in got.stderr
    assert len(got.stored) == 1 and all(0 < v <= 4 * MEMORY_BYTES for v in got.memory_requests())


def test_the_loop_counts_rejected_samples_in_its_metric(prom: Served, tmp_path: Path) -> None:
    prom.fake.mode = "nan"
    registry = CollectorRegistry()
    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    args = parser.parse_args(
        [
            "--once",
            "--source=prometheus",
            f"--prometheus-url={prom.url}",
            "--namespaces=shop",
            "--window-days=1",
            "--store=json",
            f"--store-file={tmp_path / 'recs.json'}",
            "--metrics-port=0",
        ]
    )
    assert run_loop(args, Wiring(registry=lambda: registry)) == 0
    counted = registry.get_sample_value(
        "podsizer_recommender_rejected_samples_total", {"reason": "non-finite"}
    )
    assert counted == prom.fake.non_finite_sent > 0


# --- huge answers --------------------------------------------------------------------------------


def test_an_answer_over_the_cap_is_split_over_time_with_the_same_result(prom: Served) -> None:
    prom.fake.wide = 40  # each CPU/memory answer ~0.5 MB over the day; a quarter fits in 200 kB
    start, end = window()
    whole = build_prometheus_source(settings_for(prom.url)).collect(start, end)
    before = len([p for p in prom.fake.paths if p == "/api/v1/query_range"])
    split = build_prometheus_source(settings_for(prom.url, "--prometheus-max-response-bytes=200000"))
    pieces = split.collect(start, end)
    asked = len([p for p in prom.fake.paths if p == "/api/v1/query_range"]) - before
    assert asked > before  # the capped run asked more, smaller range queries
    assert pieces.containers == whole.containers
    assert not [s for s in pieces.skipped if s.subject == Subject.of_namespace("shop")]


def test_an_unsplittable_huge_answer_skips_the_namespace_naming_the_setting_and_keeps_the_store(
    prom: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "recs.json"
    assert recommend(prom.url, store, capsys).status == 0
    kept = JsonFileStore(store).list()
    prom.fake.mode, prom.fake.pad_bytes = "huge", 5_000_000
    t0 = time.monotonic()
    got = recommend(prom.url, store, capsys, "--prometheus-max-response-bytes=64Ki")
    assert time.monotonic() - t0 < 60
    assert got.status == 0
    assert tuple(kept) == got.stored  # nothing new written; the earlier recommendations stay
    source = build_prometheus_source(settings_for(prom.url, "--prometheus-max-response-bytes=64Ki"))
    (skipped,) = [s for s in source.collect(*window()).skipped if s.subject == Subject.of_namespace("shop")]
    assert SETTING in skipped.reason and "65536 bytes" in skipped.reason


def test_memory_read_for_a_huge_answer_stays_near_the_cap(prom: Served) -> None:
    prom.fake.mode, prom.fake.pad_bytes = "huge", 30_000_000  # 30 MB per range answer, chunked
    source = build_prometheus_source(settings_for(prom.url, "--prometheus-max-response-bytes=1Mi"))
    assert isinstance(source, PrometheusSource)
    tracemalloc.start()
    try:
        snapshot = source.collect(*window())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [s for s in snapshot.skipped if s.subject == Subject.of_namespace("shop")]
    assert peak < 8 * 2**20, f"peak {peak} bytes traced for 30 MB answers with a 1 MiB cap"


# --- slow answers and outages --------------------------------------------------------------------


@pytest.mark.parametrize("mode,delay", [("slow", 3.0), ("trickle", 0.05)])
def test_an_answer_slower_than_the_timeout_fails_the_run_in_bounded_time(
    prom: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str, delay: float
) -> None:
    prom.fake.mode, prom.fake.delay = mode, delay
    t0 = time.monotonic()
    got = recommend(prom.url, tmp_path / "recs.json", capsys, "--prometheus-timeout-seconds=1")
    assert time.monotonic() - t0 < 20
    assert got.status == 1
    assert "timed out" in got.stderr
    assert got.stored == ()


def test_the_loop_backs_off_on_5xx_keeps_the_last_recommendations_and_recovers(
    prom: Served, tmp_path: Path
) -> None:
    settings = settings_for(prom.url, "--backoff-initial-seconds=10", "--interval-seconds=3600")
    store = JsonFileStore(tmp_path / "recs.json")
    runner = Runner(
        build_prometheus_source(settings),
        store,
        engine_recommender(settings.to_sizing_policy(), build_prices(settings)),
        window_days=settings.window_days,
        interval_seconds=settings.interval_seconds,
        backoff_initial_seconds=settings.backoff_initial_seconds,
        backoff_max_seconds=settings.backoff_max_seconds,
        metrics=RecommenderMetrics(CollectorRegistry()),
    )
    waits: list[float] = []
    stored: list[int] = []
    stop = threading.Event()

    def wait(seconds: float) -> bool:
        """The loop's sleep: the fake fails after the first run and recovers after two failures."""
        waits.append(seconds)
        stored.append(len(store.list()))
        if len(waits) == 1:
            prom.fake.mode, prom.fake.failures = "5xx", 2  # a failing run stops at its first 503
        return len(waits) >= 4 or stop.is_set()  # bounded: four runs at most

    runner.run_forever(stop, wait)
    assert len(waits) == 4
    assert waits[0] > 3000 and waits[3] > 3000  # interval after the successes
    assert 5 <= waits[1] <= 10 and 10 <= waits[2] <= 20  # backoff (jittered) while Prometheus answers 503
    assert stored == [1, 1, 1, 1]  # the recommendation written first stays through the outage
    assert prom.fake.failures == 0


# --- token rotation ------------------------------------------------------------------------------


def test_a_rotated_token_file_is_used_without_a_restart(prom: Served, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first\n")
    prom.fake.token = "first"
    source = build_prometheus_source(settings_for(prom.url, f"--prometheus-bearer-token-file={token}"))
    assert source.collect(*window()).containers
    prom.fake.token = "second-token"  # Prometheus rotated first: 401 until the file has the new token
    with pytest.raises(SourceError, match="401"):
        source.collect(*window())
    token.write_text("second-token\n")
    assert source.collect(*window()).containers
    assert prom.fake.unauthorized == 1  # re-read once on the 401, same token: no retry, no loop


def test_a_401_rereads_a_token_rewritten_in_place_and_retries_once(prom: Served, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("aaaa")
    stamp = os.stat(token)
    prom.fake.token = "aaaa"
    source = build_prometheus_source(settings_for(prom.url, f"--prometheus-bearer-token-file={token}"))
    assert source.collect(*window()).containers
    token.write_text("bbbb")  # same inode and size; mtime put back: the stat check cannot see it
    os.utime(token, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    prom.fake.token = "bbbb"
    before = prom.fake.unauthorized
    assert source.collect(*window()).containers
    assert prom.fake.unauthorized - before == 1  # one 401, then the re-read token worked


def test_an_unreadable_token_file_at_start_is_a_settings_error_naming_it(tmp_path: Path) -> None:
    from podsizer.settings import SettingsError

    with pytest.raises(SettingsError, match="PODSIZER_PROMETHEUS_BEARER_TOKEN_FILE"):
        build_prometheus_source(
            settings_for("http://127.0.0.1:9", f"--prometheus-bearer-token-file={tmp_path / 'x'}")
        )
