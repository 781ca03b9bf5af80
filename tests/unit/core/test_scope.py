"""Scope: namespace globs in and out, kinds, the selector on pod labels, and what matched nothing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from podsizer.api.identity import SUPPORTED_KINDS, WorkloadRef
from podsizer.scope import Scope, kind_named, scope_of
from podsizer.selector import parse
from podsizer.settings import RecommenderSettings
from tests.support.hypo import examples

WEB = WorkloadRef("team-a", "Deployment", "web")
DB = WorkloadRef("team-b", "StatefulSet", "db")
AGENT = WorkloadRef("kube-system", "DaemonSet", "agent")
LABELS = {WEB: {"app": "web", "tier": "front"}, DB: {"app": "db"}, AGENT: {"app": "agent"}}


def _kept(scope: Scope) -> set[WorkloadRef]:
    return {w for w, labels in LABELS.items() if scope.matches(w, labels)}


def test_the_default_scope_takes_everything() -> None:
    assert Scope().everything
    assert _kept(Scope()) == set(LABELS)
    assert Scope().unmatched(LABELS) == ()


def test_namespace_globs_include_and_exclude() -> None:
    assert _kept(Scope(namespaces=("team-*",))) == {WEB, DB}
    assert _kept(Scope(exclude_namespaces=("kube-*",))) == {WEB, DB}
    assert _kept(Scope(namespaces=("team-*",), exclude_namespaces=("team-b",))) == {WEB}
    assert _kept(Scope(namespaces=("team-?",))) == {WEB, DB}
    assert _kept(Scope(namespaces=("team-[a]",))) == {WEB}


def test_the_selector_is_matched_against_pod_labels() -> None:
    assert _kept(Scope(selector=parse("app in (web,db),tier!=back"))) == {WEB, DB}
    assert _kept(Scope(selector=parse("tier"))) == {WEB}


def test_kinds_keep_only_those_kinds() -> None:
    assert _kept(Scope(kinds=("StatefulSet", "DaemonSet"))) == {DB, AGENT}


def test_listed_namespaces_only_when_every_include_is_a_plain_name() -> None:
    assert Scope(namespaces=("b", "a", "a")).listed_namespaces() == ["a", "b"]
    assert Scope(namespaces=("a", "b"), exclude_namespaces=("b*",)).listed_namespaces() == ["a"]
    assert Scope(namespaces=("a", "team-*")).listed_namespaces() is None
    assert Scope().listed_namespaces() is None


def test_unmatched_names_each_namespace_pattern_that_matched_nothing() -> None:
    scope = Scope(namespaces=("team-a", "tema-b", "prod-*"))
    assert scope.unmatched(LABELS) == (
        "namespace 'tema-b' matched no workload",
        "namespace pattern 'prod-*' matched no workload",
    )


def test_unmatched_names_the_selector_within_the_namespaces() -> None:
    scope = Scope(namespaces=("team-*",), selector=parse("app=agent"))
    assert scope.unmatched(LABELS) == (
        "label selector 'app=agent' matched no workload in the namespaces in scope",
    )


def test_unmatched_names_each_kind_without_a_workload() -> None:
    scope = Scope(namespaces=("team-a",), kinds=("Deployment", "StatefulSet"))
    assert scope.unmatched(LABELS) == ("kind StatefulSet matched no workload in scope",)


def test_kind_names_are_case_insensitive_and_checked() -> None:
    assert kind_named(" statefulset ") == "StatefulSet"
    with pytest.raises(ValueError, match="unknown workload kind 'Pod'; expected one of Deployment"):
        kind_named("Pod")


def test_scope_of_reads_the_settings() -> None:
    s = RecommenderSettings.model_validate(
        {"namespaces": "team-*", "exclude_namespaces": "team-b", "selector": "app=web", "kinds": "deployment"}
    )
    assert scope_of(s) == Scope(("team-*",), ("team-b",), parse("app=web"), ("Deployment",))


@settings(max_examples=examples(300))
@given(
    st.lists(st.sampled_from(["team-*", "team-a", "kube-*", "*", "x"]), max_size=3),
    st.lists(st.sampled_from(["team-*", "team-b", "kube-*", "x"]), max_size=2),
    st.lists(st.sampled_from(sorted(SUPPORTED_KINDS)), max_size=2),
)
def test_a_workload_is_kept_iff_namespace_and_kind_both_match(
    include: list[str], exclude: list[str], kinds: list[str]
) -> None:
    scope = Scope(tuple(include), tuple(exclude), kinds=tuple(kinds))
    for w, labels in LABELS.items():
        assert scope.matches(w, labels) == (
            scope.matches_namespace(w.namespace) and (not kinds or w.kind in kinds)
        )
