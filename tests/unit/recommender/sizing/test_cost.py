"""Price table (shipped + user overrides) and GPU cost per pod, spot, default price, roll-ups."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Literal

import pytest

from podsizer.api.identity import WorkloadRef
from recommender.model import NodeInfo
from recommender.sizing.cost import CostItem, CostReport, PriceTable, PriceTableError, shipped_rows

HEADER = "provider,region,instance_type,gpus,gpu_model,on_demand_usd_per_hour,spot_usd_per_hour,source\n"
FIXTURE = Path("/work/shared/fixtures/gpu-prices.csv")


def node(
    instance_type: str | None,
    capacity: Literal["on-demand", "spot"] = "on-demand",
    region: str | None = None,
) -> NodeInfo:
    return NodeInfo("n1", instance_type, capacity, region=region)


def test_shipped_table_has_every_provider_sources_and_no_historical_rows() -> None:
    rows = shipped_rows()
    assert {r.provider for r in rows} == {"aws", "gcp", "azure"}
    assert all(r.source for r in rows)
    assert not any("pre-cut" in r.instance_type for r in rows)
    assert len({(r.instance_type, r.region) for r in rows}) == len(rows)


@pytest.mark.skipif(not FIXTURE.exists(), reason="shared fixtures not mounted")
def test_shipped_table_agrees_with_the_fixture_rows() -> None:
    table = PriceTable.load()
    lines = [line for line in FIXTURE.read_text().splitlines() if not line.startswith("#")]
    rows = [row for row in csv.DictReader(lines) if "pre-cut" not in row["instance_type"]]
    assert rows
    for row in rows:
        price = table.lookup(row["instance_type"], row["region"])
        assert price is not None, row["instance_type"]
        assert price.on_demand == pytest.approx(float(row["on_demand_usd_per_hour"]))


def test_pod_pays_its_share_of_the_instance() -> None:
    cost = PriceTable.load().gpu_cost(node("p4d.24xlarge"), 1)
    assert cost.hourly == pytest.approx(21.957642 / 8)
    assert cost.basis == "on-demand"


def test_spot_uses_the_table_spot_price_when_there_is_one() -> None:
    cost = PriceTable.load().gpu_cost(node("a2-highgpu-1g", "spot", "us-central1"), 1)
    assert cost.hourly == pytest.approx(2.20401)
    assert cost.basis == "spot"


def test_spot_without_a_spot_price_is_an_estimate() -> None:
    cost = PriceTable.load(spot_discount=0.65).gpu_cost(node("g6.xlarge", "spot"), 1)
    assert cost.hourly == pytest.approx(0.8048 * 0.35)
    assert cost.basis == "spot-estimate"
    assert "estimated" in cost.source


@pytest.mark.parametrize("n", [None, node(None), node("x9.unknown")])
def test_unknown_instance_type_costs_the_default_per_gpu(n: NodeInfo | None) -> None:
    cost = PriceTable.load().gpu_cost(n, 2)
    assert cost.hourly == pytest.approx(1.90)
    assert cost.basis == "default"


def test_user_csv_overrides_and_extends(tmp_path: Path) -> None:
    user = tmp_path / "prices.csv"
    user.write_text(
        HEADER
        + "aws,us-east-1,p5.48xlarge,8,H100-80GB,40.00,12.00,negotiated\n"
        + "onprem,dc1,dgx-a100,8,A100-80GB,16.00,,internal\n"
    )
    table = PriceTable.load(user)
    override = table.lookup("p5.48xlarge", "us-east-1")
    assert override is not None and override.on_demand == 40.0
    assert table.gpu_cost(node("p5.48xlarge", "spot", "us-east-1"), 8).hourly == pytest.approx(12.0)
    assert table.gpu_cost(node("dgx-a100"), 4).hourly == pytest.approx(8.0)
    assert table.lookup("g5.xlarge") is not None  # shipped rows stay


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "aws,us-east-1,p5.48xlarge,8,H100,abc,,x",
            "prices.csv:3: on_demand_usd_per_hour 'abc' is not a number",
        ),
        ("aws,us-east-1,p5.48xlarge,0,H100,1.0,,x", "prices.csv:3: gpus '0' must be a whole number >= 1"),
        ("aws,us-east-1,,8,H100,1.0,,x", "prices.csv:3: instance_type is empty"),
        ("aws,us-east-1,p5.48xlarge,8", "prices.csv:3: expected 8 fields, got 4"),
        ("aws,us-east-1,p5.48xlarge,8,H100,-1,,x", "prices.csv:3: on_demand_usd_per_hour '-1' must be"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    user = tmp_path / "prices.csv"
    user.write_text("# comment\n" + HEADER + line + "\n")
    with pytest.raises(PriceTableError, match=re.escape(message)):
        PriceTable.load(user)


def test_missing_column_and_missing_file_are_clear(tmp_path: Path) -> None:
    user = tmp_path / "p.csv"
    user.write_text("instance_type,gpus\nx,1\n")
    with pytest.raises(PriceTableError, match=re.escape("p.csv:1: header lacks column")):
        PriceTable.load(user)
    with pytest.raises(PriceTableError, match="cannot read price file"):
        PriceTable.load(tmp_path / "absent.csv")


def test_cost_report_rolls_up_per_workload_namespace_and_cluster() -> None:
    a = WorkloadRef("ml", "Deployment", "a")
    b = WorkloadRef("ml", "StatefulSet", "b")
    c = WorkloadRef("web", "Deployment", "c")
    items = [
        CostItem(a, "m", "a-1", "n", 1, 2.0, 2.0, "on-demand", "x"),
        CostItem(a, "m", "a-2", "n", 1, 2.0, 0.0, "on-demand", "x"),
        CostItem(b, "m", "b-0", "n", 2, 3.0, 0.0, "spot", "y"),
        CostItem(c, "m", "c-1", "n", 1, 0.95, 0.95, "default", None),
    ]
    r = CostReport.of(items)
    assert r.by_workload[a] == pytest.approx(4.0) and r.wasted_by_workload[a] == pytest.approx(2.0)
    assert r.by_namespace == {"ml": pytest.approx(7.0), "web": pytest.approx(0.95)}
    assert r.cluster_hourly == pytest.approx(7.95)
    assert r.cluster_wasted_hourly == pytest.approx(2.95)
