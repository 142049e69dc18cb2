"""Per-schema Avro encoder and decoder generated as Python source: the serdes fast paths.

fastavro's compiled ``write_data`` dispatches on the schema for every value and builds sets of field names
for every record it writes; for a fixed schema all of that can be decided once. ``compile_encoder`` turns a
parsed schema into one straight-line function ``encode(datum, buf)`` that appends the Avro binary encoding.

The generated code only accepts canonical Python values (``str``, ``int`` in the long range, ``float``,
``bool``, ``bytes``, ``list``, ``dict``, ``None``) and raises on anything else or on a missing field. The
caller then encodes that record again with fastavro, so defaults, type coercions and error messages stay
exactly fastavro's; the fast path only ever produces bytes fastavro would produce for the same record.
Logical types, fixed, and unions other than ``[null, X]`` are handed to fastavro field by field.

``compile_decoder`` is the mirror image for reading without schema resolution: it decodes straight from the
``bytes`` (no file object, one index per byte) and raises on anything unexpected (truncation, a bad union or
enum index, invalid UTF-8, a varint over 64 bits), so that fastavro reads such payloads and gives its result.
Both are checked against fastavro on random and damaged records in ``tests/serdes/test_avro_codegen.py``.
"""

from __future__ import annotations

import io
import itertools
import struct
from collections.abc import Callable
from typing import Any

from fastavro.logical_writers import LOGICAL_WRITERS

from serdes import fastavro_core

__all__ = ["CodeGen", "ReaderGen", "compile_decoder", "compile_encoder"]

_TABLE_SIZE = 8192


def _big_varint(z: int) -> bytes:
    """Varint of an already zig-zagged value; rejects what does not fit a signed 64-bit long."""
    if z < 0 or z >> 64:
        raise OverflowError("value out of the Avro long range")
    out = bytearray()
    while z & ~0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


# Varint bytes of every zig-zagged value below _TABLE_SIZE: one list index instead of _big_varint's loop.
_VARINT: list[bytes] = [_big_varint(z) for z in range(_TABLE_SIZE)]


class CodeGen:
    """What every generator of Python source here shares: unique names, constants handed to the generated
    code through its namespace (never spelled into the source), and indented lines."""

    def __init__(self, named: dict[str, Any], consts: dict[str, Any]) -> None:
        self.named = named
        self.lines: list[str] = []
        self.consts = consts
        self.ids = itertools.count()
        self.stack: list[str] = []

    def var(self, stem: str) -> str:
        return f"{stem}{next(self.ids)}"

    def const(self, value: Any) -> str:
        name = self.var("c")
        self.consts[name] = value
        return name

    def emit(self, line: str, ind: int) -> None:
        self.lines.append("    " * ind + line)


