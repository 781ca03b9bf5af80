"""PodDisruptionBudgets: which cover a pod, the fewest disruptions allowed, and the eviction skip."""

from __future__ import annotations

from dataclasses import replace

from podsizer.policy import PlanPolicy
from podsizer.selector import from_label_selector
from tests.unit.updater.builders import NOW, facts, pod, rec
from updater.budget import Ledger
from updater.decide import UpdaterPolicy, decide
from updater.pdb import PdbCache, disruptions_allowed


def _pdb(name: str, selector: object, allowed: int, namespace: str = "shop") -> dict[str, object]:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": selector},
        "status": {"disruptionsAllowed": allowed},
    }


def test_label_selectors_match_as_the_api_server_does() -> None:
    sel = from_label_selector(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}],
        }
    )
    assert sel is not None
    assert sel.matches({"app": "web"}) and not sel.matches({"app": "web", "tier": "db"})
    every = from_label_selector({})
    assert every is not None and every.matches({"anything": "x"})
    assert from_label_selector(None) is None
    assert from_label_selector({"matchExpressions": [{"key": "a", "operator": "Near"}]}) is None


def test_the_fewest_disruptions_of_the_covering_budgets_count() -> None:
    cache = PdbCache()
    cache.replace(
        [
            _pdb("a", {"matchLabels": {"app": "web"}}, 2),
            _pdb("b", {"matchLabels": {"app": "web"}}, 1),
            _pdb("c", {"matchLabels": {"app": "db"}}, 0),
            _pdb("d", {"matchLabels": {"app": "web"}}, 0, namespace="other"),
        ]
    )
    assert disruptions_allowed({"app": "web"}, cache.budgets("shop")) == 1
    assert disruptions_allowed({"app": "cache"}, cache.budgets("shop")) is None
    cache.event("DELETED", _pdb("b", {}, 0))
    assert disruptions_allowed({"app": "web"}, cache.budgets("shop")) == 2


def test_a_budget_allowing_no_disruption_skips_the_eviction() -> None:
    f = facts(pod(), rec(), "recreate", policy=PlanPolicy(default_mode="auto"))
    policy = UpdaterPolicy(PlanPolicy(default_mode="auto"))
    assert decide(replace(f, pdb_allows=0), policy, Ledger(), NOW).reason == "pdb-no-disruptions-allowed"
    assert decide(replace(f, pdb_allows=1), policy, Ledger(), NOW).kind == "evicted"
    assert decide(f, policy, Ledger(), NOW).kind == "evicted"  # not covered: the Eviction API decides
