"""Sizing logic: usage model in, Recommendations out (static, autopilot, GPU, waste, cost, forecast)."""

from recommender.sizing.cost import CostReport, PriceTable, PriceTableError
from recommender.sizing.engine import RecommendationRun, recommend
from recommender.sizing.waste import WasteFinding

__all__ = [
    "CostReport",
    "PriceTable",
    "PriceTableError",
    "RecommendationRun",
    "WasteFinding",
    "recommend",
]
