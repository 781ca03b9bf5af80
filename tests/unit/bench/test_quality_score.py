"""The quality benchmark's scorer arithmetic, KRR's simple strategy, and reading podsizer's JSON."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench.quality import krr
from bench.quality.score import Score, Sizing, Total, dominated_by, dominates, score, total, winner
from bench.quality.tools import podsizer_sizing

MI = 2.0**20


def test_score_counts_pod_minutes_above_request_and_limit() -> None:
    cpu = [np.array([0.1, 0.3, 0.5]), np.array([0.2])]
    mem = [np.array([100.0, 300.0, 200.0]), np.array([250.0])]
    s = score(cpu, mem, Sizing(0.25, 150.0, 260.0), minutes=4)
    assert s.pod_minutes == 4
    assert s.cpu_over == 2 and s.cpu_over_share == 0.5
    assert s.memory_over == 1
    assert s.cpu_requested == pytest.approx(0.25 * 4 / 4)
    assert s.cpu_used == pytest.approx(1.1 / 4)
    assert s.cpu_slack == pytest.approx(0.25 - 1.1 / 4)
    assert s.memory_slack == pytest.approx(150.0 - 850.0 / 4)


def test_without_a_memory_limit_the_request_is_the_ceiling() -> None:
    s = score([np.array([0.0, 0.0])], [np.array([100.0, 200.0])], Sizing(1.0, 150.0), minutes=2)
    assert s.memory_over == 1


def test_requested_is_averaged_over_the_window_per_live_pod() -> None:
    # one pod for the whole 4 minutes, one for 2 of them: 6 pod-minutes of a 0.5-core request
    s = score([np.zeros(4), np.zeros(2)], [np.ones(4), np.ones(2)], Sizing(0.5, 10.0), minutes=4)
    assert s.cpu_requested == pytest.approx(0.5 * 6 / 4)
    assert s.memory_requested == pytest.approx(10.0 * 6 / 4)


def test_total_means_shares_per_container_and_pools_them_by_pod_minutes() -> None:
    a = Score(100, 10, 0, 1.0, 100.0, 0.5, 50.0)
    b = Score(300, 0, 5, 2.0, 200.0, 1.0, 150.0)
    t = total([a, b])
    assert t.mean_cpu_over_share == pytest.approx((0.1 + 0.0) / 2)
    assert t.pooled_cpu_over_share == pytest.approx(10 / 400)
    assert t.oom_containers == 1 and t.memory_over_minutes == 5
    assert (t.cpu_requested, t.memory_requested) == (3.0, 300.0)
    assert (t.cpu_slack, t.memory_slack) == (1.5, 100.0)


def _t(share: float, oom: int, cpu: float, mem: float) -> Total:
    return Total(1, share, share, oom, oom * 10, cpu, mem, 0.0, 0.0)


def test_dominance_needs_no_worse_everywhere_and_better_somewhere() -> None:
    assert dominates(_t(0.01, 0, 1.0, 2.0), _t(0.02, 0, 1.0, 2.0))
    assert not dominates(_t(0.01, 0, 1.0, 2.0), _t(0.01, 0, 1.0, 2.0))
    assert not dominates(_t(0.01, 0, 1.5, 2.0), _t(0.02, 0, 1.0, 2.0))
    fronts = dominated_by({"a": _t(0.01, 0, 1.0, 2.0), "b": _t(0.02, 1, 1.0, 2.0), "c": _t(0.0, 0, 3.0, 2.0)})
    assert fronts == {"a": [], "b": ["a"], "c": []}


def test_winner_is_the_cheapest_safe_tool_else_the_least_risky() -> None:
    safe_dear, safe_cheap, risky = _t(0.0, 0, 2.0, GI), _t(0.01, 0, 1.0, GI), _t(0.05, 0, 0.5, GI)
    assert winner({"dear": safe_dear, "cheap": safe_cheap, "risky": risky}) == "cheap"
    assert winner({"risky": risky, "oom": _t(0.0, 1, 0.1, GI)}) == "risky"


GI = 2.0**30


def test_krr_simple_takes_the_largest_pod_percentile_and_max_memory_plus_15_percent() -> None:
    a, b = np.linspace(0, 1, 101), np.linspace(0, 2, 101)
    r = krr.simple([a, b], [np.full(101, 100.0), np.full(101, 300.0)], 95)
    assert r.cpu_request == pytest.approx(1.9)
    assert r.memory_request == r.memory_limit == pytest.approx(345.0)


def test_krr_simple_needs_a_hundred_points() -> None:
    r = krr.simple([np.ones(99)], [np.ones(99)], 95)
    assert math.isnan(r.cpu_request) and math.isnan(r.memory_request)


def _doc() -> dict[str, object]:
    return {
        "items": [
            {
                "spec": {"targetRef": {"kind": "Deployment", "name": "web"}},
                "status": {
                    "containers": [
                        {
                            "name": "app",
                            "requests": {"cpu": "250m", "memory": "100Mi"},
                            "limits": {"memory": "125Mi"},
                        }
                    ]
                },
                "plan": {
                    "skip": None,
                    "current": [
                        {
                            "container": "app",
                            "requests": {"cpu": "2", "memory": "1Gi"},
                            "limits": {"memory": "2Gi"},
                        }
                    ],
                    "changes": [
                        {
                            "container": "app",
                            "field": "requests",
                            "resource": "cpu",
                            "from": "2",
                            "to": "500m",
                        },
                        {
                            "container": "app",
                            "field": "limits",
                            "resource": "memory",
                            "from": "2Gi",
                            "to": "1Gi",
                        },
                    ],
                },
            }
        ]
    }


def test_podsizer_sizing_reads_the_recommendation_values() -> None:
    assert podsizer_sizing(_doc()) == {("web", "app"): Sizing(0.25, 100 * MI, 125 * MI)}


def test_podsizer_plan_sizing_applies_the_changes_to_the_current_values() -> None:
    assert podsizer_sizing(_doc(), plan=True) == {("web", "app"): Sizing(0.5, 1024 * MI, 1024 * MI)}
