"""Label selectors: the Kubernetes grammar parses, prints back to itself, matches as the API server does."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from podsizer.selector import Requirement, Selector, SelectorError, parse, valid_key, valid_value
from tests.support.hypo import examples

_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_names = st.builds(
    lambda a, mid, b: a + mid + b if mid or b else a,
    st.sampled_from(_ALNUM),
    st.text(_ALNUM + "-_.", max_size=8),
    st.text(_ALNUM, max_size=1),
).filter(lambda s: s[-1].isalnum())
_prefixes = st.lists(st.text("abc0123", min_size=1, max_size=5), min_size=1, max_size=3).map(".".join)
_keys = st.one_of(_names, st.builds(lambda p, n: f"{p}/{n}", _prefixes, _names))
_values = st.one_of(st.just(""), _names)
_requirements = st.one_of(
    st.builds(Requirement, _keys, st.sampled_from(["exists", "!exists"])),
    st.builds(lambda k, op, v: Requirement(k, op, (v,)), _keys, st.sampled_from(["=", "!="]), _values),
    st.builds(
        lambda k, op, vs: Requirement(k, op, tuple(vs)),
        _keys,
        st.sampled_from(["in", "notin"]),
        st.lists(_names, min_size=1, max_size=4),
    ),
)
_selectors = st.lists(_requirements, max_size=5).map(lambda rs: Selector(tuple(rs)))


def test_the_issue_example_parses_into_its_four_requirements() -> None:
    selector = parse("app=web,tier!=cache,env in (prod,stage),!canary")
    assert selector.requirements == (
        Requirement("app", "=", ("web",)),
        Requirement("tier", "!=", ("cache",)),
        Requirement("env", "in", ("prod", "stage")),
        Requirement("canary", "!exists"),
    )


def test_spaces_double_equals_and_prefixed_keys_parse() -> None:
    selector = parse(" app.kubernetes.io/name == web , x notin ( a , b ) , gpu ")
    assert selector.requirements == (
        Requirement("app.kubernetes.io/name", "=", ("web",)),
        Requirement("x", "notin", ("a", "b")),
        Requirement("gpu", "exists"),
    )


def test_the_empty_selector_matches_everything() -> None:
    assert parse("") == Selector()
    assert parse("   ").matches({}) and parse("").matches({"a": "b"})


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("app web", "expected =, ==, !=, in or notin after 'app', got 'web'"),
        ("=web", "expected a label key, got '='"),
        ("app=web,", "expected a label key, got the end"),
        ("env in ()", "empty value set"),
        ("env in (a", "expected ')' closing the value set"),
        ("env in a", "expected '(' after in/notin"),
        ("app=-web", "invalid label value '-web'"),
        ("Bad_Prefix/app=web", "invalid label key 'Bad_Prefix/app'"),
        ("app>3", "invalid label key 'app>3'"),
        ("a" * 64 + "=x", "invalid label key"),
    ],
)
def test_malformed_selectors_say_why(text: str, why: str) -> None:
    with pytest.raises(SelectorError) as exc:
        parse(text)
    assert why in str(exc.value)
    assert repr(text) in str(exc.value)


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("app=web", {"app": "web"}, True),
        ("app=web", {"app": "api"}, False),
        ("app=web", {}, False),
        ("tier!=cache", {}, True),  # != matches an absent key, as in Kubernetes
        ("tier!=cache", {"tier": "cache"}, False),
        ("env in (prod,stage)", {"env": "stage"}, True),
        ("env in (prod,stage)", {}, False),
        ("env notin (prod)", {}, True),
        ("env notin (prod)", {"env": "prod"}, False),
        ("!canary", {"canary": "true"}, False),
        ("!canary", {"app": "web"}, True),
        ("canary", {"canary": ""}, True),
        ("app=web,!canary", {"app": "web", "canary": "1"}, False),
        ("version=", {"version": ""}, True),
    ],
)
def test_matching_follows_kubernetes(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse(text).matches(labels) is expected


def test_key_alias_is_looked_up_only_when_the_key_is_absent() -> None:
    def alias(key: str) -> str:
        return key.replace(".", "_").replace("/", "_")

    sel = parse("app.kubernetes.io/part-of=shop")
    assert sel.matches({"app_kubernetes_io_part-of": "shop"}, alias)
    assert not sel.matches({"app_kubernetes_io_part-of": "shop"})
    assert not sel.matches({"app.kubernetes.io/part-of": "x", "app_kubernetes_io_part-of": "shop"}, alias)


def test_key_and_value_rules() -> None:
    assert valid_key("example.com/app") and valid_key("a") and valid_key("a-b.c_d")
    assert not valid_key("/app") and not valid_key("app/") and not valid_key("-a")
    assert valid_value("") and valid_value("v1.2") and not valid_value("a" * 64)


@settings(max_examples=examples(400))
@given(_selectors)
def test_a_selector_prints_to_text_that_parses_back_to_it(selector: Selector) -> None:
    assert parse(str(selector)) == selector


@settings(max_examples=examples(300))
@given(_selectors, st.dictionaries(_keys, _values, max_size=4))
def test_a_selector_matches_iff_every_requirement_does(selector: Selector, labels: dict[str, str]) -> None:
    assert selector.matches(labels) == all(Selector((r,)).matches(labels) for r in selector.requirements)
