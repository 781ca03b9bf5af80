"""`podsizer demo` runs the real path: demo data, store, webhook over TLS, mutated and annotated pods."""

import json
from pathlib import Path

from podsizer.api import WorkloadRef, recommendation_from_resource
from podsizer.api.quantity import parse
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

    stored = _container(result.auto_pod, "web")
    assert parse(stored["requests"]["cpu"]) == parse(rec.requests["cpu"])
    assert parse(stored["requests"]["memory"]) == parse(rec.requests["memory"])
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
