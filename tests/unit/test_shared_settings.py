"""One settings loader for every role: shared defaults, one error text, unknown variables, flags over env."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from podsizer.policy import LIMIT_POLICIES, MODES, PlanPolicy
from podsizer.settings import (
    ROLES,
    TOOLING_VARIABLES,
    SettingsError,
    SharedSettings,
    WebhookSettings,
    add_arguments,
    known_variables,
    load,
    load_from_args,
)
from tests.support.hypo import examples

ROOT = Path(__file__).resolve().parents[2]
ROLE_IDS = [role.__name__ for role in ROLES]


def _parse(role: type[SharedSettings], *argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser, role)
    return parser.parse_args(list(argv))


@pytest.mark.parametrize("role", ROLES, ids=ROLE_IDS)
def test_every_role_defaults_to_the_same_json_store_file(role: type[SharedSettings]) -> None:
    loaded = load(role, env={})
    assert (loaded.store, loaded.store_file) == ("json", Path("recommendations.json"))


@pytest.mark.parametrize("store", ["json", "file", "JSON"])
@pytest.mark.parametrize("role", ROLES, ids=ROLE_IDS)
def test_one_environment_configures_every_role_for_the_same_store_file(
    role: type[SharedSettings], store: str, tmp_path: Path
) -> None:
    path = tmp_path / "recs.json"
    loaded = load(role, env={"PODSIZER_STORE": store, "PODSIZER_STORE_FILE": str(path)})
    assert (loaded.store, loaded.store_file) == ("json", path)


def _common_base(role: type[SharedSettings], other: type[SharedSettings]) -> type[SharedSettings]:
    return next(c for c in role.__mro__ if issubclass(c, SharedSettings) and issubclass(other, c))


def test_a_name_two_roles_read_is_a_shared_setting_with_one_default() -> None:
    shared: set[str] = set()
    for i, role in enumerate(ROLES):
        for other in ROLES[i + 1 :]:
            both = set(role.model_fields) & set(other.model_fields)
            assert both == set(_common_base(role, other).model_fields), (role, other)
            shared |= both
    assert shared >= set(SharedSettings.model_fields)
    defaults = {
        name: {
            repr(role.model_fields[name].get_default(call_default_factory=True))
            for role in ROLES
            if name in role.model_fields
        }
        for name in shared
    }
    assert {name: len(values) for name, values in defaults.items()} == dict.fromkeys(shared, 1)


@pytest.mark.parametrize("role", ROLES, ids=ROLE_IDS)
def test_an_unknown_variable_is_an_error_with_a_suggestion(role: type[SharedSettings]) -> None:
    with pytest.raises(SettingsError) as err:
        load(role, env={"PODSIZER_MIN_CONFIDANCE": "0.5"})
    assert str(err.value) == (
        "PODSIZER_MIN_CONFIDANCE: not a podsizer setting (did you mean PODSIZER_MIN_CONFIDENCE?)"
    )


def test_an_unknown_variable_far_from_any_setting_has_no_suggestion() -> None:
    with pytest.raises(SettingsError) as err:
        load(WebhookSettings, env={"PODSIZER_ZZZ": "1"})
    assert str(err.value) == "PODSIZER_ZZZ: not a podsizer setting"


def test_unknown_variables_and_bad_values_are_reported_together() -> None:
    env = {"PODSIZER_ZZZ": "1", "PODSIZER_PORT": "eighty"}
    with pytest.raises(SettingsError) as err:
        load(WebhookSettings, env=env)
    assert str(err.value).split("; ") == [
        "PODSIZER_ZZZ: not a podsizer setting",
        "PODSIZER_PORT (--port): Input should be a valid integer, unable to parse string as an integer"
        " (got 'eighty')",
    ]


@pytest.mark.parametrize("role", ROLES, ids=ROLE_IDS)
def test_tooling_variables_are_accepted(role: type[SharedSettings]) -> None:
    env = dict.fromkeys(TOOLING_VARIABLES, "1")
    assert load(role, env=env) == role()


@pytest.mark.parametrize("role", ROLES, ids=ROLE_IDS)
def test_another_roles_setting_is_not_an_error(role: type[SharedSettings]) -> None:
    """A shared ConfigMap may hand every process every role's settings."""
    env = {
        "PODSIZER_CPU_MARGIN": "0.2",
        "PODSIZER_PORT": "9443",
        "PODSIZER_CONSOLE_PORT": "1",
        "PODSIZER_UPDATE_THRESHOLD": "0.2",
    }
    own = {
        name: env[f"PODSIZER_{name.upper()}"]
        for name in role.model_fields
        if f"PODSIZER_{name.upper()}" in env
    }
    assert len(own) == 1
    assert load(role, env=env) == role.model_validate(own)


