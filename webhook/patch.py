"""RFC 6902 JSON Patch operations with RFC 6901 pointers, creating missing parent objects first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, NotRequired, TypedDict


class Op(TypedDict):
    op: Literal["add", "remove", "replace"]
    path: str
    value: NotRequired[Any]


def escape(token: str | int) -> str:
    """One reference token: '~' -> '~0', '/' -> '~1' (in that order)."""
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer(tokens: Sequence[str | int]) -> str:
    return "".join("/" + escape(t) for t in tokens)


class PatchBuilder:
    """Accumulates ops against one document, adding `{}` for any missing (or null) parent object once."""

    def __init__(self, doc: Mapping[str, Any]) -> None:
        self._doc = doc
        self._created: set[tuple[str | int, ...]] = set()
        self.ops: list[Op] = []

    def ensure_parents(self, tokens: Sequence[str | int]) -> None:
        """Make every proper prefix of `tokens` an object, creating (or replacing non-objects) as needed.

        One walk down the document; array steps must already exist (a missing element cannot be created).
        """
        node: Any = self._doc
        exists = True
        for i in range(1, len(tokens)):
            step, child = tokens[i - 1], tokens[i]
            prefix = tuple(tokens[:i])
            if prefix in self._created:
                exists = False  # below an object we added there is nothing yet, except what we add
                if isinstance(child, str):
                    continue
            elif exists:
                in_map = isinstance(node, Mapping) and isinstance(step, str) and node.get(step) is not None
                in_list = isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node)
                if in_map or in_list:
                    node = node[step]
                else:
                    exists = False
                if exists and (
                    isinstance(node, list) if isinstance(child, int) else isinstance(node, Mapping)
                ):
                    continue
            if isinstance(child, int):
                raise ValueError(f"cannot patch {pointer(tokens)}: {pointer(prefix)} is not an array")
            self.ops.append({"op": "add", "path": pointer(prefix), "value": {}})
            self._created.add(prefix)
            exists = False

    def set(self, tokens: Sequence[str | int], value: Any) -> None:
        """`add` replaces an existing member, so it serves both for new and changed keys."""
        self.ensure_parents(tokens)
        self.ops.append({"op": "add", "path": pointer(tokens), "value": value})

    def remove(self, tokens: Sequence[str | int]) -> None:
        self.ops.append({"op": "remove", "path": pointer(tokens)})

    @property
    def doc(self) -> Mapping[str, Any]:
        return self._doc

    def add_raw(self, path: str, value: Any) -> None:
        self.ops.append({"op": "add", "path": path, "value": value})

    def set_under(self, parent: str, key: str, value: Any) -> None:
        """`add` of one member under an already ensured parent pointer (the hot path of resource changes)."""
        self.ops.append({"op": "add", "path": parent + "/" + escape(key), "value": value})

    def remove_under(self, parent: str, key: str) -> None:
        self.ops.append({"op": "remove", "path": parent + "/" + escape(key)})
