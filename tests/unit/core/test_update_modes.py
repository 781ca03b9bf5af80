"""podsizer.io/update-mode: precedence, invalid values, and the updater only where admission applies."""

from __future__ import annotations

import pytest

from podsizer.modes import Meta, UpdateMode, UpdatePermission, resolve, resolve_update
from podsizer.policy import PlanPolicy

AUTO = PlanPolicy(default_mode="auto")


def _meta(**annotations: str) -> Meta:
    return Meta({}, {f"podsizer.io/{k.replace('_', '-')}": v for k, v in annotations.items()})


def _update(
    pod: Meta,
    workload: Meta,
    namespace: Meta | None = None,
    policy: PlanPolicy = AUTO,
    default: UpdateMode = "initial",
) -> UpdatePermission:
    return resolve_update(default, resolve(policy, pod, workload, namespace), pod, workload, namespace)


@pytest.mark.parametrize("value", ["off", "initial", "recreate", "in-place-or-recreate", "Recreate"])
def test_the_workload_annotation_sets_the_update_mode(value: str) -> None:
    got = _update(_meta(), _meta(update_mode=value))
    assert (got.mode, got.source) == (value.lower(), "podsizer.io/update-mode workload annotation")


def test_the_default_is_the_configured_one() -> None:
    assert _update(_meta(), _meta()).mode == "initial"
    assert _update(_meta(), _meta(), default="recreate").mode == "recreate"


def test_the_pod_annotation_wins_over_the_workload() -> None:
    assert _update(_meta(update_mode="off"), _meta(update_mode="recreate")).mode == "off"


def test_an_invalid_value_is_passed_over_and_named() -> None:
    got = _update(_meta(), _meta(update_mode="sometimes"))
    assert got.mode == "initial"
    assert got.ignored == ("invalid podsizer.io/update-mode 'sometimes' (workload annotation)",)


@pytest.mark.parametrize("mode", ["dry-run", "off"])
def test_the_updater_acts_only_where_admission_applies(mode: str) -> None:
    got = _update(_meta(), _meta(update_mode="recreate"), policy=PlanPolicy(default_mode=mode))  # type: ignore[arg-type]
    assert (got.mode, got.recreate) == ("initial", False)
    assert f"podsizer.io/mode {mode}" in got.source


def test_an_excluded_workload_is_never_updated() -> None:
    got = _update(_meta(), _meta(update_mode="recreate", exclude="true"))
    assert got.mode == "initial"


def test_in_place_and_recreate_flags() -> None:
    both = _update(_meta(), _meta(update_mode="in-place-or-recreate"))
    only = _update(_meta(), _meta(update_mode="recreate"))
    assert (both.in_place, both.recreate, only.in_place, only.recreate) == (True, True, False, True)


def test_allow_single_replica_is_read_from_the_workload() -> None:
    assert _update(_meta(), _meta(allow_single_replica="true")).allow_single_replica
    assert not _update(_meta(), _meta(allow_single_replica="yes")).allow_single_replica
