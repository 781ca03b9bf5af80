"""Kubernetes label selectors (equality- and set-based), parsed and matched as the API server does."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

Operator = Literal["exists", "!exists", "=", "!=", "in", "notin"]

_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_OPERATORS = ("==", "!=", "=", "!", "(", ")", ",")
_TOKEN = re.compile(r"\s*(?:(==|!=|=|!|\(|\)|,)|([^\s=!(),]+))")


class SelectorError(ValueError):
    """A label selector that does not parse; the message says where and why."""


def valid_key(key: str) -> bool:
    """A label key: [prefix/]name, the prefix a DNS subdomain (<= 253), the name <= 63 characters."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > 253 or not _PREFIX.match(prefix)):
        return False
    return 0 < len(name) <= 63 and _NAME.match(name) is not None


def valid_value(value: str) -> bool:
    """A label value: empty, or <= 63 characters of [-A-Za-z0-9_.] starting and ending alphanumeric."""
    return value == "" or (len(value) <= 63 and _NAME.match(value) is not None)


@dataclass(frozen=True)
class Requirement:
    """One requirement: key exists / does not, equals / differs, is in / not in a set of values."""

    key: str
    op: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str], key_alias: Callable[[str], str] | None = None) -> bool:
        """As Kubernetes: `!=` and `notin` also match when the key is absent. `key_alias`: a second
        spelling of the key looked up when the first is absent (kube-state-metrics' sanitized names)."""
        value = labels.get(self.key)
        if value is None and key_alias is not None:
            value = labels.get(key_alias(self.key))
        if self.op == "exists":
            return value is not None
        if self.op == "!exists":
            return value is None
        if self.op in ("=", "in"):
            return value is not None and value in self.values
        return value is None or value not in self.values

    def __str__(self) -> str:
        if self.op == "exists":
            return self.key
        if self.op == "!exists":
            return "!" + self.key
        if self.op in ("=", "!="):
            return f"{self.key}{self.op}{self.values[0]}"
        return f"{self.key} {self.op} ({','.join(self.values)})"


@dataclass(frozen=True)
class Selector:
    """Requirements that must all hold (the empty selector matches everything)."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str], key_alias: Callable[[str], str] | None = None) -> bool:
        return all(r.matches(labels, key_alias) for r in self.requirements)

    def __bool__(self) -> bool:
        return bool(self.requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise SelectorError(f"unexpected character {text[pos]!r} at position {pos} in {text!r}")
        token = m.group(1) or m.group(2)
        if token is not None:
            out.append(token)
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> str | None:
        token = self.peek()
        self.i += token is not None
        return token

    def fail(self, why: str) -> SelectorError:
        return SelectorError(f"{why} in label selector {self.text!r}")

    def key(self) -> str:
        token = self.take()
        if token is None or token in _OPERATORS:
            raise self.fail("expected a label key, got " + (repr(token) if token else "the end"))
        if not valid_key(token):
            raise self.fail(f"invalid label key {token!r}")
        return token

    def value(self) -> str:
        token = self.peek()
        if token is None or token in (",", ")"):
            return ""
        self.take()
        if token in _OPERATORS or not valid_value(token):
            raise self.fail(f"invalid label value {token!r}")
        return token

    def value_set(self) -> tuple[str, ...]:
        if self.take() != "(":
            raise self.fail("expected '(' after in/notin")
        if self.peek() == ")":
            raise self.fail("empty value set")
        values = [self.value()]
        while (token := self.take()) == ",":
            values.append(self.value())
        if token != ")":
            raise self.fail("expected ')' closing the value set")
        return tuple(values)

    def requirement(self) -> Requirement:
        if self.peek() == "!":
            self.take()
            return Requirement(self.key(), "!exists")
        key = self.key()
        op = self.peek()
        if op is None or op == ",":
            return Requirement(key, "exists")
        self.take()
        if op in ("=", "=="):
            return Requirement(key, "=", (self.value(),))
        if op == "!=":
            return Requirement(key, "!=", (self.value(),))
        if op == "in":
            return Requirement(key, "in", self.value_set())
        if op == "notin":
            return Requirement(key, "notin", self.value_set())
        raise self.fail(f"expected =, ==, !=, in or notin after {key!r}, got {op!r}")

    def selector(self) -> Selector:
        if self.peek() is None:
            return Selector()
        requirements = [self.requirement()]
        while (token := self.take()) is not None:
            if token != ",":
                raise self.fail(f"expected ',' between requirements, got {token!r}")
            requirements.append(self.requirement())
        return Selector(tuple(requirements))


def parse(text: str) -> Selector:
    """The selector `text` spells (`app=web,tier!=cache,env in (prod,stage),!canary`); '' selects all.

    SelectorError (a ValueError) when it is malformed."""
    return _Parser(text).selector()


_SET_OPERATORS: Mapping[str, Operator] = {
    "In": "in",
    "NotIn": "notin",
    "Exists": "exists",
    "DoesNotExist": "!exists",
}


def from_label_selector(obj: object) -> Selector | None:
    """A metav1.LabelSelector object (matchLabels, matchExpressions) as a Selector; `{}` matches every
    label set; None for a missing selector or one this cannot read (it then selects nothing)."""
    if not isinstance(obj, Mapping):
        return None
    reqs: list[Requirement] = []
    labels = obj.get("matchLabels") or {}
    if not isinstance(labels, Mapping):
        return None
    reqs.extend(Requirement(str(k), "=", (str(v),)) for k, v in labels.items())
    exprs = obj.get("matchExpressions") or []
    for e in exprs if isinstance(exprs, list) else [None]:
        op = _SET_OPERATORS.get(str(e.get("operator"))) if isinstance(e, Mapping) else None
        if op is None or not isinstance(e, Mapping):
            return None
        values = e.get("values") or []
        reqs.append(Requirement(str(e.get("key")), op, tuple(str(v) for v in values)))
    return Selector(tuple(reqs))