class _EncoderGen(CodeGen):
    def __init__(self, named: dict[str, Any]) -> None:
        super().__init__(
            named,
            {
                "T": _VARINT,
                "big": _big_varint,
                "F": struct.Struct("<f").pack,
                "D": struct.Struct("<d").pack,
                "wd": fastavro_core.write_data,
                "named": named,
                "opts": fastavro_core.WRITE_OPTIONS,
            },
        )

    def length(self, n: str, ind: int) -> None:
        self.emit(f"z = {n} << 1", ind)
        self.emit("buf += T[z] if z < 8192 else big(z)", ind)

    def delegate(self, schema: Any, v: str, ind: int) -> None:
        """Hand one value to fastavro (logical types, fixed, general unions, recursive types)."""
        self.emit(f"wd(buf, {v}, {self.const(schema)}, named, '', opts)", ind)

    def value(self, schema: Any, v: str, ind: int) -> None:
        if isinstance(schema, str):
            if schema in self.named:
                self.named_type(schema, v, ind)
            else:
                self.primitive(schema, v, ind)
            return
        if isinstance(schema, list):
            self.union(schema, v, ind)
            return
        kind = schema["type"]
        logical = schema.get("logicalType")
        if logical is not None and f"{kind}-{logical}" in LOGICAL_WRITERS:
            self.delegate(schema, v, ind)
        elif kind == "record" or kind == "error":
            self.record(schema, v, ind)
        elif kind == "enum":
            table = {
                s: _VARINT[i << 1] if (i << 1) < _TABLE_SIZE else _big_varint(i << 1)
                for i, s in enumerate(schema["symbols"])
            }
            self.emit(f"buf += {self.const(table)}[{v}]", ind)
        elif kind == "array":
            self.array(schema["items"], v, ind)
        elif kind == "map":
            self.map(schema["values"], v, ind)
        elif kind == "fixed":
            self.delegate(schema, v, ind)
        elif isinstance(kind, str) and kind not in ("record", "error", "enum", "array", "map", "fixed"):
            self.value(kind, v, ind)  # {"type": "string"} and friends
        else:
            self.delegate(schema, v, ind)

    def primitive(self, kind: str, v: str, ind: int) -> None:
        if kind == "null":
            self.emit(f"if {v} is not None: raise TypeError", ind)
        elif kind == "boolean":
            self.emit(f"if {v} is True: buf += b'\\x01'", ind)
            self.emit(f"elif {v} is False: buf += b'\\x00'", ind)
            self.emit("else: raise TypeError", ind)
        elif kind in ("int", "long"):
            self.emit(f"if type({v}) is not int: raise TypeError", ind)
            self.emit(f"z = ({v} << 1) ^ ({v} >> 63)", ind)
            self.emit("buf += T[z] if 0 <= z < 8192 else big(z)", ind)
        elif kind == "double":
            self.emit(f"if type({v}) is not float: raise TypeError", ind)
            self.emit(f"buf += D({v})", ind)
        elif kind == "float":
            self.emit(f"if type({v}) is not float: raise TypeError", ind)
            self.emit(f"buf += F({v})", ind)
        elif kind == "string":
            b = self.var("b")
            self.emit(f"if type({v}) is not str: raise TypeError", ind)
            self.emit(f"{b} = {v}.encode()", ind)
            self.length(f"len({b})", ind)
            self.emit(f"buf += {b}", ind)
        elif kind == "bytes":
            self.emit(f"if type({v}) is not bytes: raise TypeError", ind)
            self.length(f"len({v})", ind)
            self.emit(f"buf += {v}", ind)
        else:
            raise ValueError(f"unknown Avro type {kind!r}")

    def named_type(self, name: str, v: str, ind: int) -> None:
        if name in self.stack:  # a type that contains itself: fastavro recurses for us
            self.delegate(name, v, ind)
            return
        self.value(self.named[name], v, ind)

    def record(self, schema: dict[str, Any], v: str, ind: int) -> None:
        self.stack.append(schema["name"])
        self.emit(f"if type({v}) is not dict: raise TypeError", ind)
        for field in schema["fields"]:
            fv = self.var("v")
            self.emit(f"{fv} = {v}[{field['name']!r}]", ind)
            self.value(field["type"], fv, ind)
        self.stack.pop()

    def array(self, items: Any, v: str, ind: int) -> None:
        x = self.var("x")
        self.emit(f"if type({v}) is not list: raise TypeError", ind)
        self.emit(f"if {v}:", ind)
        self.length(f"len({v})", ind + 1)
        self.emit(f"for {x} in {v}:", ind + 1)
        self.value(items, x, ind + 2)
        self.emit("buf += b'\\x00'", ind)

    def map(self, values: Any, v: str, ind: int) -> None:
        k, x, b = self.var("k"), self.var("x"), self.var("b")
        self.emit(f"if type({v}) is not dict: raise TypeError", ind)
        self.emit(f"if {v}:", ind)
        self.length(f"len({v})", ind + 1)
        self.emit(f"for {k}, {x} in {v}.items():", ind + 1)
        self.emit(f"if type({k}) is not str: raise TypeError", ind + 2)
        self.emit(f"{b} = {k}.encode()", ind + 2)
        self.length(f"len({b})", ind + 2)
        self.emit(f"buf += {b}", ind + 2)
        self.value(values, x, ind + 2)
        self.emit("buf += b'\\x00'", ind)

    def union(self, branches: list[Any], v: str, ind: int) -> None:
        others = [b for b in branches if b != "null"]
        if "null" not in branches or len(others) != 1 or len(branches) != 2:
            self.delegate(branches, v, ind)  # fastavro's branch matching, as it is
            return
        null_index = branches.index("null")
        other = others[0]
        start = len(self.lines)
        self.emit(f"if {v} is None: buf += {_VARINT[null_index << 1]!r}", ind)
        self.emit("else:", ind)
        self.emit(f"buf += {_VARINT[(1 - null_index) << 1]!r}", ind + 1)
        target = self.named.get(other, other) if isinstance(other, str) else other
        if isinstance(target, dict) and target.get("type") in ("record", "error"):
            # fastavro would not pick a record branch for a dict tagged as another type
            self.emit(f"if type({v}) is dict and '-type' in {v}: raise TypeError", ind + 1)
        self.value(other, v, ind + 1)
        if any("wd(" in line for line in self.lines[start:]):
            # Part of the branch goes to fastavro's write_data, which does not re-check what fastavro's union
            # matching would have rejected: leave the whole union to fastavro.
            del self.lines[start:]
            self.delegate(branches, v, ind)


