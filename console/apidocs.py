"""Readable API docs from the app's OpenAPI document: paths, parameters and response fields (no CDN)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

Json = Mapping[str, object]


@dataclass(frozen=True)
class Param:
    name: str
    where: str
    type: str
    required: bool
    description: str

    def __getitem__(self, key: str) -> object:  # templates read p["in"]
        return self.where if key == "in" else getattr(self, key)


@dataclass(frozen=True)
class FieldDoc:
    name: str
    type: str
    description: str


@dataclass(frozen=True)
class Operation:
    id: str
    method: str
    path: str
    summary: str
    description: str
    params: tuple[Param, ...]
    response: str
    fields: tuple[FieldDoc, ...]
    errors: tuple[tuple[str, str], ...]


def _map(value: object) -> Json:
    return value if isinstance(value, Mapping) else {}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _deref(schema: Json, spec: Json) -> Json:
    ref = _text(schema.get("$ref"))
    if ref.startswith("#/components/schemas/"):
        return _map(_map(_map(spec.get("components")).get("schemas")).get(ref.rsplit("/", 1)[1]))
    return schema


def _type(schema: Json, spec: Json) -> str:
    """A short type name: "string", "list[WorkloadOut]", "integer | null"."""
    ref = _text(schema.get("$ref"))
    if ref:
        return ref.rsplit("/", 1)[1]
    options = schema.get("anyOf")
    if isinstance(options, list):
        return " | ".join(_type(_map(o), spec) for o in options)
    kind = _text(schema.get("type")) or "object"
    if kind == "array":
        return f"list[{_type(_map(schema.get('items')), spec)}]"
    if kind == "object" and isinstance(schema.get("additionalProperties"), Mapping):
        return f"map[string, {_type(_map(schema.get('additionalProperties')), spec)}]"
    return kind


def _fields(schema: Json, spec: Json) -> tuple[FieldDoc, ...]:
    target = _deref(schema, spec)
    if _text(target.get("type")) == "array":
        target = _deref(_map(target.get("items")), spec)
    props = _map(target.get("properties"))
    return tuple(
        FieldDoc(
            name,
            _type(_map(p), spec),
            _text(_map(p).get("description")) or _text(_deref(_map(p), spec).get("description")),
        )
        for name, p in props.items()
    )


def operations(spec: Json) -> list[Operation]:
    """Every GET operation of the document, in path order."""
    out: list[Operation] = []
    for path, item in sorted(_map(spec.get("paths")).items()):
        op = _map(_map(item).get("get"))
        if not op:
            continue
        raw_params = op.get("parameters")
        params = tuple(
            Param(
                _text(p.get("name")),
                _text(p.get("in")),
                _type(_map(p.get("schema")), spec),
                bool(p.get("required")),
                _text(p.get("description")) or _text(_map(p.get("schema")).get("description")),
            )
            for p in (_map(x) for x in (raw_params if isinstance(raw_params, list) else []))
        )
        responses = _map(op.get("responses"))
        ok = _map(_map(_map(_map(responses.get("200")).get("content")).get("application/json")).get("schema"))
        errors = tuple(
            (code, _text(_map(r).get("description"))) for code, r in responses.items() if code != "200"
        )
        out.append(
            Operation(
                id=_text(op.get("operationId")) or path,
                method="GET",
                path=path,
                summary=_text(op.get("summary")),
                description=_text(op.get("description")),
                params=params,
                response=_type(ok, spec),
                fields=_fields(ok, spec),
                errors=errors,
            )
        )
    return out


@dataclass(frozen=True)
class SchemaDoc:
    name: str
    description: str
    fields: tuple[FieldDoc, ...]


def schemas(spec: Json) -> list[SchemaDoc]:
    """Every named response model with its fields, so nested values (a workload's savings) are described."""
    found = _map(_map(spec.get("components")).get("schemas"))
    return [
        SchemaDoc(name, _text(_map(s).get("description")), _fields(_map(s), spec))
        for name, s in sorted(found.items())
        if name not in ("HTTPValidationError", "ValidationError")
    ]
