"""`podsizer recommend` (a process of its own) against a remote-read endpoint that answers decompression
bombs: refused with one clear error naming the server, the path and the cap, and a bomb each of whose
chunks is plausible decoded in bounded batches, each within the memory honest data of as many series takes
(its peak RSS from wait4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.steady_prometheus import HONEST, NAIVE_BOMB, PLAUSIBLE_BOMB, SteadyPrometheus, recommend

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
SERIES = 100
FLAGS = ("--window-days", "1", "--allow-empty")


@pytest.fixture(scope="module")
def honest_rss() -> int:
    with SteadyPrometheus(SERIES, HONEST) as server:
        ran = recommend(server.url, ROOT, *FLAGS)
    assert ran.status == 0 and server.reads >= 2, ran.stderr
    return ran.rss_bytes


def test_a_decompression_bomb_is_refused_with_a_clear_error_in_bounded_memory(honest_rss: int) -> None:
    with SteadyPrometheus(SERIES, NAIVE_BOMB) as server:
        ran = recommend(server.url, ROOT, *FLAGS)
    assert ran.status == 1 and "Traceback" not in ran.stderr, ran.stderr
    said = ran.stderr.strip().splitlines()[-1]
    assert said.startswith(f"podsizer recommend: Prometheus at {server.url}/api/v1/read answered remote read")
    assert "65,535 samples" in said and "at most 4,096" in said and "decompression bomb" in said
    assert "raise" not in said
    assert ran.rss_bytes < 1.5 * honest_rss, (ran.rss_bytes, honest_rss)


def test_a_bomb_of_plausible_chunks_is_decoded_within_the_memory_honest_data_takes(honest_rss: int) -> None:
    """Chunks of the most samples a chunk may declare, one a second: a sixteen times denser read than
    honest 15 s samples, decoded a batch at a time."""
    with SteadyPrometheus(SERIES, PLAUSIBLE_BOMB) as server:
        ran = recommend(server.url, ROOT, *FLAGS, timeout=900)
    assert ran.status == 0, ran.stderr
    assert ran.rss_bytes < 1.5 * honest_rss, (ran.rss_bytes, honest_rss)
