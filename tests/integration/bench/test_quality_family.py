"""Recurring peaks through a real Prometheus: `podsizer recommend -o json --source prometheus` sizes a
weekly heavy day for that day, and a CI-sized seed of the randomised family keeps the regression rule (the
default is not unsafe on a pattern family where KRR simple p99 is safe). One TSDB holds both, in two
namespaces."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from bench.quality import family, prom, tools
from bench.quality.family_run import DEFAULT, KRR99, family_totals, rule_breaks, split_by_namespace
from bench.quality.run import FIXED_T
from bench.quality.score import SAFE_CPU_SHARE, Sizing
from bench.quality.traces import HISTORY, MINUTES_PER_DAY, Cluster

pytestmark = pytest.mark.integration

CI_SEED = 24
"""Not one of the seeds tuned on (3001-3003) or reported (2001-2010)."""
CI_WORKLOADS = 24


@dataclass(frozen=True)
class Run:
    seed: Cluster
    heavy: Cluster
    sizing: dict[str, dict[tools.Key, Sizing]]
    reasons: dict[tuple[str, str], str]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    if not Path(prom.PROMTOOL).exists():
        pytest.skip("promtool not installed (Debian package prometheus)")
    seed = family.generate(CI_SEED, CI_WORKLOADS)
    heavy = Cluster(0, (family.heavy_monday(),))
    work = tmp_path_factory.mktemp("family")
    with prom.served_many([seed, heavy], FIXED_T, work, {}) as server:
        spaces = [family.namespace(CI_SEED), "heavy-day"]
        doc = prom.recommend(server.url, FIXED_T, work, ("--profile", "conservative"), spaces)
    per = split_by_namespace(doc)
    sizing = {ns: tools.podsizer_sizing(d) for ns, d in per.items()}
    reasons = {
        (str(i["spec"]["targetRef"]["name"]), str(c["name"])): str(c["reason"])
        for i in per["heavy-day"]["items"]
        for c in i["status"]["containers"]
    }
    return Run(seed, heavy, sizing, reasons)


def test_a_weekly_heavy_day_is_requested_what_it_needs(run: Run) -> None:
    (pattern,) = run.heavy.patterns
    pod = pattern.pods[0]
    monday = pod.cpu["app"][:MINUTES_PER_DAY]  # the first day of history, a Monday like the first scored day
    request = run.sizing["heavy-day"][("heavy-monday", "app")].cpu_request
    assert request >= float(np.percentile(monday, 99))  # the heavy day's own p99, not the quiet days'
    scored_monday = pod.cpu["app"][HISTORY : HISTORY + MINUTES_PER_DAY]
    assert float(np.mean(scored_monday > request)) <= SAFE_CPU_SHARE
    assert "a weekly cycle cannot be ruled out" in run.reasons[("heavy-monday", "app")]


def test_the_regression_rule_holds_on_a_ci_sized_seed(run: Run) -> None:
    sizings = {DEFAULT: run.sizing[family.namespace(CI_SEED)], KRR99: tools.krr_sizing(run.seed, 99)}
    scores = {CI_SEED: tools.score_cluster(run.seed, sizings)}
    per_family = family_totals([run.seed], scores)
    assert len(per_family) >= 8  # a few dozen workloads reach most of the families
    assert all(np.isfinite(t[DEFAULT].cpu_requested) for t in per_family.values())  # every one sized
    # every percentile-sized family keeps the rule; the autopilot's is reported, not asserted
    # (family.AUTOPILOT_FAMILIES: an HPA's target, not the request, decides its minutes above the request)
    assert [f for f in rule_breaks(per_family) if f not in family.AUTOPILOT_FAMILIES] == []
