"""Schema types by name. A type is one module implementing ``base.SchemaType``; add it to ``_MODULES``."""

from __future__ import annotations

import importlib
import logging

from registry.schema_types.base import (
    InvalidSchemaError,
    ParsedSchema,
    Reference,
    ResolvedReference,
    SchemaType,
)

__all__ = [
    "InvalidSchemaError",
    "ParsedSchema",
    "Reference",
    "ResolvedReference",
    "SchemaType",
    "get_schema_type",
    "known_schema_types",
    "schema_types",
]

_MODULES = {
    "AVRO": ("registry.schema_types.avro", "AvroType"),
    "JSON": ("registry.schema_types.json_schema", "JsonSchemaType"),
    "PROTOBUF": ("registry.schema_types.protobuf", "ProtobufType"),
}
_loaded: dict[str, SchemaType] = {}
_broken: set[str] = set()
log = logging.getLogger(__name__)


def _load(name: str) -> SchemaType | None:
    if name in _loaded:
        return _loaded[name]
    if name in _broken:
        return None
    module_name, cls_name = _MODULES[name]
    try:
        t: SchemaType = getattr(importlib.import_module(module_name), cls_name)()
    except Exception:
        # One broken plug-in must not take the other types down; the error is logged once.
        log.exception("schema type %s is unavailable: loading %s failed", name, module_name)
        _broken.add(name)
        return None
    _loaded[name] = t
    return t


def get_schema_type(name: str) -> SchemaType | None:
    """The type named ``name`` (upper case), or None when unknown."""
    return _load(name) if name in _MODULES else None


def schema_types() -> list[str]:
    """The names of the types this server supports (each is loaded to know: ``GET /schemas/types``)."""
    return [n for n in _MODULES if _load(n) is not None]


def known_schema_types() -> list[str]:
    """The names of the types this server knows, none loaded: a type's module (and its parser library: JSON
    Schema's, Protobuf's, several MiB each) is imported when a schema of that type first comes, so a registry
    holding only Avro never holds them."""
    return list(_MODULES)
