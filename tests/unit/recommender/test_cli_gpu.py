"""`podsizer recommend` on the demo says how GPU figures add up: a GPU model spelled one way, a
framebuffer peak over several GPUs named as their sum."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from podsizer.cli import main
from recommender.sizing.gpu import gpu_model


@pytest.fixture()
def ml_items(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The demo's ml namespace as `podsizer recommend -o json` prints it, by Recommendation name."""
    for name in list(os.environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)
    assert main(["recommend", "--source", "demo", "-o", "json", "--no-progress", "--namespaces", "ml"]) == 0
    doc = json.loads(capsys.readouterr().out)
    return {i["metadata"]["name"]: i for i in doc["items"]}


def test_recommend_names_a_multi_gpu_framebuffer_peak_as_a_sum(ml_items: dict[str, Any]) -> None:
    reason = ml_items["statefulset-bert-finetune"]["status"]["containers"][0]["reason"]
    assert "over 4 GPU(s)" in reason and "MiB summed over 4 GPUs ->" in reason, reason


def test_recommend_spells_each_gpu_model_one_way(ml_items: dict[str, Any]) -> None:
    models = {i["status"]["gpu"]["model"] for i in ml_items.values() if i["status"].get("gpu")}
    assert all(m == gpu_model(m) and "-" not in m for m in models), models
    assert {"NVIDIA A100 SXM4 40GB", "NVIDIA H100 80GB HBM3", "NVIDIA L40S"} <= models
