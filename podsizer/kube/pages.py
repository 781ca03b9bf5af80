"""How a list call is read page by page (`limit` + `continue`): one loop for the informers and the stores."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

PAGE_SIZE = 500
"""Objects per list call, unless a caller asks for another size."""

Fetch = Callable[[dict[str, Any]], Mapping[str, Any]]
"""One list call: the paging arguments (`limit`, and `_continue` after the first page) in, a list out."""


def pages(fetch: Fetch, page_size: int = PAGE_SIZE) -> Iterator[Mapping[str, Any]]:
    """Every page of a list, in order, until one has no `metadata.continue` token."""
    if page_size < 1:
        raise ValueError(f"a list page holds at least 1 object, not {page_size}")
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {"limit": page_size}
        if token:
            kwargs["_continue"] = token
        page = fetch(kwargs)
        yield page
        meta = page.get("metadata")
        found = meta.get("continue") if isinstance(meta, Mapping) else None
        token = found if isinstance(found, str) else None
        if not token:
            return


def items(page: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The objects of one page (anything that is not an object is left out)."""
    found = page.get("items")
    for item in found if isinstance(found, list) else ():
        if isinstance(item, dict):
            yield item


def resource_version(page: Mapping[str, Any]) -> str | None:
    """The list's resourceVersion (where a watch of it starts), None when it has none."""
    meta = page.get("metadata")
    found = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
    return found if isinstance(found, str) else None
