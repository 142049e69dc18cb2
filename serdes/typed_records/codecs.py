"""Converters between typed objects and the plain values the formats write: ``avro_encoder`` / ``avro_decoder``
(the dicts fastavro writes and reads), ``json_encoder`` / ``json_decoder`` (JSON-able dicts: dates as ISO text,
bytes as base64, Decimal and UUID as strings). Built once per class; a class whose fields need no conversion is
handed over as its ``__dict__``, without a copy.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import enum
import functools
import typing
import uuid
from collections.abc import Callable
from typing import Any

from serdes.typed_records.introspection import (
    is_record_type,
    map_value,
    record_fields,
    record_fullname,
    sequence_item,
    union_args,
    unwrap,
)

__all__ = ["avro_decoder", "avro_encoder", "json_decoder", "json_encoder"]

Converter = Callable[[Any], Any]


def avro_encoder(cls: type) -> Callable[[Any], dict[str, Any]]:
    """obj -> the dict fastavro writes. Returns ``vars(obj)`` itself when no field needs converting."""
    return _record_encoder(cls, "avro")


def avro_decoder(cls: type) -> Callable[[dict[str, Any]], Any]:
    """The dict fastavro read (with the class's own schema as reader schema) -> an instance of ``cls``."""
    return _record_decoder(cls, "avro")


def json_encoder(cls: type) -> Callable[[Any], dict[str, Any]]:
    """obj -> a JSON-able dict matching ``json_schema(cls)``."""
    return _record_encoder(cls, "json")


def json_decoder(cls: type) -> Callable[[dict[str, Any]], Any]:
    """A decoded JSON document -> an instance of ``cls``."""
    return _record_decoder(cls, "json")


def _fields_getter(cls: type) -> Callable[[Any], dict[str, Any]]:
    # Dataclasses without __slots__ and pydantic models keep their fields in __dict__: hand that dict to the
    # writer as it is (no copy). Slotted classes get a fresh dict.
    names = tuple(f.name for f in record_fields(cls))
    if hasattr(cls, "model_fields") or "__slots__" not in cls.__dict__:
        count = len(names)

        def fields_dict(obj: Any) -> dict[str, Any]:
            d = obj.__dict__
            # other instance attributes (init=False fields, cached properties) are not part of the record
            return d if len(d) == count else {n: d[n] for n in names}

        return fields_dict

    def getter(obj: Any) -> dict[str, Any]:
        return {n: getattr(obj, n) for n in names}

    return getter


def _field_converters(
    cls: type, codec: str, convert: Callable[[Any, str], Converter | None], compiling: tuple
) -> tuple[tuple[str, Converter], ...]:
    """(field name, converter) for each field of the record class ``cls`` that needs one; ``compiling`` marks
    ``cls`` in ``_compiling`` meanwhile (a record that contains itself gets a lazy converter)."""
    if not is_record_type(cls):
        raise TypeError(f"{cls!r} is not a dataclass or pydantic model")
    convs = []
    _compiling.add(compiling)
    try:
        for f in record_fields(cls):
            c = convert(f.hint, codec)
            if c is not None:
                convs.append((f.name, c))
    finally:
        _compiling.discard(compiling)
    return tuple(convs)


def _map_converter(hint: Any, codec: str, convert: Callable[[Any, str], Converter | None]) -> Converter | None:
    """The converter of a mapping whose values need one, else None."""
    value = map_value(hint)
    if value is None:
        return None
    value_conv = convert(value, codec)
    if value_conv is None:
        return None
    return lambda v: {k: value_conv(x) for k, x in v.items()}


@functools.cache
def _record_encoder(cls: type, codec: str) -> Callable[[Any], dict[str, Any]]:
    conv_items = _field_converters(cls, codec, _encoder, (cls, codec))
    getter = _fields_getter(cls)
    if not conv_items:
        return getter

    def encode(obj: Any) -> dict[str, Any]:
        d = dict(getter(obj))
        for name, c in conv_items:
            d[name] = c(d[name])
        return d

    return encode


def _encoder(hint: Any, codec: str) -> Converter | None:
    hint, _meta = unwrap(hint)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum_name
    if is_record_type(hint):
        if (hint, codec) in _compiling:  # a record containing itself: resolve on first use
            return _lazy(lambda: _record_encoder(hint, codec))
        return _record_encoder(hint, codec)
    if codec == "json":
        if hint is dt.datetime or hint is dt.date or hint is dt.time:
            return _isoformat
        if hint is decimal.Decimal or hint is uuid.UUID:
            return str
        if hint is bytes:
            return _b64encode
    args = union_args(hint)
    if args is not None:
        branches = [(a, _encoder(a, codec)) for a in args if a is not type(None)]
        if all(c is None for _, c in branches):
            return None
        records = [a for a, _ in branches if is_record_type(a)]
        tagged = codec == "avro" and len(records) > 1
        table = tuple(
            (_isinstance_target(a), c, record_fullname(a) if tagged and is_record_type(a) else None)
            for a, c in branches
        )

        def encode_union(v: Any) -> Any:
            if v is None:
                return None
            for target, c, tag in table:
                if target is None or isinstance(v, target):
                    out = c(v) if c is not None else v
                    # fastavro's tuple notation picks the branch when several records could match.
                    return (tag, out) if tag is not None else out
            return v

        return encode_union
    item = sequence_item(hint)
    if item is not None:
        item_enc = _encoder(item, codec)
        if item_enc is None:
            # fastavro writes any sized iterable; JSON needs a real list (sets are not JSON, tuples fail
            # jsonschema's "array" check).
            return None if codec == "avro" or (typing.get_origin(hint) or hint) is list else list
        return lambda v: [item_enc(x) for x in v]
    return _map_converter(hint, codec, _encoder)


def _isinstance_target(hint: Any) -> type | tuple[type, ...] | None:
    hint, _ = unwrap(hint)
    origin = typing.get_origin(hint)
    if origin is not None:
        return origin if isinstance(origin, type) else None
    return hint if isinstance(hint, type) else None


# Record classes whose converter is being compiled right now (to spot records that contain themselves).
_compiling: set[tuple] = set()


def _lazy(make: Callable[[], Converter]) -> Converter:
    cell: list[Converter] = []

    def call(v: Any) -> Any:
        if not cell:
            cell.append(make())
        return cell[0](v)

    return call


def _enum_name(v: Any) -> Any:
    return v.name if isinstance(v, enum.Enum) else v


def _isoformat(v: Any) -> Any:
    return v.isoformat() if isinstance(v, (dt.date, dt.time)) else v


def _b64encode(v: Any) -> Any:
    return base64.b64encode(v).decode("ascii") if isinstance(v, (bytes, bytearray)) else v


@functools.cache
def _record_decoder(cls: type, codec: str) -> Callable[[dict[str, Any]], Any]:
    conv_items = _field_converters(cls, codec, _decoder, (cls, codec, "decode"))
    build = _builder(cls)
    if not conv_items:
        return build

    def decode(d: dict[str, Any]) -> Any:
        for name, c in conv_items:
            if name in d:
                d[name] = c(d[name])
        return build(d)

    return decode


def _builder(cls: type) -> Callable[[dict[str, Any]], Any]:
    """dict of field values -> instance. A plain dataclass (no __post_init__, no slots, every field in
    __init__) gets the dict as its __dict__ without running __init__, which would only copy it there."""
    plain = (
        dataclasses.is_dataclass(cls)
        and "__slots__" not in cls.__dict__
        and not hasattr(cls, "__post_init__")
        and all(f.init for f in dataclasses.fields(cls))
        and cls.__new__ is object.__new__
    )
    if not plain:
        return lambda d: cls(**d)
    names = frozenset(f.name for f in dataclasses.fields(cls))
    new = object.__new__

    def build(d: dict[str, Any]) -> Any:
        if d.keys() != names:  # missing or extra fields: let __init__ report it
            return cls(**d)
        obj: Any = new(cls)
        obj.__dict__.update(d)
        return obj

    return build


def _decoder(hint: Any, codec: str) -> Converter | None:
    hint, _meta = unwrap(hint)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return dict(hint.__members__).__getitem__
    if is_record_type(hint):
        if (hint, codec, "decode") in _compiling:
            return _lazy(lambda: _record_decoder(hint, codec))
        return _record_decoder(hint, codec)
    if hint is tuple or hint is set or hint is frozenset:
        return hint
    if codec == "json":
        if hint is dt.datetime:
            return _parse_or_keep(dt.datetime.fromisoformat)
        if hint is dt.date:
            return _parse_or_keep(dt.date.fromisoformat)
        if hint is dt.time:
            return _parse_or_keep(dt.time.fromisoformat)
        if hint is decimal.Decimal:
            return _parse_or_keep(decimal.Decimal)
        if hint is uuid.UUID:
            return _parse_or_keep(uuid.UUID)
        if hint is bytes:
            return _parse_or_keep(base64.b64decode)
    args = union_args(hint)
    if args is not None:
        branches = [a for a in args if a is not type(None)]
        decs = [(a, _decoder(a, codec)) for a in branches]
        if all(c is None for _, c in decs):
            return None
        if len(decs) == 1:
            only = decs[0][1]
            assert only is not None  # not all of them are None
            return lambda v: None if v is None else only(v)
        by_name = {record_fullname(a): c for a, c in decs if c is not None and is_record_type(a)}
        others = [(a, c) for a, c in decs if not is_record_type(a)]

        def decode_union(v: Any) -> Any:
            if v is None:
                return None
            if isinstance(v, tuple) and len(v) == 2 and v[0] in by_name:  # (record name, dict) from fastavro
                return by_name[v[0]](v[1])
            if isinstance(v, dict) and len(by_name) == 1:
                return next(iter(by_name.values()))(v)
            for a, c in others:
                if (
                    c is not None
                    and isinstance(v, str)
                    and isinstance(a, type)
                    and issubclass(a, enum.Enum)
                    and v in a.__members__
                ):
                    return c(v)
            return v

        return decode_union
    item = sequence_item(hint)
    if item is not None:
        item_dec = _decoder(item, codec)
        origin = typing.get_origin(hint) or hint
        wrap = origin if origin in (tuple, set, frozenset) else None
        if item_dec is None:
            return wrap
        if wrap is None:
            return lambda v: [item_dec(x) for x in v]
        return lambda v: wrap(item_dec(x) for x in v)
    return _map_converter(hint, codec, _decoder)


def _parse_or_keep(parse: Callable[[Any], Any]) -> Converter:
    def conv(v: Any) -> Any:
        return parse(v) if isinstance(v, str) else v

    return conv
