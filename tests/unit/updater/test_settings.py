"""The updater's settings: documented, loaded into its configuration, and the CLI command exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from podsizer.cli import COMMANDS, build_parser
from podsizer.settings import SettingsError, UpdaterSettings, env_name, flag_name, load, load_from_args
from updater.cli import config_of

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("doc", ["updater.md", "configuration.md"])
def test_the_docs_list_every_updater_setting(doc: str) -> None:
    text = (ROOT / "docs" / doc).read_text()
    fields = UpdaterSettings.model_fields if doc == "updater.md" else _own()
    missing = [n for n in fields if f"`{env_name(n)}`" not in text or f"`{flag_name(n)}`" not in text]
    assert missing == []


def _own() -> list[str]:
    from podsizer.settings import SharedSettings

    return [n for n in UpdaterSettings.model_fields if n not in SharedSettings.model_fields]


def test_the_environment_becomes_the_updaters_configuration() -> None:
    settings = load(
        UpdaterSettings,
        env={
            "PODSIZER_UPDATE_MODE": "In-Place-Or-Recreate",
            "PODSIZER_UPDATER_DRY_RUN": "true",
            "PODSIZER_UPDATE_THRESHOLD": "0.25",
            "PODSIZER_UPDATER_EVICTIONS_PER_MINUTE": "2",
            "PODSIZER_UPDATER_EXCLUDED_NAMESPACES": "kube-*, infra",
            "PODSIZER_DEFAULT_MODE": "auto",
        },
    )
    config = config_of(settings)
    assert (config.default_update_mode, config.dry_run) == ("in-place-or-recreate", True)
    assert config.policy.threshold.relative == 0.25
    assert config.policy.budgets.evictions_per_minute == 2
    assert config.excluded_namespaces == frozenset({"kube-*", "infra"})
    assert config.policy.plan == settings.plan_policy()


def test_the_default_update_mode_is_admission_only() -> None:
    assert config_of(load(UpdaterSettings, env={})).default_update_mode == "initial"


def test_podsizer_updater_is_a_command() -> None:
    assert "updater" in [c.name for c in COMMANDS]
    parser, runs = build_parser(chosen="updater")
    assert "updater" in runs
    args = parser.parse_args(["updater", "--updater-dry-run", "--update-mode", "recreate"])
    settings = load_from_args(UpdaterSettings, args, env={})
    assert (settings.updater_dry_run, settings.update_mode) == (True, "recreate")


def test_the_settling_period_reaches_the_updater_within_its_bounds() -> None:
    settings = load(UpdaterSettings, env={"PODSIZER_UPDATER_SETTLING_SECONDS": "600"})
    assert config_of(settings).policy.settling_seconds == 600
    for bad in ("-1", str(8 * 24 * 3600)):  # negative; more than a week
        with pytest.raises(SettingsError, match="PODSIZER_UPDATER_SETTLING_SECONDS"):
            load(UpdaterSettings, env={"PODSIZER_UPDATER_SETTLING_SECONDS": bad})
