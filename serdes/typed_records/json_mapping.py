"""The JSON Schema (draft-07) of a typed record (``json_schema``), as the table in ``serdes.typed_records`` maps
Python types; nested records go to ``definitions``. Computed once per class.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import enum
import functools
import uuid
from typing import Any

from serdes.typed_records.introspection import (
    MISSING,
    is_record_type,
    map_value,
    record_fields,
    record_fullname,
    sequence_item,
    union_args,
    unwrap,
)

__all__ = ["json_schema"]


def json_schema(cls: type) -> dict[str, Any]:
    """The JSON Schema (draft-07) of a dataclass or pydantic model; nested records go to ``definitions``."""
    return _json_schema(cls)


@functools.cache
def _json_schema(cls: type) -> dict[str, Any]:
    if not is_record_type(cls):
        raise TypeError(f"json_schema needs a dataclass or pydantic model class, not {cls!r}")
    definitions: dict[str, Any] = {}
    root = _json_object(cls, definitions, root=True)
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", **root}
    if definitions:
        schema["definitions"] = definitions
    return schema


def _json_object(cls: type, definitions: dict[str, Any], root: bool = False) -> dict[str, Any]:
    props: dict[str, Any] = {}
    required = []
    for f in record_fields(cls):
        try:
            prop = _json_type(f.hint, definitions)
        except TypeError as e:
            raise TypeError(f"{cls.__qualname__}.{f.name}: {e}") from None
        if f.default is MISSING:
            required.append(f.name)
        else:
            prop = {**prop, "default": _json_default(f.default)}
        props[f.name] = prop
    out: dict[str, Any] = {"title": getattr(cls, "__avro_name__", cls.__name__), "type": "object", "properties": props}
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    return out


def _json_type(hint: Any, definitions: dict[str, Any]) -> dict[str, Any]:
    hint, _meta = unwrap(hint)
    if hint is type(None) or hint is None:
        return {"type": "null"}
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if hint in simple:
        return {"type": simple[hint]}
    if hint is bytes:
        return {"type": "string", "contentEncoding": "base64"}
    fmt = {dt.datetime: "date-time", dt.date: "date", dt.time: "time", uuid.UUID: "uuid"}
    if hint in fmt:
        return {"type": "string", "format": fmt[hint]}
    if hint is decimal.Decimal:
        return {"type": "string", "pattern": r"^-?[0-9]+(\.[0-9]+)?$"}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"type": "string", "enum": [m.name for m in hint]}
    if is_record_type(hint):
        key = record_fullname(hint)
        if key not in definitions:
            definitions[key] = {}  # placeholder: a record that contains itself refers to this entry
            definitions[key] = _json_object(hint, definitions)
        return {"$ref": f"#/definitions/{key}"}
    args = union_args(hint)
    if args is not None:
        return {"anyOf": [_json_type(a, definitions) for a in args]}
    item = sequence_item(hint)
    if item is not None:
        return {"type": "array", "items": _json_type(item, definitions)}
    value = map_value(hint)
    if value is not None:
        return {"type": "object", "additionalProperties": _json_type(value, definitions)}
    raise TypeError(f"no JSON Schema mapping for type {hint!r}")


def _json_default(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (decimal.Decimal, uuid.UUID)):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_json_default(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_default(v) for k, v in value.items()}
    cls: type = type(value)
    if is_record_type(cls):
        return {f.name: _json_default(getattr(value, f.name)) for f in record_fields(cls)}
    raise TypeError(f"cannot express default {value!r} in a JSON Schema")
