"""The chart's dcgm-exporter counters are the exporter's defaults with DCGM_FI_PROF_SM_ACTIVE switched on."""

from __future__ import annotations

from tests.integration.install.support import CHART, FIXTURES


def _fields(text: str) -> list[tuple[str, str]]:
    rows = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            field, kind, _help = (p.strip() for p in line.split(",", 2))
            rows.append((field, kind))
    return rows


def test_counters_are_the_defaults_plus_sm_active() -> None:
    ours = _fields((CHART / "files" / "dcgm-counters.csv").read_text())
    defaults = _fields((FIXTURES / "dcgm-default-counters.csv").read_text())
    assert ("DCGM_FI_PROF_SM_ACTIVE", "gauge") not in defaults
    assert sorted(ours) == sorted([*defaults, ("DCGM_FI_PROF_SM_ACTIVE", "gauge")])


def test_every_row_has_a_known_prometheus_type() -> None:
    rows = _fields((CHART / "files" / "dcgm-counters.csv").read_text())
    assert rows
    for field, kind in rows:
        assert field.startswith("DCGM_") and kind in {"gauge", "counter", "label"}, field
