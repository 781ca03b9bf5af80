"""Console data for the built-in demo cluster: demo samples -> aggregate -> sizing run -> console values."""

from __future__ import annotations

from datetime import datetime

from console.build import build_console_data
from console.data import StaticConsoleData
from podsizer.policy import PlanPolicy
from podsizer.sizing_policy import SizingPolicy
from recommender.input.demo_cluster import build_demo_dataset
from recommender.model.aggregate import aggregate
from recommender.sizing.cost import PriceTable
from recommender.sizing.engine import recommend


class DemoConsoleData:
    """Builds the demo's ConsoleData (computed once; the result is immutable)."""

    @staticmethod
    def build(
        now: datetime,
        *,
        policy: SizingPolicy | None = None,
        prices: PriceTable | None = None,
        plan_policy: PlanPolicy | None = None,
    ) -> StaticConsoleData:
        """`plan_policy`: the pod plan's policy (the console's settings give it; default PlanPolicy())."""
        raw = build_demo_dataset(now)
        snapshot = aggregate(raw, source="demo")
        table = prices or PriceTable.load(None)
        run = recommend(snapshot, policy or SizingPolicy(), table, now)
        return build_console_data(raw, snapshot, run, now, policy=plan_policy, prices=table)
