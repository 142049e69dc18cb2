"""The Avro schema of a typed record (``avro_schema``), as the table in ``serdes.typed_records`` maps Python
types; ``DecimalSpec`` gives a Decimal field its precision and scale. Computed once per class.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import functools
import uuid
from collections.abc import Iterable
from typing import Any, NamedTuple

from serdes.typed_records.introspection import (
    MISSING,
    is_record_type,
    map_value,
    record_fields,
    record_fullname,
    record_namespace,
    sequence_item,
    union_args,
    unwrap,
)

__all__ = ["DecimalSpec", "avro_named_schema", "avro_schema"]


class DecimalSpec(NamedTuple):
    """Precision and scale of a Decimal field: ``price: Annotated[Decimal, DecimalSpec(10, 2)]``."""

    precision: int
    scale: int


_DEFAULT_DECIMAL = DecimalSpec(38, 9)


def avro_schema(cls: type, references: Iterable[type] = ()) -> dict[str, Any]:
    """The Avro schema (as a JSON-able dict) of a dataclass or pydantic model. Record and enum classes in
    ``references`` are named, not spelled out (they are registered as schema references). Cached."""
    return _avro_schema(cls, frozenset(record_fullname(r) for r in references) - {record_fullname(cls)})


def avro_named_schema(t: type, references: Iterable[type] = ()) -> dict[str, Any]:
    """The Avro schema of a record class (as ``avro_schema``) or of an enum class."""
    if isinstance(t, type) and issubclass(t, enum.Enum):
        return _avro_type(t, set())
    return avro_schema(t, references)


@functools.cache
def _avro_schema(cls: type, external: frozenset[str]) -> dict[str, Any]:
    if not is_record_type(cls):
        raise TypeError(f"avro_schema needs a dataclass or pydantic model class, not {cls!r}")
    schema = _avro_record(cls, set(external))
    assert isinstance(schema, dict)  # with no names defined yet the record is spelled out, not referred to
    return schema


def _avro_record(cls: type, named: set[str]) -> dict[str, Any] | str:
    fullname = record_fullname(cls)
    if fullname in named:
        return fullname
    named.add(fullname)
    fields = []
    for f in record_fields(cls):
        try:
            ftype = _avro_type(f.hint, named, f.default)
        except TypeError as e:
            raise TypeError(f"{cls.__qualname__}.{f.name}: {e}") from None
        field: dict[str, Any] = {"name": f.name, "type": ftype}
        if f.default is not MISSING:
            field["default"] = _avro_default(f.default)
        fields.append(field)
    schema: dict[str, Any] = {"type": "record", "name": getattr(cls, "__avro_name__", cls.__name__)}
    ns = record_namespace(cls)
    if ns:
        schema["namespace"] = ns
    if cls.__doc__ and dataclasses.is_dataclass(cls) and not cls.__doc__.startswith(cls.__name__ + "("):
        schema["doc"] = cls.__doc__.strip()
    schema["fields"] = fields
    return schema


def _avro_type(hint: Any, named: set[str], default: Any = MISSING) -> Any:
    hint, meta = unwrap(hint)
    if hint is type(None) or hint is None:
        return "null"
    if hint is bool:
        return "boolean"
    if hint is int:
        return "long"
    if hint is float:
        return "double"
    if hint is str:
        return "string"
    if hint is bytes:
        return "bytes"
    if hint is dt.datetime:
        return {"type": "long", "logicalType": "timestamp-micros"}
    if hint is dt.date:
        return {"type": "int", "logicalType": "date"}
    if hint is dt.time:
        return {"type": "long", "logicalType": "time-micros"}
    if hint is uuid.UUID:
        return {"type": "string", "logicalType": "uuid"}
    if hint is decimal.Decimal:
        spec = next((m for m in meta if isinstance(m, DecimalSpec)), _DEFAULT_DECIMAL)
        return {"type": "bytes", "logicalType": "decimal", "precision": spec.precision, "scale": spec.scale}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        fullname = record_fullname(hint)
        if fullname in named:
            return fullname
        named.add(fullname)
        schema: dict[str, Any] = {"type": "enum", "name": getattr(hint, "__avro_name__", hint.__name__)}
        ns = record_namespace(hint)
        if ns:
            schema["namespace"] = ns
        schema["symbols"] = [m.name for m in hint]
        return schema
    if is_record_type(hint):
        return _avro_record(hint, named)
    args = union_args(hint)
    if args is not None:
        has_null = type(None) in args
        rest = [a for a in args if a is not type(None)]
        branches = [_avro_type(a, named) for a in rest]
        if has_null:
            # Avro takes a union's default from its first branch: null first unless defaulted otherwise.
            if default is MISSING or default is None:
                return ["null", *branches]
            return [*branches, "null"]
        return branches
    item = sequence_item(hint)
    if item is not None:
        return {"type": "array", "items": _avro_type(item, named)}
    value = map_value(hint)
    if value is not None:
        return {"type": "map", "values": _avro_type(value, named)}
    raise TypeError(f"no Avro mapping for type {hint!r}")


def _avro_default(value: Any) -> Any:
    """A Python default as an Avro JSON default (logical types as their underlying values)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        delta = value - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, dt.date):
        return (value - dt.date(1970, 1, 1)).days
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_avro_default(v) for v in value]
    if isinstance(value, dict):
        return {k: _avro_default(v) for k, v in value.items()}
    cls: type = type(value)
    if is_record_type(cls):
        return {f.name: _avro_default(getattr(value, f.name)) for f in record_fields(cls)}
    raise TypeError(f"cannot express default {value!r} in an Avro schema")
