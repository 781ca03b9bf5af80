"""`podsizer demo` runs the real path: demo data, store, webhook over TLS, mutated and annotated pods."""

import json
from pathlib import Path

import pytest

from podsizer.api import WorkloadRef, recommendation_from_resource
from podsizer.api.quantity import parse
from podsizer.cli import main as cli_main
from podsizer.plan import plan_pod
from podsizer.policy import PlanPolicy
from recommender.demo import demo, main


def _container(pod: object, name: str) -> dict[str, dict[str, str]]:
    containers = pod["spec"]["containers"]  # type: ignore[index]
    return next(c["resources"] for c in containers if c["name"] == name)


def test_auto_pod_gets_the_stored_recommendation_and_dry_run_only_annotates(tmp_path: Path) -> None:
    result = demo(tmp_path, WorkloadRef("shop", "Deployment", "storefront"))

    items = json.loads(result.store_file.read_text())["items"]
    recs = {r.name: r for r in map(recommendation_from_resource, items)}
    assert result.recommendations == len(recs) > 5
    rec = recs["deployment-storefront"].container("web")
    assert rec is not None

    # What the pod gets is the pod plan's answer: the recommendation, within the 4x change factor.
    stored = _container(result.auto_pod, "web")
    created = _container(result.created_pod, "web")
    for resource in ("cpu", "memory"):
        current, wanted = parse(created["requests"][resource]), parse(rec.requests[resource])
        expected = min(max(wanted, current / 4), current * 4)
        assert parse(stored["requests"][resource]) == pytest.approx(expected, rel=0.01), resource
    planned = plan_pod(result.created_pod, recs["deployment-storefront"], PlanPolicy(default_mode="auto"))
    assert {(c.field, c.resource): c.new for c in planned.changes} == {
        ("requests", r): stored["requests"][r] for r in ("cpu", "memory")
    } | {("limits", r): v for r, v in stored.get("limits", {}).items()}
    applied = json.loads(result.auto_pod["metadata"]["annotations"]["podsizer.io/applied"])
    assert applied["recommendation"] == "deployment-storefront"

    assert result.dry_run_pod["spec"] == result.created_pod["spec"]
    dry = json.loads(result.dry_run_pod["metadata"]["annotations"]["podsizer.io/dry-run"])
    assert dry["changes"] == applied["changes"]

    assert result.deployer_patch == ()


def test_unknown_workload_is_a_clear_error(tmp_path: Path, capsys: object) -> None:
    assert main(["--out", str(tmp_path), "--workload", "shop/Deployment/nope"]) == 1
    assert "no pod of shop/Deployment/nope" in capsys.readouterr().out  # type: ignore[attr-defined]
    assert main(["--workload", "shop-storefront"]) == 2


def _containers_line(text: str) -> str:
    return next(line for line in text.splitlines() if " workloads, " in line and " containers" in line)


def test_demo_and_recommend_source_demo_print_the_same_run_prices_included(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`podsizer demo` once listed 17 containers and `recommend --source demo` 16
    (postgres' init-chmod has one sample, on the data's first grid point, which recommend's window cut
    off), and the demo said "price table not known to this report" for instance types the shipped table
    prices. Both now run the same `recommend` (one_run) on the same data."""
    monkeypatch.chdir(tmp_path)
    for name in [n for n in __import__("os").environ if n.startswith("PODSIZER_")]:
        monkeypatch.delenv(name)  # the demo runs with the defaults: so does recommend here
    assert main(["--out", str(tmp_path / "demo")]) == 0
    shown = capsys.readouterr().out
    assert cli_main(["recommend", "--source", "demo", "--no-progress"]) == 0
    recommended = capsys.readouterr().out
    assert _containers_line(shown) == _containers_line(recommended) == "15 workloads, 17 containers."
    for text in (shown, recommended):
        assert "init-chmod" in text
        assert "not known to this report" not in text and "from the shipped price table" in text
