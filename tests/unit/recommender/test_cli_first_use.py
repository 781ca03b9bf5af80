"""`podsizer recommend` says what its figures stand for: a GPU model spelled one way, a framebuffer
peak over several GPUs named as their sum, and which requests a workload's pods had when they differ."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from podsizer.cli import main
from recommender.input.file import dump_dataset
from recommender.sizing.gpu import gpu_model
from tests.support.request_mix import demo_with_differing_pods

Recommend = Callable[..., str]


@pytest.fixture()
def recommend(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Recommend:
    """Runs `podsizer recommend ARGS --no-progress` with no PODSIZER_* set; returns its stdout."""
    for name in list(os.environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)

    def run(*args: str) -> str:
        capsys.readouterr()
        assert main(["recommend", *args, "--no-progress"]) == 0
        return capsys.readouterr().out

    return run


def _items(out: str) -> dict[str, Any]:
    return {i["metadata"]["name"]: i for i in json.loads(out)["items"]}


def test_recommend_names_a_multi_gpu_framebuffer_peak_as_a_sum(recommend: Recommend) -> None:
    items = _items(recommend("--source", "demo", "-o", "json", "--namespaces", "ml"))
    reason = items["statefulset-bert-finetune"]["status"]["containers"][0]["reason"]
    assert "over 4 GPU(s)" in reason and "MiB summed over 4 GPUs ->" in reason, reason


def test_recommend_spells_each_gpu_model_one_way(recommend: Recommend) -> None:
    items = _items(recommend("--source", "demo", "-o", "json", "--namespaces", "ml"))
    models = {i["status"]["gpu"]["model"] for i in items.values() if i["status"].get("gpu")}
    assert all(m == gpu_model(m) and "-" not in m for m in models), models
    assert {"NVIDIA A100 SXM4 40GB", "NVIDIA H100 80GB HBM3", "NVIDIA L40S"} <= models


def test_recommend_says_when_a_workloads_pods_request_different_amounts(
    recommend: Recommend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "differing.json"
    dump_dataset(demo_with_differing_pods(datetime.now(UTC)), path)
    hint = "pods differ: 2 request cpu 2000m, 1 requests cpu 1000m; now: the newest pod's"
    source = ("--source", "file", "--source-file", str(path), "--namespaces", "shop")
    items = _items(recommend(*source, "-o", "json"))
    assert hint in items["deployment-storefront"]["status"]["containers"][0]["reason"]
    assert all(hint not in str(i) for name, i in items.items() if name != "deployment-storefront")
    monkeypatch.setenv("COLUMNS", "1000")  # the wide table fits its reasons to the terminal's width
    wide = [line for line in recommend(*source, "--wide").splitlines() if "storefront" in line]
    assert len(wide) == 1 and hint in wide[0], wide