def compile_encoder(schema: Any, named: dict[str, Any]) -> Callable[[Any, bytearray], None]:
    """``encode(datum, buf)`` for a fastavro-parsed ``schema`` (``named``: its named types)."""
    gen = _EncoderGen(named)
    gen.value(schema, "d", 1)
    source = "def encode(d, buf):\n" + "\n".join(gen.lines) + "\n"
    namespace = dict(gen.consts)
    exec(compile(source, "<serdes avro encoder>", "exec"), namespace)
    encode = namespace["encode"]
    encode.source = source  # for debugging
    return encode


# -- decoder ---------------------------------------------------------------------------------------------------------


class ReaderGen(CodeGen):
    """What the generated decoders share (``compile_decoder``'s and the Spark column decoder's): the reads of a
    boolean, double or float at ``pos``, which the two differ in only where the value goes."""

    def __init__(self, named: dict[str, Any], consts: dict[str, Any]) -> None:
        # Avro's little-endian double / float at an offset, without a slice
        super().__init__(
            named, {"UD": struct.Struct("<d").unpack_from, "UF": struct.Struct("<f").unpack_from, **consts}
        )

    def scalar(self, kind: str, store: str, ind: int) -> None:
        """Read a ``boolean``, ``double`` or ``float`` at ``pos`` into ``store``, a statement with ``{}`` for the
        value (``"x = {}"``, ``"L3_({})"``)."""
        if kind == "boolean":
            self.emit("b = data[pos]; pos += 1", ind)
            self.emit(f"if b == 1: {store.format('True')}", ind)
            self.emit(f"elif b == 0: {store.format('False')}", ind)
            self.emit("else: raise ValueError", ind)
        elif kind == "double":
            self.emit(f"{store.format('UD(data, pos)[0]')}; pos += 8", ind)
        elif kind == "float":
            self.emit(f"{store.format('UF(data, pos)[0]')}; pos += 4", ind)
        else:
            raise ValueError(f"{kind!r} is not a boolean, double or float")


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """Zig-zag varint at ``pos`` (the one-byte case is inlined by the generated code)."""
    n = 0
    shift = 0
    while True:
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if b < 128:
            if n >> 64:  # fastavro's C reader would wrap this around; let it decide
                raise ValueError("varint does not fit 64 bits")
            return (n >> 1) ^ -(n & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


class _DecoderGen(ReaderGen):
    def __init__(self, named: dict[str, Any], options: dict[str, Any]) -> None:
        super().__init__(
            named,
            {
                "rv": _read_varint,
                "rd": fastavro_core.read_data,
                "BIO": io.BytesIO,
                "NAMED": {"writer": named, "reader": {}},
                "OPTS": options,
            },
        )

    def long(self, target: str, ind: int) -> None:
        self.emit("b = data[pos]", ind)
        self.emit(f"if b < 128: {target} = (b >> 1) ^ -(b & 1); pos += 1", ind)
        self.emit(f"else: {target}, pos = rv(data, pos)", ind)

    def blob(self, target: str, ind: int, decode: bool) -> None:
        n = self.var("n")
        self.long(n, ind)
        self.emit(f"e = pos + {n}", ind)
        self.emit(f"if {n} < 0 or e > end: raise ValueError", ind)
        self.emit(f"{target} = data[pos:e]{'.decode()' if decode else ''}; pos = e", ind)

    def delegate(self, schema: Any, target: str, ind: int) -> None:
        self.emit("bio = BIO(data); bio.seek(pos)", ind)
        self.emit(f"{target} = rd(bio, {self.const(schema)}, NAMED, None, OPTS); pos = bio.tell()", ind)

    def value(self, schema: Any, target: str, ind: int) -> None:
        if isinstance(schema, str):
            if schema in self.named:
                if schema in self.stack:
                    self.delegate(schema, target, ind)
                else:
                    self.value(self.named[schema], target, ind)
            else:
                self.primitive(schema, target, ind)
            return
        if isinstance(schema, list):
            self.union(schema, target, ind)
            return
        kind = schema["type"]
        logical = schema.get("logicalType")
        if logical is not None or kind == "fixed":
            self.delegate(schema, target, ind)  # fastavro converts logical types (and unknown ones it ignores)
        elif kind == "record" or kind == "error":
            self.record(schema, target, ind)
        elif kind == "enum":
            i = self.var("i")
            symbols = self.const(tuple(schema["symbols"]))
            self.long(i, ind)
            self.emit(f"if not 0 <= {i} < {len(schema['symbols'])}: raise ValueError", ind)
            self.emit(f"{target} = {symbols}[{i}]", ind)
        elif kind == "array":
            self.blocks(schema["items"], target, ind, is_map=False)
        elif kind == "map":
            self.blocks(schema["values"], target, ind, is_map=True)
        elif isinstance(kind, str):
            self.value(kind, target, ind)
        else:
            self.delegate(schema, target, ind)

    def primitive(self, kind: str, target: str, ind: int) -> None:
        if kind == "null":
            self.emit(f"{target} = None", ind)
        elif kind in ("boolean", "double", "float"):
            self.scalar(kind, f"{target} = {{}}", ind)
        elif kind in ("int", "long"):
            self.long(target, ind)
        elif kind == "string":
            self.blob(target, ind, decode=True)
        elif kind == "bytes":
            self.blob(target, ind, decode=False)
        else:
            raise ValueError(f"unknown Avro type {kind!r}")

    def record(self, schema: dict[str, Any], target: str, ind: int) -> None:
        self.stack.append(schema["name"])
        names = []
        for field in schema["fields"]:
            fv = self.var("v")
            self.value(field["type"], fv, ind)
            names.append((field["name"], fv))
        self.emit(f"{target} = {{{', '.join(f'{n!r}: {v}' for n, v in names)}}}", ind)
        self.stack.pop()

    def blocks(self, items: Any, target: str, ind: int, is_map: bool) -> None:
        c, x, k = self.var("c"), self.var("x"), self.var("k")
        self.emit(f"{target} = {{}}" if is_map else f"{target} = []", ind)
        self.emit("while True:", ind)
        self.long(c, ind + 1)
        self.emit(f"if {c} == 0: break", ind + 1)
        self.emit(f"if {c} < 0:", ind + 1)  # a block with its byte size, which we do not need
        self.emit(f"{c} = -{c}; _, pos = rv(data, pos)", ind + 2)
        self.emit(f"for _ in range({c}):", ind + 1)
        if is_map:
            self.blob(k, ind + 2, decode=True)
        self.value(items, x, ind + 2)
        self.emit(f"{target}[{k}] = {x}" if is_map else f"{target}.append({x})", ind + 2)

    def union(self, branches: list[Any], target: str, ind: int) -> None:
        others = [b for b in branches if b != "null"]
        if "null" not in branches or len(others) != 1 or len(branches) != 2:
            self.delegate(branches, target, ind)
            return
        null_index = branches.index("null")
        i = self.var("i")
        self.long(i, ind)
        self.emit(f"if {i} == {null_index}: {target} = None", ind)
        self.emit(f"elif {i} == {1 - null_index}:", ind)
        self.value(others[0], target, ind + 1)
        self.emit("else: raise ValueError", ind)


def compile_decoder(
    schema: Any, named: dict[str, Any], options: dict[str, Any]
) -> Callable[[bytes, int], tuple[Any, int]]:
    """``decode(data, pos) -> (value, end position)`` for a fastavro-parsed writer ``schema``, read without a
    reader schema. Raises on anything unexpected (truncation, bad index, bad UTF-8); the caller then reads the
    record with fastavro, which gives its own result or error."""
    gen = _DecoderGen(named, options)
    gen.value(schema, "out", 1)
    source = "def decode(data, pos):\n    end = len(data)\n" + "\n".join(gen.lines) + "\n    return out, pos\n"
    namespace = dict(gen.consts)
    exec(compile(source, "<serdes avro decoder>", "exec"), namespace)
    decode = namespace["decode"]
    decode.source = source
    return decode
