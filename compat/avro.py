"""Avro schema resolution as Java's ``SchemaCompatibility.checkReaderWriterCompatibility`` (which Confluent
uses), with Confluent's ``Difference`` wording.

Input: parsed Avro nodes, plain dicts as ``registry/schema_types/avro.py`` builds them (``type`` is a
primitive name, ``record``, ``enum``, ``fixed``, ``array``, ``map`` or ``union``; named types carry their
full ``name``, ``short`` name, ``aliases`` as full names, and a named type used twice is the same dict).

Rules (Avro specification, "Schema Resolution"):
- same primitive type: compatible. Promotions: int -> long/float/double, long -> float/double,
  float -> double, string <-> bytes.
- record / enum / fixed: the unqualified names must be equal, or the writer's full name is one of the
  reader's aliases (``NAME_MISMATCH``, path ``.../name``).
- record: each reader field is matched to a writer field by name or one of the reader field's aliases; the
  types must be compatible (path ``.../fields/<reader pos>/type``); an unmatched reader field needs a
  default (``READER_FIELD_MISSING_DEFAULT_VALUE``, path ``.../fields/<pos>``). Java's special case is kept:
  an unmatched field without default whose type is an enum with a default is checked against the writer
  *record* (usually a ``TYPE_MISMATCH``).
- enum: writer symbols missing from the reader are an error unless the reader enum has a default
  (``MISSING_ENUM_SYMBOLS``, ``.../symbols``). fixed: sizes must be equal (``FIXED_SIZE_MISMATCH``, ``.../size``).
- array items (``.../items``) and map values (``.../values``) must be compatible.
- writer union: every branch must be readable. Against a reader union, unreadable branches give
  ``MISSING_UNION_BRANCH`` at ``.../<branch index>``; against a non-union reader each branch is checked at
  ``.../<branch index>``. A non-union writer against a reader union needs one compatible reader branch
  (else ``MISSING_UNION_BRANCH``).
- anything else: ``TYPE_MISMATCH``.

Recursion: results are memoized per (reader node, writer node) identity; a pair met again while still
being computed counts as compatible, as in Java. Java computes union branch checks with a fresh location
stack and shares the memo, so nested findings there keep the path of their first computation; we do too.
A walk deeper than :data:`compat.limits.MAX_DEPTH` (records reached through named types can nest far
deeper than the schema text) raises :class:`compat.limits.SchemaTooDeepError`. The compatibility policy
does not change Avro checks (as in Confluent).
"""

from __future__ import annotations

from typing import Any

from compat.levels import CompatibilityPolicy
from compat.limits import Walk, no_recursion_error
from compat.result import Incompatibility

Node = dict[str, Any]

_PROMOTIONS = {
    "long": ("int",),
    "float": ("int", "long"),
    "double": ("int", "long", "float"),
    "bytes": ("string",),
    "string": ("bytes",),
}

_IN_PROGRESS: list[Incompatibility] = []  # sentinel (compared by identity)


class _MultipleWriterFields(Exception):
    pass


def _describe(kind: str, path: str, info: str) -> tuple[str, str]:
    """Confluent's ``Difference`` description, as formatted for BACKWARD (reader new) and FORWARD."""

    def text(reader: str, writer: str) -> str:
        if kind == "FIXED_SIZE_MISMATCH":
            return (
                f"The size of FIXED type field at path '{path}' in the {reader} schema does not match "
                f"with the {writer} schema"
            )
        if kind == "TYPE_MISMATCH":
            return f"The type (path '{path}') of a field in the {reader} schema does not match with the {writer} schema"
        if kind == "NAME_MISMATCH":
            return f"The name of the schema has changed (path '{path}')"
        if kind == "MISSING_ENUM_SYMBOLS":
            return f"The {reader} schema is missing enum symbols '{info}' at path '{path}' in the {writer} schema"
        if kind == "MISSING_UNION_BRANCH":
            return f"The {reader} schema is missing a type inside a union field at path '{path}' in the {writer} schema"
        return (
            f"The field '{info}' at path '{path}' in the {reader} schema has no default value and is "
            f"missing in the {writer} schema"
        )

    backward, forward = text("new", "old"), text("old", "new")
    return backward, ("" if forward == backward else forward)


def _path(location: list[str]) -> str:
    # location[0] is the root token; JSON-pointer escaping of the rest
    return "/" + "/".join(t.replace("~", "~0").replace("/", "~1") for t in location[1:])


def _incompatible(kind: str, info: str, location: list[str]) -> list[Incompatibility]:
    path = _path(location)
    message, forward = _describe(kind, path, info)
    return [Incompatibility(kind, path, message, info, forward)]


def _type_name(node: Node) -> str:
    return node["type"].upper()


