"""podsizer.kube.pages: one paging loop follows `continue` tokens to the last page, `limit` a call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from podsizer.kube.pages import items, pages, resource_version


class Pager:
    """A list of `total` objects served `limit` at a time, the continue token being the next offset."""

    def __init__(self, total: int) -> None:
        self.objects = [{"metadata": {"name": f"o{i}"}} for i in range(total)]
        self.asked: list[dict[str, Any]] = []

    def __call__(self, paging: dict[str, Any]) -> Mapping[str, Any]:
        self.asked.append(dict(paging))
        start = int(paging.get("_continue") or 0)
        end = start + paging["limit"]
        meta: dict[str, Any] = {"resourceVersion": "7"}
        if end < len(self.objects):
            meta["continue"] = str(end)
        return {"items": self.objects[start:end], "metadata": meta}


def test_every_page_is_read_in_order_with_the_previous_pages_token() -> None:
    fetch = Pager(5)
    names = [i["metadata"]["name"] for page in pages(fetch, page_size=2) for i in items(page)]
    assert names == ["o0", "o1", "o2", "o3", "o4"]
    assert fetch.asked == [{"limit": 2}, {"limit": 2, "_continue": "2"}, {"limit": 2, "_continue": "4"}]


def test_a_list_without_a_token_is_one_call() -> None:
    fetch = Pager(3)
    assert len(list(pages(fetch))) == 1
    assert fetch.asked == [{"limit": 500}]


def test_a_page_size_below_one_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="at least 1 object, not 0"):
        next(pages(Pager(1), page_size=0))


def test_items_keeps_objects_only_and_resource_version_reads_the_lists() -> None:
    page = {"items": [{"a": 1}, "junk", None, {"b": 2}], "metadata": {"resourceVersion": "42"}}
    assert list(items(page)) == [{"a": 1}, {"b": 2}]
    assert resource_version(page) == "42"
    assert list(items({"items": "not a list"})) == []
    assert resource_version({"metadata": {"resourceVersion": 42}}) is None