def test_every_podsizer_variable_in_the_tree_is_a_setting_or_a_tooling_variable() -> None:
    pattern = re.compile(r"\bPODSIZER_[A-Z0-9_]*[A-Z0-9]\b")
    found: set[str] = set()
    for folder in ("scripts", "tests", ".ci", "docs", "charts", "manifests", "bench"):
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.suffix not in (".pyc", ".png", ".svg"):
                found |= set(pattern.findall(path.read_text(encoding="utf-8", errors="replace")))
    found -= {"PODSIZER_MIN_CONFIDANCE", "PODSIZER_ZZZ", "PODSIZER_CPU_MARGN", "PODSIZER_NOT_A_SETTING"}
    assert found, "the scan found no PODSIZER_ variables at all"
    assert sorted(found - known_variables() - TOOLING_VARIABLES) == []


def test_every_tooling_variable_is_documented() -> None:
    doc = (ROOT / "docs" / "configuration.md").read_text()
    assert sorted(v for v in TOOLING_VARIABLES if f"`{v}`" not in doc) == []


@pytest.mark.parametrize("role", ROLES, ids=ROLE_IDS)
@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("min_confidence", "2", "'2' is outside the allowed range, 0 to 1"),
        ("default_mode", "yolo", "Input should be 'off', 'dry-run' or 'auto' (got 'yolo')"),
        ("store", "redis", "Input should be 'json' or 'crd' (got 'redis')"),
        (
            "gpu_resize",
            "perhaps",
            "Input should be a valid boolean, unable to interpret input (got 'perhaps')",
        ),
    ],
)
def test_every_role_words_a_bad_value_the_same_from_env_or_flag(
    role: type[SharedSettings], name: str, value: str, message: str
) -> None:
    variable, flag = f"PODSIZER_{name.upper()}", "--" + name.replace("_", "-")
    expected = f"{variable} ({flag}): {message}"
    with pytest.raises(SettingsError) as from_env:
        load(role, env={variable: value})
    with pytest.raises(SettingsError) as from_flag:
        load_from_args(role, _parse(role, f"{flag}={value}"), env={})
    assert (str(from_env.value), str(from_flag.value)) == (expected, expected)


@pytest.mark.parametrize("role", ROLES, ids=ROLE_IDS)
def test_flags_win_over_the_environment(role: type[SharedSettings]) -> None:
    env = {"PODSIZER_LIMIT_POLICY": "cap", "PODSIZER_GPU_RESIZE": "true", "PODSIZER_STORE": "crd"}
    args = _parse(role, "--limit-policy", "leave", "--no-gpu-resize")
    loaded = load_from_args(role, args, env)
    assert (loaded.limit_policy, loaded.gpu_resize, loaded.store) == ("leave", False, "crd")


@pytest.mark.parametrize("role", ROLES, ids=ROLE_IDS)
def test_a_boolean_flag_takes_no_value_or_true_or_false(role: type[SharedSettings]) -> None:
    assert load_from_args(role, _parse(role, "--allow-mig-swap"), {}).allow_mig_swap is True
    assert load_from_args(role, _parse(role, "--allow-mig-swap", "false"), {}).allow_mig_swap is False
    assert load_from_args(role, _parse(role, "--allow-mig-swap=true"), {}).allow_mig_swap is True


def test_the_default_plan_policy_is_plan_policys_default() -> None:
    assert {role.__name__: role().plan_policy() for role in ROLES} == dict.fromkeys(ROLE_IDS, PlanPolicy())


@settings(max_examples=examples(200), deadline=None)
@given(
    limit_policy=st.sampled_from(LIMIT_POLICIES),
    default_mode=st.sampled_from(MODES),
    gpu_resize=st.booleans(),
    allow_mig_swap=st.booleans(),
    min_confidence=st.floats(0, 1),
    upper=st.booleans(),
)
def test_every_role_builds_the_same_plan_policy_from_the_same_environment(
    limit_policy: str,
    default_mode: str,
    gpu_resize: bool,
    allow_mig_swap: bool,
    min_confidence: float,
    upper: bool,
) -> None:
    env = {
        "PODSIZER_LIMIT_POLICY": limit_policy.upper() if upper else limit_policy,
        "PODSIZER_DEFAULT_MODE": default_mode.upper() if upper else default_mode,
        "PODSIZER_GPU_RESIZE": str(gpu_resize).lower(),
        "PODSIZER_ALLOW_MIG_SWAP": "1" if allow_mig_swap else "0",
        "PODSIZER_MIN_CONFIDENCE": repr(min_confidence),
    }
    expected = PlanPolicy(limit_policy, gpu_resize, allow_mig_swap, min_confidence, default_mode)
    policies = {role.__name__: load(role, env=env).plan_policy() for role in ROLES}
    assert policies == dict.fromkeys(ROLE_IDS, expected)


def test_the_role_classes_are_the_four_processes() -> None:
    assert [role.__name__ for role in ROLES] == [
        "RecommenderSettings",
        "WebhookSettings",
        "ConsoleSettings",
        "UpdaterSettings",
    ]
