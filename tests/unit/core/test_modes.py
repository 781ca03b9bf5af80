"""podsizer.modes: case-insensitive values, one precedence, invalid values passed over, exclusion anywhere."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from podsizer.cluster import ObjectMeta
from podsizer.modes import (
    Meta,
    Resolved,
    parse_allow_large_change,
    parse_allow_single_replica,
    parse_gpu,
    parse_mode,
    parse_update_mode,
    resolve,
)
from podsizer.plan import plan_pod
from podsizer.policy import Mode, PlanPolicy
from tests.unit.webhook.builders import container, crec, recommendation, replicaset_pod


def _m(labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> Meta:
    return Meta(labels or {}, annotations or {})


@pytest.mark.parametrize(
    ("pod", "workload", "namespace", "expected", "source"),
    [
        (None, None, None, "dry-run", "default"),
        (None, None, "off", "off", "podsizer.io/mode namespace label"),
        (None, "auto", "off", "auto", "podsizer.io/mode workload annotation"),
        ("OFF", "auto", "auto", "off", "podsizer.io/mode pod annotation"),
        ("Dry-Run", None, None, "dry-run", "podsizer.io/mode pod annotation"),
        ("sideways", "bogus", "Auto", "auto", "podsizer.io/mode namespace label"),
    ],
)
def test_mode_precedence_pod_workload_namespace_default(
    pod: str | None, workload: str | None, namespace: str | None, expected: Mode, source: str
) -> None:
    key = "podsizer.io/mode"
    got = resolve(
        PlanPolicy(),
        _m(annotations={key: pod} if pod else None),
        _m(annotations={key: workload} if workload else None),
        _m(labels={key: namespace} if namespace else None),
    )
    assert (got.mode, got.mode_source) == (expected, source)


def test_a_namespace_annotation_or_workload_label_does_not_set_the_mode() -> None:
    key = "podsizer.io/mode"
    got = resolve(
        PlanPolicy(default_mode="off"), _m(), _m(labels={key: "auto"}), _m(annotations={key: "auto"})
    )
    assert got.mode == "off"


def test_invalid_values_are_logged_ignored_and_described(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "podsizer.modes"):
        got = resolve(
            PlanPolicy(), _m(annotations={"podsizer.io/mode": "sideways", "podsizer.io/gpu": "maybe"})
        )
    assert (got.mode, got.gpu_resize) == ("dry-run", False)
    assert "invalid podsizer.io/mode 'sideways' (pod annotation)" in got.describe()
    assert any("sideways" in r.getMessage() for r in caplog.records)
    assert any("maybe" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("parse", "given", "value", "expected"),
    [
        (parse_mode, " Dry-Run ", "dry-run", "expected one of off, dry-run, auto"),
        (
            parse_update_mode,
            "RECREATE",
            "recreate",
            "expected one of off, initial, recreate, in-place-or-recreate",
        ),
        (parse_gpu, "Resize", True, "expected keep or resize"),
        (parse_allow_large_change, "TRUE", True, "expected true or false"),
        (parse_allow_single_replica, "False", False, "expected true or false"),
    ],
)
def test_every_podsizer_value_is_read_by_one_rule(
    parse: Callable[[str | None, str], object],
    given: str,
    value: object,
    expected: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Any case, spaces ignored; unset is None; an invalid value is None and logged with what was expected."""
    assert parse(given, "pod annotation") == value
    assert parse(None, "pod annotation") is None
    with caplog.at_level(logging.WARNING, "podsizer.modes"):
        assert parse("sideways", "pod annotation") is None
    assert caplog.records[-1].getMessage().endswith(f"='sideways' on pod annotation: {expected}")


@pytest.mark.parametrize(
    ("pod", "workload", "namespace", "default", "expected"),
    [
        (None, None, None, False, False),
        (None, None, None, True, True),
        (None, None, "resize", False, True),
        (None, "keep", "resize", False, False),
        ("Resize", "keep", None, False, True),
        ("keep", None, None, True, False),
    ],
)
def test_gpu_opt_in_precedence(
    pod: str | None, workload: str | None, namespace: str | None, default: bool, expected: bool
) -> None:
    key = "podsizer.io/gpu"
    got = resolve(
        PlanPolicy(gpu_resize=default),
        _m(annotations={key: pod} if pod else None),
        _m(annotations={key: workload} if workload else None),
        _m(labels={key: namespace} if namespace else None),
    )
    assert got.gpu_resize is expected


@pytest.mark.parametrize(
    ("where", "expected"),
    [("pod-label", "pod"), ("pod", "pod"), ("workload", "workload"), ("namespace-label", "namespace")],
)
def test_exclude_true_anywhere_opts_out(where: str, expected: str) -> None:
    flag = {"podsizer.io/exclude": "True"}
    metas = {
        "pod-label": (_m(labels=flag), None, None),
        "pod": (_m(annotations=flag), None, None),
        "workload": (_m(), _m(annotations=flag), None),
        "namespace-label": (_m(), None, _m(labels=flag)),
    }
    assert resolve(PlanPolicy(), *metas[where]).excluded_by == expected
    assert resolve(PlanPolicy(), _m(annotations={"podsizer.io/exclude": "false"})).excluded_by is None


def test_the_webhooks_object_meta_satisfies_the_metadata_protocol() -> None:
    got = resolve(PlanPolicy(), ObjectMeta({}, {"podsizer.io/mode": "auto"}))
    assert got.mode == "auto"


@pytest.mark.parametrize(
    ("resolved", "skip"),
    [
        (Resolved("auto", excluded_by="workload"), "excluded-workload"),
        (Resolved("off"), "mode-off"),
        (Resolved("dry-run"), None),
    ],
)
def test_the_plan_starts_with_mode_and_exclusion(resolved: Resolved, skip: str | None) -> None:
    pod = replicaset_pod(containers=[container("main", {"cpu": "1"})])
    plan = plan_pod(pod, recommendation(containers=[crec("main", {"cpu": "500m"})]), PlanPolicy(), resolved)
    assert (plan.mode, plan.skip) == (resolved.mode, skip)
    assert bool(plan.changes) is (skip is None)


def test_the_plan_resolves_the_pod_templates_own_metadata_when_not_given() -> None:
    pod = replicaset_pod(
        containers=[container("main", {"cpu": "1"})], annotations={"podsizer.io/mode": "AUTO"}
    )
    plan = plan_pod(pod, recommendation(containers=[crec("main", {"cpu": "500m"})]), PlanPolicy())
    assert plan.mode == "auto" and plan.skip is None
    excluded = plan_pod(
        pod, recommendation(), PlanPolicy(), workload=_m(annotations={"podsizer.io/exclude": "true"})
    )
    assert excluded.skip == "excluded-workload" and excluded.changes == ()
