"""GPU cost: instance prices (shipped CSV, user overrides) -> per-pod GPU cost and roll-ups.

GPU cost per pod = instance hourly price x (pod GPUs / instance GPUs). Spot nodes use the table's
spot price, else on-demand x (1 - spot_discount) marked "spot-estimate". Unknown instance types cost
default_gpu_hourly_price (0.95 $/GPU-hour, OpenCost's default) per GPU, marked "default".
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Literal

from podsizer.api.identity import WorkloadRef
from podsizer.sizing_policy import SizingPolicy
from recommender.model import NodeInfo

PriceBasis = Literal["on-demand", "spot", "spot-estimate", "default", "default-spot-estimate"]

COLUMNS = (
    "provider",
    "region",
    "instance_type",
    "gpus",
    "gpu_model",
    "on_demand_usd_per_hour",
    "spot_usd_per_hour",
    "source",
)
REQUIRED = ("instance_type", "gpus", "on_demand_usd_per_hour")


class PriceTableError(ValueError):
    """A price CSV that cannot be read; the message names file:line and the field."""


@dataclass(frozen=True)
class InstancePrice:
    """Hourly price of one instance type in one region."""

    provider: str
    region: str
    instance_type: str
    gpus: int
    gpu_model: str
    on_demand: float
    spot: float | None
    source: str


@dataclass(frozen=True)
class GpuCost:
    """What a pod's GPUs cost per hour, and on what basis."""

    hourly: float
    basis: PriceBasis
    instance_type: str | None
    source: str


