"""The price basis named: instance type, on-demand or spot, shipped table, override file or estimate."""

from __future__ import annotations

from pathlib import Path

from podsizer.api.identity import WorkloadRef
from recommender.output.costbasis import cost_basis, summary
from recommender.sizing.cost import CostItem, CostReport, PriceTable

TRAIN = WorkloadRef("ml", "StatefulSet", "train")
INFER = WorkloadRef("ml", "Deployment", "infer")


def item(
    ref: WorkloadRef, pod: str, basis: str, instance: str | None, gpus: float = 1, hourly: float = 1.0
) -> CostItem:
    return CostItem(ref, "c", pod, "node", gpus, hourly, 0.0, basis, instance)  # type: ignore[arg-type]


def test_each_instance_type_and_basis_is_named_with_its_origin() -> None:
    costs = CostReport.of(
        [
            item(TRAIN, "train-0", "on-demand", "p4d.24xlarge", 4),
            item(TRAIN, "train-1", "on-demand", "p4d.24xlarge", 4),
            item(INFER, "infer-0", "spot-estimate", "p4d.24xlarge"),
            item(INFER, "infer-1", "default", "x9.unknown"),
        ]
    )
    lines = summary(cost_basis(costs, PriceTable.load(), None), None)
    assert lines == [
        "GPU prices:",
        "  2 pods (8 GPUs) on p4d.24xlarge: on-demand price, from the shipped price table",
        "  1 pod (1 GPU) on p4d.24xlarge: spot, estimated, on-demand from the shipped price table"
        " x (1 - spot discount 0.65)",
        "  1 pod (1 GPU) on x9.unknown: on-demand, estimated (instance type not in the price table),"
        " default 0.95 $/GPU-hour",
    ]


def test_a_row_of_the_override_file_is_named_as_such(tmp_path: Path) -> None:
    path = tmp_path / "prices.csv"
    path.write_text("instance_type,gpus,on_demand_usd_per_hour,spot_usd_per_hour\np4d.24xlarge,8,9.5,3.1\n")
    costs = CostReport.of([item(TRAIN, "train-0", "spot", "p4d.24xlarge", 8, hourly=3.1)])
    (basis,) = cost_basis(costs, PriceTable.load(path), str(path))
    assert basis.describe() == f"1 pod (8 GPUs) on p4d.24xlarge: spot price, from override file {path}"
    assert not basis.estimated


def test_bases_of_one_workload_only() -> None:
    costs = CostReport.of([item(TRAIN, "t", "on-demand", "p4d.24xlarge"), item(INFER, "i", "default", None)])
    (basis,) = cost_basis(costs, PriceTable.load(), None, INFER)
    assert basis.instance_type is None and basis.estimated
    assert "an unknown instance type" in basis.describe()


def test_no_costs_says_no_gpu_pods_were_priced() -> None:
    assert summary(cost_basis(None, None), "my.csv") == [
        "GPU prices: no GPU pods were priced (override file my.csv)."
    ]


def test_the_shipped_row_is_named_when_its_price_is_the_one_used(tmp_path: Path) -> None:
    path = tmp_path / "prices.csv"
    path.write_text("region,instance_type,gpus,on_demand_usd_per_hour\neu-west-9,p4d.24xlarge,8,9.5\n")
    table = PriceTable.load(path)
    shipped = table.lookup("p4d.24xlarge", "us-east-1")
    assert shipped is not None
    costs = CostReport.of([item(TRAIN, "t", "on-demand", "p4d.24xlarge", 8, hourly=shipped.on_demand)])
    (basis,) = cost_basis(costs, table, str(path))
    assert basis.origin == "from the shipped price table"
    (other,) = cost_basis(
        CostReport.of([item(TRAIN, "t", "on-demand", "p4d.24xlarge", 8, hourly=9.5)]), table
    )
    assert other.origin.startswith("from override file")
