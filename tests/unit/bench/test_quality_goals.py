"""The benchmark's goal checks: dominance with ties, OOM risk, explained results, patterns that lose."""

from __future__ import annotations

from bench.quality.goals import EXPECTED_WORDS, goals, losing, reasons, unexplained
from bench.quality.score import Total

PEERS = ("VPA", "KRR p99")
TOOLS = {"conservative": "podsizer conservative", "balanced": "podsizer balanced", "aggressive": "x"}


def _t(share: float, oom: int, cpu: float, mem: float) -> Total:
    return Total(1, share, share, oom, oom * 10, cpu, mem, 0.0, 0.0)


def _goals(bal: Total, cons: Total, missing: dict[str, list[str]] | None = None) -> list[tuple[bool, str]]:
    totals = {"VPA": _t(0.02, 0, 10.0, 20.0), "KRR p99": _t(0.03, 1, 12.0, 20.0)}
    totals |= {"podsizer balanced": bal, "podsizer conservative": cons}
    out = goals(totals, TOOLS, PEERS, missing or {"balanced": []})  # type: ignore[arg-type]
    return [(g.holds, g.detail) for g in out]


def test_balanced_holds_when_it_dominates_or_ties_vpa() -> None:
    assert _goals(_t(0.01, 0, 9.0, 20.0), _t(0.0, 0, 12.0, 20.0))[0] == (True, "")
    assert _goals(_t(0.02, 0, 10.0, 20.0), _t(0.0, 0, 12.0, 20.0))[0] == (True, "")


def test_balanced_fails_naming_the_axis_it_is_worse_on() -> None:
    holds, detail = _goals(_t(0.01, 0, 10.5, 20.0), _t(0.0, 0, 12.0, 20.0))[0]
    assert not holds and detail == "worse on CPU requested"


def test_conservative_needs_to_dominate_krr_and_zero_oom_risk() -> None:
    assert _goals(_t(0.0, 0, 1.0, 1.0), _t(0.01, 0, 11.0, 20.0))[1] == (True, "")
    holds, detail = _goals(_t(0.0, 0, 1.0, 1.0), _t(0.01, 1, 11.0, 20.0))[1]
    assert not holds and "1 containers at OOM risk" in detail


def test_unexplained_lists_what_each_reason_lacks() -> None:
    texts = {
        ("trend", "app"): "static; cpu: p99 500m x1.16 for the trend; memory: p99 600Mi",
        ("batch", "worker"): "static; cpu: p99 2s; memory: peak 1Gi",
        ("steady", "app"): "static; cpu: p99 250m",
    }
    patterns = {"trend": ["app"], "batch": ["worker"], "steady": ["app"], "tiny": ["app"]}
    assert unexplained("conservative", patterns, texts) == [
        "steady/app: reason lacks 'memory:'",
        "tiny/app: no recommendation",
    ]
    assert "batch/worker: reason lacks 'bursty'" in unexplained("balanced", patterns, texts)
    assert "for the trend" in EXPECTED_WORDS["trend"]


def test_the_explained_goal_fails_with_every_lacking_container() -> None:
    holds, detail = _goals(_t(0.0, 0, 1.0, 1.0), _t(0.0, 0, 1.0, 1.0), {"balanced": ["a/b: x"]})[2]
    assert not holds and detail == "balanced: a/b: x"


def test_reasons_join_the_workload_and_container_reason() -> None:
    doc = {
        "items": [
            {
                "spec": {"targetRef": {"name": "web"}},
                "status": {"reason": "static", "containers": [{"name": "app", "reason": "cpu: p99"}]},
            }
        ]
    }
    assert reasons(doc) == {("web", "app"): "static; cpu: p99"}


def test_losing_names_dominating_peers_and_safe_peers_where_the_tool_is_unsafe() -> None:
    per = {
        "a": {"me": _t(0.0, 0, 2.0, 1.0), "VPA": _t(0.0, 0, 1.0, 1.0), "KRR p99": _t(0.1, 0, 0.5, 1.0)},
        "b": {"me": _t(0.05, 0, 1.0, 1.0), "VPA": _t(0.01, 0, 2.0, 1.0), "KRR p99": _t(0.2, 0, 0.5, 1.0)},
        "c": {"me": _t(0.0, 0, 1.0, 1.0), "VPA": _t(0.0, 0, 2.0, 1.0), "KRR p99": _t(0.0, 0, 2.0, 1.0)},
    }
    assert losing(per, "me", PEERS) == (["a (by VPA)"], ["b (VPA)"])
