"""The overview's query: filters, name search, sorting and pagination over workload summaries."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

Order = Literal["asc", "desc"]
SORT_KEYS: tuple[str, ...] = (
    "workload",
    "cluster",
    "namespace",
    "kind",
    "name",
    "mode",
    "sizing",
    "confidence",
    "replicas",
    "cpu_saved",
    "memory_saved",
    "savings",
    "gpu_cost",
)
DEFAULT_PER_PAGE = 50
MAX_PER_PAGE = 500
_T = TypeVar("_T")


@dataclass(frozen=True)
class Summary(Generic[_T]):
    """The figures a workload is filtered and sorted by, with the item it stands for."""

    item: _T
    namespace: str
    kind: str
    name: str
    mode: str
    sizing: str
    confidence: float
    low_confidence: bool
    has_savings: bool
    replicas: float
    cpu_saved: float
    memory_saved: float
    savings: float
    gpu_cost: float
    cluster: str = ""


@dataclass(frozen=True)
class OverviewQuery:
    """What the overview shows: empty filters match everything; `q` is a name substring (any case).
    `cluster` is last so positional constructions stay as they were."""

    namespace: str = ""
    kind: str = ""
    mode: str = ""
    sizing: str = ""
    has_savings: bool = False
    low_confidence: bool = False
    q: str = ""
    sort: str = "workload"
    order: Order = "asc"
    page: int = 1
    per_page: int = DEFAULT_PER_PAGE
    cluster: str = ""

    def __post_init__(self) -> None:
        if self.sort not in SORT_KEYS:
            raise ValueError(f"sort must be one of {', '.join(SORT_KEYS)}, got {self.sort!r}")
        if self.page < 1 or not 1 <= self.per_page <= MAX_PER_PAGE:
            raise ValueError(f"page must be >= 1 and per_page within 1..{MAX_PER_PAGE}")

    def matches(self, s: Summary[_T]) -> bool:
        return (
            (not self.cluster or s.cluster == self.cluster)
            and (not self.namespace or s.namespace == self.namespace)
            and (not self.kind or s.kind == self.kind)
            and (not self.mode or s.mode == self.mode)
            and (not self.sizing or s.sizing == self.sizing)
            and (not self.has_savings or s.has_savings)
            and (not self.low_confidence or s.low_confidence)
            and (not self.q or self.q.lower() in s.name.lower())
        )


@dataclass(frozen=True)
class Page:
    page: int
    per_page: int
    pages: int
    matching: int


def _key(sort: str) -> Callable[[Summary[_T]], tuple[object, ...]]:
    if sort == "workload":
        return lambda s: (s.namespace, s.kind, s.name, s.cluster)
    return lambda s: (getattr(s, sort), s.namespace, s.kind, s.name, s.cluster)


def select(summaries: Sequence[Summary[_T]], query: OverviewQuery) -> tuple[list[_T], Page]:
    """The page of matching items in the asked order (a page past the end is the last page)."""
    matching = [s for s in summaries if query.matches(s)]
    matching.sort(key=_key(query.sort), reverse=query.order == "desc")
    pages = max(1, math.ceil(len(matching) / query.per_page))
    page = min(query.page, pages)
    start = (page - 1) * query.per_page
    items = [s.item for s in matching[start : start + query.per_page]]
    return items, Page(page, query.per_page, pages, len(matching))