class _Checker:
    def __init__(self) -> None:
        # (id(reader), id(writer)) -> result; the nodes stay alive in the caller's graphs
        self.memo: dict[tuple[int, int], list[Incompatibility]] = {}
        self.walk = Walk()

    def top(self, reader: Node, writer: Node) -> list[Incompatibility]:
        return self.get("", reader, writer, [])

    def get(self, token: str, reader: Node, writer: Node, location: list[str]) -> list[Incompatibility]:
        location.append(token)
        key = (id(reader), id(writer))
        result = self.memo.get(key)
        if result is None:
            self.memo[key] = _IN_PROGRESS
            self.walk.down(lambda: _path(location))
            result = self.calculate(reader, writer, location)
            self.walk.up()
            self.memo[key] = result
        elif result is _IN_PROGRESS:
            result = []  # compatible unless proven otherwise
        location.pop()
        return result

    def calculate(self, reader: Node, writer: Node, location: list[str]) -> list[Incompatibility]:
        rt, wt = reader["type"], writer["type"]
        if rt == wt:
            if rt == "array":
                return list(self.get("items", reader["items"], writer["items"], location))
            if rt == "map":
                return list(self.get("values", reader["values"], writer["values"], location))
            if rt == "fixed":
                return self.names(reader, writer, location) + self.fixed_size(reader, writer, location)
            if rt == "enum":
                return self.names(reader, writer, location) + self.enum_symbols(reader, writer, location)
            if rt == "record":
                return self.names(reader, writer, location) + self.fields(reader, writer, location)
            if rt == "union":
                result: list[Incompatibility] = []
                for i, branch in enumerate(writer["types"]):
                    location.append(str(i))
                    if self.top(reader, branch):
                        info = f"reader union lacking writer type: {_type_name(branch)}"
                        result += _incompatible("MISSING_UNION_BRANCH", info, location)
                    location.pop()
                return result
            return []
        if wt == "union":
            result = []
            for i, branch in enumerate(writer["types"]):
                result += self.get(str(i), reader, branch, location)
            return result
        if rt == "union":
            for branch in reader["types"]:
                if not self.top(branch, writer):
                    return []
            info = f"reader union lacking writer type: {_type_name(writer)}"
            return _incompatible("MISSING_UNION_BRANCH", info, location)
        if wt in _PROMOTIONS.get(rt, ()):
            return []
        return self.type_mismatch(reader, writer, location)

    @staticmethod
    def type_mismatch(reader: Node, writer: Node, location: list[str]) -> list[Incompatibility]:
        info = f"reader type: {_type_name(reader)} not compatible with writer type: {_type_name(writer)}"
        return _incompatible("TYPE_MISMATCH", info, location)

    @staticmethod
    def names(reader: Node, writer: Node, location: list[str]) -> list[Incompatibility]:
        if reader["short"] == writer["short"] or writer["name"] in reader["aliases"]:
            return []
        location.append("name")
        result = _incompatible("NAME_MISMATCH", f"expected: {writer['name']}", location)
        location.pop()
        return result

    @staticmethod
    def fixed_size(reader: Node, writer: Node, location: list[str]) -> list[Incompatibility]:
        if reader["size"] == writer["size"]:
            return []
        location.append("size")
        info = f"expected: {writer['size']}, found: {reader['size']}"
        result = _incompatible("FIXED_SIZE_MISMATCH", info, location)
        location.pop()
        return result

    @staticmethod
    def enum_symbols(reader: Node, writer: Node, location: list[str]) -> list[Incompatibility]:
        missing = sorted(set(writer["symbols"]) - set(reader["symbols"]))
        if not missing:
            return []
        if reader.get("default") is not None and reader["default"] in reader["symbols"]:
            return []
        location.append("symbols")
        result = _incompatible("MISSING_ENUM_SYMBOLS", "[" + ", ".join(missing) + "]", location)
        location.pop()
        return result

    def fields(self, reader: Node, writer: Node, location: list[str]) -> list[Incompatibility]:
        result: list[Incompatibility] = []
        by_name = {f["name"]: f for f in writer["fields"]}
        location.append("fields")
        for pos, rf in enumerate(reader["fields"]):
            location.append(str(pos))
            matches = [by_name[n] for n in [rf["name"], *rf["aliases"]] if n in by_name]
            if len(matches) > 1:
                raise _MultipleWriterFields(
                    f"Reader record field {rf['name']} matches multiple fields in writer record schema {writer['name']}"
                )
            if not matches:
                if "default" not in rf:
                    ftype = rf["type"]
                    if ftype["type"] == "enum" and ftype.get("default") is not None:
                        result += self.get("type", ftype, writer, location)
                    else:
                        result += _incompatible("READER_FIELD_MISSING_DEFAULT_VALUE", rf["name"], location)
            else:
                result += self.get("type", rf["type"], matches[0]["type"], location)
            location.pop()
        location.pop()
        return result


@no_recursion_error
def check(
    reader: Node, writer: Node, policy: CompatibilityPolicy = CompatibilityPolicy.STRICT
) -> list[Incompatibility]:
    """Incompatibilities found when ``reader`` reads data written with ``writer`` (empty: compatible).
    ``policy`` is accepted for a uniform signature: Avro checks are the same under all policies."""
    try:
        return list(_Checker().top(reader, writer))
    except _MultipleWriterFields as e:
        # Java throws here; Confluent reports the exception text as the only message
        text = f"Unexpected exception during compatibility check: {e}"
        return [Incompatibility("UNEXPECTED_EXCEPTION", "/", text, str(e))]
