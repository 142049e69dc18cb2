"""Typed records: dataclasses and pydantic models as Avro and JSON Schema, and the converters both ways.

Mapping (Python type -> Avro / JSON Schema):

=====================  ========================================  ========================================
str / int / float      string / long / double                    string / integer / number
bool / bytes           boolean / bytes                           boolean / string (base64)
X | None               ["null", X], default null when defaulted  anyOf [null, X]
enum.Enum              enum (symbols = member names)             string with enum = member names
dataclass / model      record (named once, then by full name)    object in ``definitions``, ``$ref``
list[X] / tuple / set  array                                     array
dict[str, X]           map                                       object with additionalProperties
datetime               long timestamp-micros (read back as UTC)  string, format date-time
date / time            int date / long time-micros               string, format date / time
Decimal                bytes decimal (``Annotated[Decimal,       string (exact)
                       DecimalSpec(p, s)]``; default 38, 9)
uuid.UUID              string uuid                               string, format uuid
=====================  ========================================  ========================================

Record names: ``__avro_name__`` / ``__avro_namespace__`` on the class override the class name and module.
Everything is computed once per class and cached.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import enum
import functools
import types
import typing
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

__all__ = [
    "DecimalSpec",
    "avro_decoder",
    "avro_encoder",
    "avro_named_schema",
    "avro_schema",
    "is_record_type",
    "json_decoder",
    "json_encoder",
    "json_schema",
    "record_fullname",
]

Converter = Callable[[Any], Any]

_MISSING = dataclasses.MISSING


class DecimalSpec(NamedTuple):
    """Precision and scale of a Decimal field: ``price: Annotated[Decimal, DecimalSpec(10, 2)]``."""

    precision: int
    scale: int


_DEFAULT_DECIMAL = DecimalSpec(38, 9)


def is_record_type(t: Any) -> bool:
    """A dataclass or a pydantic (v2) model class."""
    return isinstance(t, type) and (dataclasses.is_dataclass(t) or hasattr(t, "model_fields"))


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    hint: Any
    default: Any  # _MISSING when required; a value otherwise (factories are called once)


@functools.cache
def _fields(cls: type) -> tuple[_Field, ...]:
    if dataclasses.is_dataclass(cls):
        try:
            hints = typing.get_type_hints(cls, include_extras=True)
        except NameError as e:
            raise TypeError(
                f"cannot resolve the type hints of {cls.__qualname__} ({e}); define the classes it uses at module level"
            ) from None
        out = []
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            if f.default is not _MISSING:
                default = f.default
            elif f.default_factory is not _MISSING:
                default = f.default_factory()
            else:
                default = _MISSING
            out.append(_Field(f.name, hints[f.name], default))
        return tuple(out)
    if hasattr(cls, "model_fields"):  # pydantic v2
        out = []
        for name, info in cls.model_fields.items():
            if info.is_required():
                default = _MISSING
            elif info.default_factory is not None:
                default = info.default_factory()
            else:
                default = info.default
            # pydantic has resolved the annotation already and keeps Annotated extras in .metadata
            hint = info.annotation
            if info.metadata:
                hint = typing.Annotated[(hint, *info.metadata)]
            out.append(_Field(name, hint, default))
        return tuple(out)
    raise TypeError(f"{cls!r} is not a dataclass or pydantic model")


def record_fullname(cls: type) -> str:
    """The record's full name (namespace.name) as used in its Avro schema and by the record strategy."""
    name = getattr(cls, "__avro_name__", cls.__name__)
    ns = _namespace(cls)
    return f"{ns}.{name}" if ns else name


def _namespace(cls: type) -> str | None:
    ns = getattr(cls, "__avro_namespace__", None)
    if ns is None:
        ns = cls.__module__ if cls.__module__ not in ("__main__", "builtins") else None
    return ns or None