def _number(raw: str, where: str, column: str, *, optional: bool = False) -> float | None:
    text = raw.strip()
    if not text:
        if optional:
            return None
        raise PriceTableError(f"{where}: {column} is empty")
    try:
        value = float(text)
    except ValueError:
        raise PriceTableError(f"{where}: {column} {text!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise PriceTableError(f"{where}: {column} {text!r} must be a finite number >= 0")
    return value


def parse_csv(text: str, name: str) -> list[InstancePrice]:
    """Rows of a price CSV (COLUMNS; '#' lines are comments); PriceTableError names name:line."""
    lines = [
        (i + 1, line)
        for i, line in enumerate(text.splitlines())
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if not lines:
        return []
    header_line, header = lines[0]
    reader = csv.reader(io.StringIO(header))
    columns = [c.strip() for c in next(reader)]
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        raise PriceTableError(f"{name}:{header_line}: header lacks column(s) {', '.join(missing)}")
    out: list[InstancePrice] = []
    for lineno, line in lines[1:]:
        where = f"{name}:{lineno}"
        cells = next(csv.reader(io.StringIO(line)))
        if len(cells) != len(columns):
            raise PriceTableError(f"{where}: expected {len(columns)} fields, got {len(cells)}")
        row = dict(zip(columns, (c.strip() for c in cells), strict=True))
        instance_type = row["instance_type"]
        if not instance_type:
            raise PriceTableError(f"{where}: instance_type is empty")
        gpus = _number(row["gpus"], where, "gpus")
        assert gpus is not None
        if gpus != int(gpus) or gpus < 1:
            raise PriceTableError(f"{where}: gpus {row['gpus']!r} must be a whole number >= 1")
        on_demand = _number(row["on_demand_usd_per_hour"], where, "on_demand_usd_per_hour")
        assert on_demand is not None
        spot = _number(row.get("spot_usd_per_hour", ""), where, "spot_usd_per_hour", optional=True)
        out.append(
            InstancePrice(
                provider=row.get("provider", ""),
                region=row.get("region", ""),
                instance_type=instance_type,
                gpus=int(gpus),
                gpu_model=row.get("gpu_model", ""),
                on_demand=on_demand,
                spot=spot,
                source=row.get("source", "") or name,
            )
        )
    return out


def shipped_rows() -> list[InstancePrice]:
    """The price table shipped in the package (recommender/sizing/prices.csv)."""
    text = resources.files("recommender.sizing").joinpath("prices.csv").read_text(encoding="utf-8")
    return parse_csv(text, "recommender/sizing/prices.csv")


class PriceTable:
    """Instance prices keyed by (instance_type, region); lookups fall back to any region."""

    def __init__(
        self,
        rows: Iterable[InstancePrice],
        default_gpu_hourly_price: float = 0.95,
        spot_discount: float = 0.65,
    ) -> None:
        if not 0.0 <= spot_discount < 1.0:
            raise ValueError(f"spot_discount must be within [0, 1), got {spot_discount}")
        self._by_key: dict[tuple[str, str], InstancePrice] = {}
        for row in rows:
            self._by_key[(row.instance_type, row.region)] = row
        self.default_gpu_hourly_price = default_gpu_hourly_price
        self.spot_discount = spot_discount

    @classmethod
    def for_policy(cls, policy: SizingPolicy, path: str | Path | None = None) -> PriceTable:
        """load() with the policy's default_gpu_hourly_price and spot_discount."""
        return cls.load(path, policy.default_gpu_hourly_price, policy.spot_discount)

    @classmethod
    def load(
        cls,
        path: str | Path | None = None,
        default_gpu_hourly_price: float = 0.95,
        spot_discount: float = 0.65,
    ) -> PriceTable:
        """The shipped table, with the user's CSV at `path` (same columns) merged over it: a user row
        replaces the shipped row of the same instance type and region."""
        rows = shipped_rows()
        if path is not None:
            p = Path(path)
            try:
                text = p.read_text(encoding="utf-8")
            except OSError as exc:
                raise PriceTableError(f"{p}: cannot read price file: {exc.strerror or exc}") from exc
            rows.extend(parse_csv(text, str(p)))
        return cls(rows, default_gpu_hourly_price, spot_discount)

    def __len__(self) -> int:
        return len(self._by_key)

    def rows(self) -> list[InstancePrice]:
        return list(self._by_key.values())

    def lookup(self, instance_type: str, region: str | None = None) -> InstancePrice | None:
        """Exact region first, then the first row of that instance type in any region."""
        if region is not None and (instance_type, region) in self._by_key:
            return self._by_key[(instance_type, region)]
        return next((r for (t, _), r in self._by_key.items() if t == instance_type), None)

    def gpu_cost(self, node: NodeInfo | None, gpus: float) -> GpuCost:
        """Hourly cost of `gpus` GPUs (fractions for MIG slices) on `node` (None: unknown -> default)."""
        spot = node is not None and node.capacity_type == "spot"
        price = self.lookup(node.instance_type, node.region) if node and node.instance_type else None
        if price is None:
            hourly = self.default_gpu_hourly_price * gpus
            if spot:
                return GpuCost(
                    hourly * (1 - self.spot_discount),
                    "default-spot-estimate",
                    node.instance_type if node else None,
                    f"default {self.default_gpu_hourly_price} $/GPU-h"
                    f" x (1 - spot discount {self.spot_discount})",
                )
            return GpuCost(
                hourly,
                "default",
                node.instance_type if node else None,
                f"default {self.default_gpu_hourly_price} $/GPU-h (instance type not in price table)",
            )
        share = gpus / price.gpus
        if spot and price.spot is not None:
            return GpuCost(price.spot * share, "spot", price.instance_type, price.source)
        if spot:
            return GpuCost(
                price.on_demand * (1 - self.spot_discount) * share,
                "spot-estimate",
                price.instance_type,
                f"{price.source}; spot estimated as on-demand x (1 - {self.spot_discount})",
            )
        return GpuCost(price.on_demand * share, "on-demand", price.instance_type, price.source)


@dataclass(frozen=True)
class CostItem:
    """One pod-container's GPU cost; gpus in whole-GPU equivalents (a 1g MIG slice is 1/7)."""

    workload: WorkloadRef
    container: str
    pod: str
    node: str
    gpus: float
    hourly_cost: float
    wasted_hourly_cost: float
    basis: PriceBasis
    instance_type: str | None


@dataclass(frozen=True)
class CostReport:
    """GPU cost per pod, rolled up per workload, per namespace and for the cluster ($/hour)."""

    items: tuple[CostItem, ...] = ()
    by_workload: Mapping[WorkloadRef, float] = field(default_factory=dict)
    wasted_by_workload: Mapping[WorkloadRef, float] = field(default_factory=dict)
    by_namespace: Mapping[str, float] = field(default_factory=dict)
    wasted_by_namespace: Mapping[str, float] = field(default_factory=dict)
    cluster_hourly: float = 0.0
    cluster_wasted_hourly: float = 0.0

    @staticmethod
    def of(items: Sequence[CostItem]) -> CostReport:
        by_wl: dict[WorkloadRef, float] = {}
        waste_wl: dict[WorkloadRef, float] = {}
        by_ns: dict[str, float] = {}
        waste_ns: dict[str, float] = {}
        for it in items:
            by_wl[it.workload] = by_wl.get(it.workload, 0.0) + it.hourly_cost
            waste_wl[it.workload] = waste_wl.get(it.workload, 0.0) + it.wasted_hourly_cost
            ns = it.workload.namespace
            by_ns[ns] = by_ns.get(ns, 0.0) + it.hourly_cost
            waste_ns[ns] = waste_ns.get(ns, 0.0) + it.wasted_hourly_cost
        return CostReport(
            items=tuple(items),
            by_workload=by_wl,
            wasted_by_workload=waste_wl,
            by_namespace=by_ns,
            wasted_by_namespace=waste_ns,
            cluster_hourly=sum(it.hourly_cost for it in items),
            cluster_wasted_hourly=sum(it.wasted_hourly_cost for it in items),
        )
