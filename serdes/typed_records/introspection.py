"""What a typed record is made of: a dataclass's or pydantic model's fields with their type hints and defaults
(``record_fields``, computed once per class), its record name (``record_fullname``: ``__avro_name__`` /
``__avro_namespace__`` on the class override the class name and module), and the shape of a hint (optional
union, sequence item, map value, ``Annotated`` extras). The schema mappings and the codecs read classes only
through these.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "MISSING",
    "Field",
    "is_record_type",
    "map_value",
    "record_fields",
    "record_fullname",
    "record_namespace",
    "sequence_item",
    "union_args",
    "unwrap",
]

MISSING = dataclasses.MISSING


def is_record_type(t: Any) -> bool:
    """A dataclass or a pydantic (v2) model class."""
    return isinstance(t, type) and (dataclasses.is_dataclass(t) or hasattr(t, "model_fields"))


@dataclasses.dataclass(frozen=True)
class Field:
    """One field of a record class, as the mappings and codecs see it."""

    name: str
    hint: Any
    default: Any  # MISSING when required; a value otherwise (factories are called once)


@functools.cache
def record_fields(cls: type) -> tuple[Field, ...]:
    """The fields of a dataclass (those ``__init__`` takes) or pydantic model, hints resolved (extras kept)."""
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
            if f.default is not MISSING:
                default = f.default
            elif f.default_factory is not MISSING:
                default = f.default_factory()
            else:
                default = MISSING
            out.append(Field(f.name, hints[f.name], default))
        return tuple(out)
    if hasattr(cls, "model_fields"):  # pydantic v2
        out = []
        for name, info in cls.model_fields.items():
            if info.is_required():
                default = MISSING
            elif info.default_factory is not None:
                default = info.default_factory()
            else:
                default = info.default
            # pydantic has resolved the annotation already and keeps Annotated extras in .metadata
            hint = info.annotation
            if info.metadata:
                hint = typing.Annotated[(hint, *info.metadata)]
            out.append(Field(name, hint, default))
        return tuple(out)
    raise TypeError(f"{cls!r} is not a dataclass or pydantic model")


def record_fullname(cls: type) -> str:
    """The record's full name (namespace.name) as used in its Avro schema and by the record strategy."""
    name = getattr(cls, "__avro_name__", cls.__name__)
    ns = record_namespace(cls)
    return f"{ns}.{name}" if ns else name


def record_namespace(cls: type) -> str | None:
    ns = getattr(cls, "__avro_namespace__", None)
    if ns is None:
        ns = cls.__module__ if cls.__module__ not in ("__main__", "builtins") else None
    return ns or None


def unwrap(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    """(bare type, Annotated metadata)."""
    if typing.get_origin(hint) is typing.Annotated:
        args = typing.get_args(hint)
        return args[0], tuple(args[1:])
    return hint, ()


def union_args(hint: Any) -> tuple[Any, ...] | None:
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(hint)
    return None


def sequence_item(hint: Any) -> Any | None:
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


def map_value(hint: Any) -> Any | None:
    origin = typing.get_origin(hint)
    if origin in (dict, Mapping, typing.Mapping) or hint is dict:
        args = typing.get_args(hint)
        if args and args[0] is not str:
            raise TypeError(f"map keys must be str, not {args[0]!r} (in {hint!r})")
        return args[1] if args else Any
    return None
