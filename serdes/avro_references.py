"""Avro named types given to a serializer as references (``AvroSerializer(client, Person, references=[Address])``):
which names each schema uses, and the order to register them in (a type before the types that use it).

The serializer registers each under its own subject (by default its full name) and registers its main schema
with ``references`` to the ones it uses, as the Protobuf serializer does with imported files.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from serdes.models import Schema
from serdes.plans import LocalReference

__all__ = ["local_references", "named_type"]

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_NAMED = frozenset({"record", "error", "enum", "fixed"})


def _fullname(name: str, namespace: str | None) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _walk(node: Any, namespace: str | None, used: set[str], defined: set[str]) -> None:
    if isinstance(node, str):
        if node not in _PRIMITIVES:
            used.add(node)  # a short name may mean the enclosing namespace's type or a type with no namespace
            used.add(_fullname(node, namespace))
    elif isinstance(node, list):
        for branch in node:
            _walk(branch, namespace, used, defined)
    elif isinstance(node, dict):
        kind = node.get("type")
        if kind in _NAMED and isinstance(node.get("name"), str):
            full = _fullname(node["name"], node.get("namespace", namespace))
            defined.add(full)
            inner = full.rpartition(".")[0] or None
            for field in node.get("fields") or ():
                _walk(field.get("type"), inner, used, defined)
        elif kind == "array":
            _walk(node.get("items"), namespace, used, defined)
        elif kind == "map":
            _walk(node.get("values"), namespace, used, defined)
        else:
            _walk(kind, namespace, used, defined)


def named_type(schema: Schema) -> str:
    """The full name of the named type (record, enum, fixed) ``schema`` defines at its top."""
    doc = json.loads(schema.schema_str)
    if not (isinstance(doc, dict) and doc.get("type") in _NAMED and isinstance(doc.get("name"), str)):
        raise TypeError(f"an Avro reference must be a named type (record, enum or fixed), not {schema.schema_str[:80]}")
    return _fullname(doc["name"], doc.get("namespace"))


def _uses(schema: Schema, names: Sequence[str]) -> tuple[str, ...]:
    """The names among ``names`` that ``schema`` refers to without defining them."""
    used: set[str] = set()
    defined: set[str] = set()
    _walk(json.loads(schema.schema_str), None, used, defined)
    return tuple(n for n in names if n in used and n not in defined)


def local_references(main: Schema, references: Sequence[Schema]) -> tuple[list[LocalReference], tuple[str, ...]]:
    """(the references as ``LocalReference``s in registration order, the names ``main`` uses directly).

    Raises ValueError for two references defining the same name, or references using each other in a cycle."""
    by_name: dict[str, Schema] = {}
    for schema in references:
        name = named_type(schema)
        if name in by_name:
            raise ValueError(f"two Avro references define {name!r}")
        by_name[name] = schema
    names = list(by_name)
    uses = {name: _uses(schema, [n for n in names if n != name]) for name, schema in by_name.items()}
    order: list[str] = []
    state: dict[str, int] = {}  # 1: being visited, 2: done

    def visit(name: str, path: tuple[str, ...]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            raise ValueError(f"Avro references use each other in a cycle: {' -> '.join((*path, name))}")
        state[name] = 1
        for dep in uses[name]:
            visit(dep, (*path, name))
        state[name] = 2
        order.append(name)

    for name in names:
        visit(name, ())
    return [LocalReference(n, by_name[n], uses[n]) for n in order], _uses(main, names)
