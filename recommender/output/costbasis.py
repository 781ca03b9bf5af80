"""The basis of a run's GPU prices, named for people: instance type, on-demand or spot, where the price
comes from (the shipped table, the override file) or that it is estimated."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from podsizer.api.identity import WorkloadRef
    from recommender.sizing.cost import CostItem, CostReport, InstancePrice, PriceBasis, PriceTable

SHIPPED = "the shipped price table"


@dataclass(frozen=True)
class Basis:
    """Pods priced on one instance type on one basis, and where the price comes from."""

    instance_type: str | None
    basis: PriceBasis
    pods: int
    gpus: float
    origin: str  # "the shipped price table", "override file PATH", or how it was estimated
    source: str  # the price row's source column ("" when estimated)

    @property
    def estimated(self) -> bool:
        return self.basis != "on-demand" and self.basis != "spot"

    def describe(self) -> str:
        """One line: "2 pods (3 GPUs) on p4d.24xlarge: on-demand, from the shipped price table"."""
        where = self.instance_type or "an unknown instance type"
        gpus = f"{self.gpus:g} GPU" + ("" if self.gpus == 1 else "s")
        pods = f"{self.pods} pod" + ("" if self.pods == 1 else "s")
        return f"{pods} ({gpus}) on {where}: {KINDS[self.basis]}, {self.origin}"


KINDS: dict[str, str] = {
    "on-demand": "on-demand price",
    "spot": "spot price",
    "spot-estimate": "spot, estimated",
    "default": "on-demand, estimated (instance type not in the price table)",
    "default-spot-estimate": "spot, estimated (instance type not in the price table)",
}


def cost_basis(
    costs: CostReport | None,
    prices: PriceTable | None,
    price_file: str | None = None,
    workload: WorkloadRef | None = None,
) -> tuple[Basis, ...]:
    """The bases of `costs` (of one workload's pods when given), one per instance type and basis."""
    if costs is None:
        return ()
    groups: dict[tuple[str | None, str], list[CostItem]] = {}
    for item in costs.items:
        if workload is None or item.workload == workload:
            groups.setdefault((item.instance_type, item.basis), []).append(item)
    out: list[Basis] = []
    for (instance_type, _), items in sorted(groups.items(), key=lambda kv: (kv[0][0] or "", kv[0][1])):
        basis = items[0].basis
        origin, source = _origin(items[0], prices, price_file)
        pods = len({(i.workload, i.pod) for i in items})
        out.append(Basis(instance_type, basis, pods, sum(i.gpus for i in items), origin, source))
    return tuple(out)


def _row(item: CostItem, prices: PriceTable) -> InstancePrice | None:
    """The price row the item's cost came from: of the rows for its instance type (one per region),
    the one whose price, through the table's own rule, gives the item's cost."""
    from recommender.model import NodeInfo

    capacity: Literal["on-demand", "spot"] = "spot" if item.basis.startswith("spot") else "on-demand"
    rows = [r for r in prices.rows() if r.instance_type == item.instance_type]
    for r in rows:
        node = NodeInfo(item.node, r.instance_type, capacity, region=r.region)
        cost = prices.gpu_cost(node, item.gpus)
        if cost.basis == item.basis and math.isclose(cost.hourly, item.hourly_cost, rel_tol=1e-9):
            return r
    return rows[0] if rows else None


def _origin(item: CostItem, prices: PriceTable | None, price_file: str | None) -> tuple[str, str]:
    """Where a price comes from: the shipped table or the override file (with the row's source)."""
    if prices is None:
        return ("price table not known to this report", "")
    if item.basis.startswith("default"):
        how = f"default {prices.default_gpu_hourly_price:g} $/GPU-hour"
        if item.basis == "default-spot-estimate":
            how += f" x (1 - spot discount {prices.spot_discount:g})"
        return (how, "")
    row = _row(item, prices) if item.instance_type else None
    if row is None:
        return ("price table row not found", "")
    from recommender.sizing.cost import shipped_rows

    where = SHIPPED if row in shipped_rows() else f"override file {price_file or row.source}"
    if item.basis == "spot-estimate":
        return (f"on-demand from {where} x (1 - spot discount {prices.spot_discount:g})", row.source)
    return (f"from {where}", row.source)


def summary(bases: Sequence[Basis], price_file: str | None) -> list[str]:
    """Lines naming the price basis of a run, for a table footer."""
    if not bases:
        tail = f" (override file {price_file})" if price_file else ""
        return [f"GPU prices: no GPU pods were priced{tail}."]
    lines = ["GPU prices:"] + [f"  {b.describe()}" for b in bases]
    if price_file and not any("override file" in b.origin for b in bases):
        lines.append(f"  (override file {price_file} given; none of its rows were used)")
    return lines
