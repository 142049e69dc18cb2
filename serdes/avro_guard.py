"""The two Avro payloads fastavro cannot be trusted with, refused before it reads them.

fastavro (and so confluent-kafka's deserializer) reads whatever a payload claims:

- **Items that take no bytes.** An array of ``null`` (or of an empty record, or of ``fixed`` of size 0) is one
  count and no item bytes, so a 13-byte payload can claim 2^62 items: the reader appends ``None`` until memory
  runs out (10^8 of them already take 15 s and 1 GB). Every other item takes at least one byte, so its count is
  bounded by the payload's length.
- **Nesting of a recursive type.** A record that contains itself (a linked list, a tree) is read by recursion
  in C: about 5,000 levels, which one byte each encode, overflow the C stack and kill the process
  (segmentation fault), where no exception can be caught.

Only writer schemas with an array of zero-byte items or a recursive named type need the check
(``payload_guard`` returns None for every other schema, which pays nothing). The check walks the payload once,
iteratively, without building values, and raises ``SerializationError`` (naming the schema id and the offset)
past ``MAX_ZERO_SIZE_ITEMS`` zero-byte items in one record or ``MAX_RECURSION_DEPTH`` nested named types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from serdes.errors import SerializationError
from serdes.wire import read_unsigned_varint

#: zero-byte array items (``null``, empty records, ``fixed`` of size 0) one record may hold, over all its arrays
MAX_ZERO_SIZE_ITEMS = 1_000_000
#: nested named types (records of a recursive schema) one record may hold; fastavro crashes past ~5,000
MAX_RECURSION_DEPTH = 1000

_PRIMITIVE_SIZES = {"boolean": 1, "float": 4, "double": 8}
_EXIT = object()  # a marker on the walk's stack: a named type ends here


class _Refused(Exception):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


def payload_guard(schema: Any, named: dict[str, Any]) -> Callable[[bytes, int, int, str | None], None] | None:
    """``check(data, pos, schema_id, topic)`` for a fastavro-parsed writer ``schema`` with zero-byte array items
    or a recursive named type; None when the schema has neither (fastavro's reading of it is bounded)."""
    walk = _Walk(named)
    try:
        if not walk.needs_guard(schema):
            return None
    except RecursionError:  # a schema nested past Python's stack: fastavro could not have parsed it either
        return None

    def check(data: bytes, pos: int, schema_id: int, topic: str | None) -> None:
        try:
            walk.run(schema, data, pos)
        except _Refused as e:
            raise SerializationError(str(e), topic=topic, offset=e.offset, schema_id=schema_id) from None
        except (IndexError, ValueError, KeyError, TypeError):
            pass  # a malformed payload: the reader that follows names the problem

    return check


class _Walk:
    def __init__(self, named: dict[str, Any]) -> None:
        self.named = named
        self._zero: dict[str, bool] = {}

    def resolve(self, schema: Any) -> Any:
        while isinstance(schema, str) and schema in self.named:
            schema = self.named[schema]
        return schema

    def needs_guard(self, schema: Any) -> bool:
        """Does ``schema`` have an array of zero-byte items, or a named type that contains itself?"""
        found = False

        def visit(s: Any, open_names: tuple[str, ...], seen: set[str]) -> None:
            nonlocal found
            if found:
                return
            if isinstance(s, str):
                if s in open_names:
                    found = True
                elif s in self.named and s not in seen:
                    seen.add(s)
                    visit(self.named[s], open_names, seen)
                return
            if isinstance(s, list):
                for branch in s:
                    visit(branch, open_names, seen)
                return
            kind = s.get("type")
            if kind in ("record", "error"):
                inside = (*open_names, s["name"])
                for field in s["fields"]:
                    visit(field["type"], inside, set(seen))
            elif kind == "array":
                if self.zero_size(s["items"]):
                    found = True
                visit(s["items"], open_names, seen)
            elif kind == "map":
                visit(s["values"], open_names, seen)
            elif isinstance(kind, (dict, list)):
                visit(kind, open_names, seen)

        visit(schema, (), set())
        return found

    def zero_size(self, schema: Any, open_names: frozenset[str] = frozenset()) -> bool:
        """Does every value of ``schema`` encode to no bytes at all?"""
        if isinstance(schema, str):
            if schema == "null":
                return True
            if schema in self.named and schema not in open_names:
                return self.zero_size(self.named[schema], open_names | {schema})
            return False
        if isinstance(schema, list):
            return False  # a union writes its branch index
        kind = schema.get("type")
        if kind in ("record", "error"):
            inside = open_names | {schema["name"]}
            return all(self.zero_size(f["type"], inside) for f in schema["fields"])
        if kind == "fixed":
            return bool(schema.get("size") == 0)
        if isinstance(kind, (str, dict, list)) and kind not in ("enum", "array", "map"):
            return self.zero_size(kind, open_names)
        return False

    def run(self, schema: Any, data: bytes, pos: int) -> None:
        """Skip one value of ``schema`` at ``pos``, counting zero-byte items and open named types."""
        zero_items = depth = 0
        stack: list[Any] = [schema]
        while stack:
            s = stack.pop()
            if s is _EXIT:
                depth -= 1
                continue
            s = self.resolve(s)
            if isinstance(s, list):
                index, pos = _varint(data, pos)
                if index < 0:
                    raise ValueError("negative union index")
                stack.append(s[index])
                continue
            if isinstance(s, str):
                pos = _skip_primitive(s, data, pos)
                continue
            kind = s["type"]
            if kind in ("record", "error"):
                depth += 1
                if depth > MAX_RECURSION_DEPTH:
                    raise _Refused(
                        f"the Avro payload nests records deeper than {MAX_RECURSION_DEPTH} levels "
                        f"(reading it could crash the process)",
                        pos,
                    )
                stack.append(_EXIT)
                stack.extend(f["type"] for f in reversed(s["fields"]))
            elif kind == "enum":
                _, pos = _varint(data, pos)
            elif kind == "fixed":
                pos += s["size"]
            elif kind in ("array", "map"):
                items = s["items"] if kind == "array" else s["values"]
                count, pos = _varint(data, pos)
                if count == 0:
                    continue
                if count < 0:
                    count = -count
                    _, pos = _varint(data, pos)  # the block's byte size
                stack.append(s)  # the next block, after this one's items
                if kind == "array" and self.zero_size(items):
                    zero_items += count
                    if zero_items > MAX_ZERO_SIZE_ITEMS:
                        raise _Refused(
                            f"the Avro payload claims more than {MAX_ZERO_SIZE_ITEMS} array items that take no "
                            f"bytes ({items!r})",
                            pos,
                        )
                    continue
                if count > len(data) - pos:  # every other item takes at least one byte
                    return
                for _ in range(count):
                    stack.append(items)
                    if kind == "map":
                        stack.append("string")  # popped first: a map entry is its key, then its value
            elif isinstance(kind, (str, dict, list)):
                stack.append(kind)  # a logical type's underlying type, or a nested type


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """An Avro int or long (a zig-zag varint) at ``pos``, and the position after it."""
    n, pos = read_unsigned_varint(data, pos)
    return (n >> 1) ^ -(n & 1), pos


def _skip_primitive(kind: str, data: bytes, pos: int) -> int:
    if kind == "null":
        return pos
    if kind in _PRIMITIVE_SIZES:
        return pos + _PRIMITIVE_SIZES[kind]
    if kind in ("int", "long"):
        return _varint(data, pos)[1]
    if kind in ("string", "bytes"):
        n, pos = _varint(data, pos)
        if n < 0:
            raise ValueError("negative length")
        return pos + n
    raise ValueError(f"unknown Avro type {kind!r}")