def _unwrap(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    """(bare type, Annotated metadata)."""
    if typing.get_origin(hint) is typing.Annotated:
        args = typing.get_args(hint)
        return args[0], tuple(args[1:])
    return hint, ()


def _union_args(hint: Any) -> tuple[Any, ...] | None:
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(hint)
    return None


def _seq_item(hint: Any) -> Any | None:
    origin = typing.get_origin(hint)
    if origin in (list, set, frozenset, Sequence, typing.Sequence) or hint in (list, set):
        args = typing.get_args(hint)
        return args[0] if args else Any
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return args[0]
        raise TypeError(f"only homogeneous tuples (tuple[X, ...]) map to arrays, not {hint!r}")
    return None


def _map_value(hint: Any) -> Any | None:
    origin = typing.get_origin(hint)
    if origin in (dict, Mapping, typing.Mapping) or hint is dict:
        args = typing.get_args(hint)
        if args and args[0] is not str:
            raise TypeError(f"map keys must be str, not {args[0]!r} (in {hint!r})")
        return args[1] if args else Any
    return None


# -- Avro schema ------------------------------------------------------------------------------------------


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
    for f in _fields(cls):
        try:
            ftype = _avro_type(f.hint, named, f.default)
        except TypeError as e:
            raise TypeError(f"{cls.__qualname__}.{f.name}: {e}") from None
        field: dict[str, Any] = {"name": f.name, "type": ftype}
        if f.default is not _MISSING:
            field["default"] = _avro_default(f.default)
        fields.append(field)
    schema: dict[str, Any] = {"type": "record", "name": getattr(cls, "__avro_name__", cls.__name__)}
    ns = _namespace(cls)
    if ns:
        schema["namespace"] = ns
    if cls.__doc__ and dataclasses.is_dataclass(cls) and not cls.__doc__.startswith(cls.__name__ + "("):
        schema["doc"] = cls.__doc__.strip()
    schema["fields"] = fields
    return schema


def _avro_type(hint: Any, named: set[str], default: Any = _MISSING) -> Any:
    hint, meta = _unwrap(hint)
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
        ns = _namespace(hint)
        if ns:
            schema["namespace"] = ns
        schema["symbols"] = [m.name for m in hint]
        return schema
    if is_record_type(hint):
        return _avro_record(hint, named)
    args = _union_args(hint)
    if args is not None:
        has_null = type(None) in args
        rest = [a for a in args if a is not type(None)]
        branches = [_avro_type(a, named) for a in rest]
        if has_null:
            # Avro takes a union's default from its first branch: null first unless defaulted otherwise.
            if default is _MISSING or default is None:
                return ["null", *branches]
            return [*branches, "null"]
        return branches
    item = _seq_item(hint)
    if item is not None:
        return {"type": "array", "items": _avro_type(item, named)}
    value = _map_value(hint)
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
        return {f.name: _avro_default(getattr(value, f.name)) for f in _fields(cls)}
    raise TypeError(f"cannot express default {value!r} in an Avro schema")


# -- converters between typed objects and fastavro's dicts -------------------------------------------------


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
    names = tuple(f.name for f in _fields(cls))
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


@functools.cache
def _record_encoder(cls: type, codec: str) -> Callable[[Any], dict[str, Any]]:
    if not is_record_type(cls):
        raise TypeError(f"{cls!r} is not a dataclass or pydantic model")
    getter = _fields_getter(cls)
    convs: list[tuple[str, Converter]] = []
    _compiling.add((cls, codec))
    try:
        for f in _fields(cls):
            c = _encoder(f.hint, codec)
            if c is not None:
                convs.append((f.name, c))
    finally:
        _compiling.discard((cls, codec))
    if not convs:
        return getter
    conv_items = tuple(convs)

    def encode(obj: Any) -> dict[str, Any]:
        d = dict(getter(obj))
        for name, c in conv_items:
            d[name] = c(d[name])
        return d

    return encode


def _encoder(hint: Any, codec: str) -> Converter | None:
    hint, _meta = _unwrap(hint)
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
    args = _union_args(hint)
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
    item = _seq_item(hint)
    if item is not None:
        item_enc = _encoder(item, codec)
        if item_enc is None:
            # fastavro writes any sized iterable; JSON needs a real list (sets are not JSON, tuples fail
            # jsonschema's "array" check).
            return None if codec == "avro" or (typing.get_origin(hint) or hint) is list else list
        return lambda v: [item_enc(x) for x in v]
    value = _map_value(hint)
    if value is not None:
        value_enc = _encoder(value, codec)
        if value_enc is None:
            return None
        return lambda v: {k: value_enc(x) for k, x in v.items()}
    return None


def _isinstance_target(hint: Any) -> type | tuple[type, ...] | None:
    hint, _ = _unwrap(hint)
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
    if not is_record_type(cls):
        raise TypeError(f"{cls!r} is not a dataclass or pydantic model")
    convs = []
    _compiling.add((cls, codec, "decode"))
    try:
        for f in _fields(cls):
            c = _decoder(f.hint, codec)
            if c is not None:
                convs.append((f.name, c))
    finally:
        _compiling.discard((cls, codec, "decode"))
    conv_items = tuple(convs)
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
    hint, _meta = _unwrap(hint)
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
    args = _union_args(hint)
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
    item = _seq_item(hint)
    if item is not None:
        item_dec = _decoder(item, codec)
        origin = typing.get_origin(hint) or hint
        wrap = origin if origin in (tuple, set, frozenset) else None
        if item_dec is None:
            return wrap
        if wrap is None:
            return lambda v: [item_dec(x) for x in v]
        return lambda v: wrap(item_dec(x) for x in v)
    value = _map_value(hint)
    if value is not None:
        value_dec = _decoder(value, codec)
        if value_dec is None:
            return None
        return lambda v: {k: value_dec(x) for k, x in v.items()}
    return None


def _parse_or_keep(parse: Callable[[Any], Any]) -> Converter:
    def conv(v: Any) -> Any:
        return parse(v) if isinstance(v, str) else v

    return conv


# -- JSON Schema ------------------------------------------------------------------------------------------


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
    for f in _fields(cls):
        try:
            prop = _json_type(f.hint, definitions)
        except TypeError as e:
            raise TypeError(f"{cls.__qualname__}.{f.name}: {e}") from None
        if f.default is _MISSING:
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
    hint, _meta = _unwrap(hint)
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
    args = _union_args(hint)
    if args is not None:
        return {"anyOf": [_json_type(a, definitions) for a in args]}
    item = _seq_item(hint)
    if item is not None:
        return {"type": "array", "items": _json_type(item, definitions)}
    value = _map_value(hint)
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
        return {f.name: _json_default(getattr(value, f.name)) for f in _fields(cls)}
    raise TypeError(f"cannot express default {value!r} in a JSON Schema")
