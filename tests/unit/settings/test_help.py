"""`podsizer <command> --help`: each command's own settings, grouped, defaults as the docs write them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import Field

from podsizer.cli import build_parser, main
from podsizer.settings import (
    ROLES,
    RUN_ONLY,
    ConsoleSettings,
    RecommenderSettings,
    UpdaterSettings,
    WebhookSettings,
    env_name,
    flag_name,
    load_from_args,
)
from podsizer.settings.group import SettingsGroup, heading
from podsizer.settings.help import shown_default
from podsizer.settings.types import CommaList

ROOT = Path(__file__).resolve().parents[3]
RUN_ONLY_FIELDS = sorted({name for group in RUN_ONLY for name in group.model_fields})


def _help(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *argv: str) -> str:
    monkeypatch.setenv("COLUMNS", "2000")  # one line per setting: no wrapping inside what is asserted
    assert main([*argv, "--help"]) == 0
    return capsys.readouterr().out


def _listed(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(flag_name(name))}(?![\w-])", text) is not None


@pytest.mark.parametrize("command", ["recommend", "explain"])
def test_recommend_and_explain_help_omit_the_loop_and_leader_election_settings(
    command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _help(capsys, monkeypatch, command)
    assert {"lease_name", "leader_election", "interval_seconds", "metrics_port"} <= set(RUN_ONLY_FIELDS)
    assert [n for n in RUN_ONLY_FIELDS if _listed(text, n)] == []
    assert "Also accepted, not listed: the settings of the loop, /metrics and probes, leader election" in text
    others = [n for n in RecommenderSettings.model_fields if n not in RUN_ONLY_FIELDS]
    assert [n for n in others if not _listed(text, n)] == []


def test_run_help_lists_the_loop_and_leader_election_settings_under_their_headings(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _help(capsys, monkeypatch, "run")
    assert [n for n in RecommenderSettings.model_fields if not _listed(text, n)] == ["from_checkpoint"]
    for title in ("the loop:", "leader election:", "/metrics and probes:"):
        assert f"\n{title}\n" in text


@pytest.mark.parametrize("command", ["recommend", "run", "webhook", "updater", "console"])
def test_each_setting_is_listed_under_its_groups_heading(
    command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    roles = {"webhook": WebhookSettings, "updater": UpdaterSettings, "console": ConsoleSettings}
    role = roles.get(command, RecommenderSettings)
    text = _help(capsys, monkeypatch, command)
    sections = {m.group(1): m.group(2) for m in re.finditer(r"\n([^\n ][^\n]*):\n((?:  [^\n]*\n)+)", text)}
    assert len(sections) >= 4
    misplaced = [
        n
        for n in role.model_fields
        if _listed(text, n) and not _listed(sections.get(heading(role, n), ""), n)
    ]
    assert misplaced == []


def test_defaults_are_shown_in_the_units_the_docs_use(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _help(capsys, monkeypatch, "recommend")
    for name, shown in [
        ("max_memory_bytes", "4Ti"),
        ("max_cpu_cores", "256"),
        ("prometheus_max_response_bytes", "64Mi"),
        ("memory_min_bytes", "32Mi"),
        ("cpu_min_cores", "10m"),
        ("cpu_burst_min_cores", "100m"),
        ("recency_half_life", "24h"),
        ("query_step", "1m"),
        ("cold_start_chunk", "6h"),
        ("allow_empty", "false"),
        ("cpu_limit_factor", "(empty)"),
    ]:
        assert re.search(rf"\[{env_name(name)}, default: {re.escape(shown)}(, allowed: [^]]+)?\]", text), name
    assert "4398046511104" not in text
    assert "default: 86400" not in text
    updater = _help(capsys, monkeypatch, "updater")
    assert "[PODSIZER_UPDATER_EXCLUDED_NAMESPACES, default: kube-system]" in updater


def test_a_list_default_is_shown_comma_separated() -> None:
    class Two(SettingsGroup):
        names: CommaList = Field(default=("a", "b"), description="two")

    assert shown_default(Two.model_fields["names"]) == "a,b"


def test_a_setting_recommend_does_not_list_is_still_accepted() -> None:
    parser, _ = build_parser(chosen="recommend")
    args = parser.parse_args(["recommend", "--lease-name", "x", "--no-leader-election"])
    loaded = load_from_args(RecommenderSettings, args, env={})
    assert (loaded.lease_name, loaded.leader_election) == ("x", False)


_ROW = re.compile(r"\| `(PODSIZER_[A-Z0-9_]+)` \| [^|]+ \| ([^|]+) \|")


def _doc_defaults() -> list[tuple[str, str, str]]:
    """(doc, variable, default) of every row of a settings table with a Default column."""
    rows = []
    for doc in sorted((ROOT / "docs").glob("*.md")):
        with_default = False
        for line in doc.read_text().splitlines():
            if re.match(r"\| (Environment v|V)ariable \|", line):
                with_default = bool(re.match(r"\| (Environment v|V)ariable \| Flag \| Default \|", line))
            row = _ROW.match(line) if with_default else None
            if row is not None:
                code = re.search(r"`([^`]*)`", row.group(2))
                rows.append((doc.name, row.group(1), code.group(1) if code else row.group(2).strip()))
    return rows


def test_the_docs_tables_give_the_defaults_the_help_shows() -> None:
    fields = {env_name(n): info for role in ROLES for n, info in role.model_fields.items()}
    rows = _doc_defaults()
    assert len(rows) > 150
    wrong = [
        f"{doc}: {variable} `{shown}`, --help: {shown_default(fields[variable])}"
        for doc, variable, shown in rows
        if shown != shown_default(fields[variable])
    ]
    assert wrong == []


def test_the_consoles_help_does_not_promise_a_source_it_does_not_pick(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no source set the console serves the demo (or Prometheus where a URL is given): its --source
    says so by pointing at --console-source, where recommend's says prometheus."""
    console = _help(capsys, monkeypatch, "console")
    recommend = _help(capsys, monkeypatch, "recommend")
    assert re.search(r"--source SOURCE .*\[PODSIZER_SOURCE, default: see --console-source\]", console)
    assert re.search(r"--source SOURCE .*\[PODSIZER_SOURCE, default: prometheus\]", recommend)
    assert "else demo, the built-in data set" in console
