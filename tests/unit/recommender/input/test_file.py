"""FileSource: the JSON dataset format round-trips, and bad files name the file and the field."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from recommender.input.demo_cluster import build_demo_dataset
from recommender.input.file import FileSource, dataset_to_json, dump_dataset, load_dataset, parse_dataset
from recommender.model import SourceError
from recommender.model.aggregate import aggregate

NOW = datetime(2026, 12, 2, 14, 0, tzinfo=UTC)


def _doc() -> dict[str, Any]:
    return {
        "format": "podsizer-raw/v1",
        "start": 1764000000,
        "end": 1764000900,
        "pods": [
            {
                "namespace": "shop",
                "name": "web-abc-1",
                "node": "n1",
                "owner_kind": "ReplicaSet",
                "owner_name": "web-abc",
                "requests": {"web": {"cpu": "250m", "memory": 536870912}},
                "limits": {"web": {"memory": "512Mi"}},
            }
        ],
        "owners": [
            {
                "namespace": "shop",
                "kind": "ReplicaSet",
                "name": "web-abc",
                "owner_kind": "Deployment",
                "owner_name": "web",
            }
        ],
        "containers": [
            {
                "namespace": "shop",
                "pod": "web-abc-1",
                "container": "web",
                "timestamps": [1764000000, 1764000300, 1764000600],
                "cpu_cores": [0.1, None, 0.3],
                "memory_bytes": [1e8, 2e8, 3e8],
            }
        ],
    }


def _write(tmp_path: Path, doc: object) -> Path:
    p = tmp_path / "data.json"
    p.write_bytes(orjson.dumps(doc))
    return p


def test_hand_written_file_loads_with_null_as_nan_and_quantities(tmp_path: Path) -> None:
    raw = load_dataset(_write(tmp_path, _doc()))
    (c,) = raw.containers
    assert np.isnan(c.cpu_cores[1])
    assert raw.pods[0].requests == {"web": {"cpu": 0.25, "memory": 536870912.0}}
    assert raw.pods[0].limits == {"web": {"memory": 512 * 1024 * 1024.0}}
    snap = aggregate(raw, source="file")
    assert snap.containers[0].cpu_cores.max == pytest.approx(0.3)
    assert snap.containers[0].samples == 3


@pytest.mark.parametrize("name", ["demo.json", "demo.json.gz"])
def test_demo_round_trips(tmp_path: Path, name: str) -> None:
    raw = build_demo_dataset(NOW, days=2)
    path = tmp_path / name
    dump_dataset(raw, path)
    if name.endswith(".gz"):
        assert gzip.decompress(path.read_bytes()) == dataset_to_json(raw)
    back = load_dataset(path)
    assert dataset_to_json(back) == dataset_to_json(raw)
    a, b = aggregate(raw, source="x"), aggregate(back, source="x")
    assert a.containers == b.containers
    assert [g.activity for g in a.gpus] == [g.activity for g in b.gpus]
    assert (a.nodes, a.autoscalers, a.skipped) == (b.nodes, b.autoscalers, b.skipped)


def test_file_source_collects_and_clips(tmp_path: Path) -> None:
    path = tmp_path / "demo.json"
    dump_dataset(build_demo_dataset(NOW, days=2), path)
    source = FileSource(path)
    snap = source.collect(NOW - timedelta(hours=12), NOW)
    assert snap.source == f"file:{path}"
    assert snap.containers
    assert all(c.first_seen >= NOW - timedelta(hours=12) for c in snap.containers)


def _set(doc: dict[str, Any], path: tuple[Any, ...], value: object) -> None:
    target: Any = doc
    for k in path[:-1]:
        target = target[k]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value


_DELETE = object()


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("start",), _DELETE, "start: missing key"),
        (("start",), "yesterday", "start: expected a number, got string"),
        (("pods",), {}, "pods: expected an array, got object"),
        (("pods", 0, "namespace"), _DELETE, "pods[0].namespace: missing key"),
        (("pods", 0, "name"), 7, "pods[0].name: expected a string, got int"),
        (
            ("pods", 0, "requests", "web", "cpu"),
            "lots",
            "pods[0].requests.web.cpu: invalid Kubernetes quantity",
        ),
        (("containers", 0, "cpu_cores"), [0.1, 0.2], "containers[0].cpu_cores: 2 values, timestamps has 3"),
        (
            ("containers", 0, "memory_bytes", 1),
            "2e8",
            "containers[0].memory_bytes[1]: expected a number or null",
        ),
        (
            ("containers", 0, "timestamps"),
            None,
            "containers[0].timestamps: expected an array of numbers, got null",
        ),
        (("owners", 0), [], "owners[0]: expected an object, got array"),
        (("format",), "other/v9", "format: expected 'podsizer-raw/v1'"),
        (
            ("nodes",),
            [{"name": "n", "capacity_type": "cheap"}],
            "nodes[0].capacity_type: expected on-demand or spot",
        ),
    ],
)
def test_bad_field_is_named(tmp_path: Path, path: tuple[Any, ...], value: object, message: str) -> None:
    doc = _doc()
    _set(doc, path, value)
    p = _write(tmp_path, doc)
    with pytest.raises(SourceError) as err:
        load_dataset(p)
    assert str(err.value).startswith(f"{p}: ")
    assert message in str(err.value)


def test_not_json(tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_text("{not json")
    with pytest.raises(SourceError, match=r"bad\.json: not JSON"):
        FileSource(p).collect(NOW - timedelta(days=1), NOW)


def test_missing_file() -> None:
    with pytest.raises(SourceError, match="cannot read"):
        load_dataset("/nonexistent/podsizer.json")


def test_gpu_series_lengths_checked() -> None:
    doc = _doc()
    doc["gpus"] = [
        {
            "hostname": "h",
            "gpu_index": "0",
            "uuid": "GPU-1",
            "model_name": "NVIDIA L40S",
            "timestamps": [1, 2],
            "fb_used_mib": [1, 2],
            "fb_free_mib": [1, 2],
            "sm_active": [0.1],
        }
    ]
    with pytest.raises(SourceError, match=r"gpus\[0\]\.sm_active: 1 values, timestamps has 2"):
        parse_dataset(orjson.dumps(doc), "mem")
