"""The quality benchmark end to end: VPA's own estimator program, and one full run through real Prometheus."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from bench.quality import run, vpa_estimate

pytestmark = pytest.mark.integration

MI = 2.0**20


@pytest.fixture(scope="module")
def vpa_binary() -> Path:
    if shutil.which("go") is None:
        pytest.skip("go not installed: scripts/build_tools.py cannot build vpa-estimate")
    return vpa_estimate.ensure_built()


def test_vpa_program_gives_p90_plus_15_percent_of_a_steady_week(vpa_binary: Path) -> None:
    week = 7 * 1440
    doc = {
        "workloads": [
            {
                "key": "w",
                "containers": [
                    {
                        "name": "app",
                        "pods": [
                            {"start": 1.7e9, "step": 60, "cpu": [0.2] * week, "memory": [300 * MI] * week,
                             "memory_request": 512 * MI, "ooms": []}
                        ],
                    }
                ],
            }
        ]
    }  # fmt: skip
    out = json.loads(subprocess.run([str(vpa_binary)], input=json.dumps(doc), capture_output=True, text=True,
                                    check=True).stdout)  # fmt: skip
    target = out["w/app"]["target"]
    # the p90 is the end of the histogram bucket holding the value (buckets grow 5 % each: ends within
    # 10 % above the value here), plus the 15 % margin
    assert 0.2 * 1.15 <= target["cpu"] <= 0.2 * 1.10 * 1.15
    assert 300 * MI * 1.15 <= target["memory"] <= 300 * MI * 1.10 * 1.15
    assert out["w/app"]["upper"]["cpu"] > target["cpu"] >= out["w/app"]["lower"]["cpu"]


def test_a_full_run_scores_every_tool_on_every_container(
    vpa_binary: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not Path("/usr/bin/promtool").exists():
        pytest.skip("promtool not installed (Debian package prometheus)")
    out = tmp_path / "result.json"
    assert run.main(["--json", str(out)]) == 0
    printed = capsys.readouterr().out
    result = json.loads(out.read_text())
    ours = {f"podsizer {p}" for p in ("conservative", "balanced", "aggressive")}
    tools = {*ours, *(f"{t} (pod plan)" for t in ours), *run.PEERS, run.HINDSIGHT}
    assert set(result["totals"]) == tools
    assert {len(v) for v in result["scores"].values()} == {26}
    assert "## Pareto table" in printed and "## Per pattern" in printed and "## Goals" in printed
    assert all(t in printed for t in tools)
    # the three goals are each printed with a verdict, and every container's reason is kept
    assert [g["text"].split(" ")[0] for g in result["goals"]] == ["balanced", "conservative", "every"]
    assert "Patterns that lose to a peer" in printed
    assert {len(v) for k, v in result["reasons"].items() if k in ours} == {26}
