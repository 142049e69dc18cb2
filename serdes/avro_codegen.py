"""Per-schema Avro encoder and decoder generated as Python source: the serdes fast paths.

fastavro's compiled ``write_data`` dispatches on the schema for every value and builds sets of field names
for every record it writes; for a fixed schema all of that can be decided once. ``compile_encoder`` turns a
parsed schema into one straight-line function ``encode(datum, buf)`` that appends the Avro binary encoding.

The generated code covers every Avro type: primitives, enums, fixed, arrays and maps of any item type, nested
records, unions of any arity and the logical types fastavro converts (decimal on bytes or fixed, uuid, date,
time-millis/micros, timestamp-millis/micros, local-timestamp-millis/micros: converted by fastavro's own
``LOGICAL_WRITERS`` / ``LOGICAL_READERS`` functions, then written or read inline). Only a type that contains
itself is handed to fastavro (and a union holding one, as a whole).

It accepts canonical Python values only (``str``, ``int``, ``float``, ``bool``, ``bytes``, ``list``, ``dict``,
``None``, and the logical types' ``datetime``/``date``/``time``/``Decimal``/``UUID``) and raises on anything
else, on a missing field, or on an ``int`` out of its type's range. The caller then encodes that record again
with fastavro, so defaults, type coercions and error messages stay exactly fastavro's; the fast path only ever
produces bytes fastavro would produce for the same record.

A union picks its branch as fastavro's ``write_union`` does: the first branch whose validator accepts the value
(``float`` giving way to a later ``double``). The generated code dispatches on the value's exact type to the
branches that could accept it, in order, and decides each one with the validator's own test where that test is
cheap (null, boolean, int/long range, float/double, string, bytes, enum symbol, fixed size). Where fastavro's
choice would need a deep test (an array, map or record branch followed by another candidate, a logical branch
followed by another one, or an ``int`` meeting a float branch) it raises, and fastavro decides that record.

``compile_decoder`` is the mirror image for reading without schema resolution: it decodes straight from the
``bytes`` (no file object, one index per byte) and raises on anything unexpected (truncation, a bad union or
enum index, invalid UTF-8, a varint over 64 bits), so that fastavro reads such payloads and gives its result.
Union values come back as fastavro's reader returns them for the options given (plain, or ``(name, value)`` for
record branches with ``return_record_name``).
Both are checked against fastavro on random and damaged records, and on random schemas (hypothesis), in
``tests/serdes/test_avro_codegen.py`` and ``tests/serdes/test_avro_codegen_random.py``.
"""

from __future__ import annotations

import datetime
import decimal
import io
import itertools
import struct
import uuid
from collections.abc import Callable
from typing import Any

from fastavro.const import AVRO_TYPES as _AVRO_TYPES
from fastavro.logical_readers import LOGICAL_READERS
from fastavro.logical_writers import LOGICAL_WRITERS

from serdes import fastavro_core

__all__ = [
    "PRIMITIVES",
    "CodeGen",
    "DecoderGen",
    "ReaderGen",
    "compile_decoder",
    "compile_encoder",
    "decode_function",
    "logical_key",
    "record_type",
]

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


def _big_int_varint(z: int) -> bytes:
    """``_big_varint`` for an Avro ``int``: rejects what does not fit 32 bits, as fastavro's union matching does."""
    if z >> 32:
        raise OverflowError("value out of the Avro int range")
    return _big_varint(z)


# Varint bytes of every zig-zagged value below _TABLE_SIZE: one list index instead of _big_varint's loop. Below
# _TABLE_SIZE << 7 a value is its low seven bits with the continuation bit (_LOW) and then the rest from the table.
_VARINT: list[bytes] = [_big_varint(z) for z in range(_TABLE_SIZE)]
_LOW: list[bytes] = [bytes([b | 0x80]) for b in range(128)]
_TWO_TABLES = _TABLE_SIZE << 7


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


PRIMITIVES = frozenset(["null", "boolean", "int", "long", "float", "double", "bytes", "string"])
_INT_RANGE = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
# The Python types whose values fastavro's validator can accept for a branch of each Avro type (exact types: any
# other type, a subclass included, is left to fastavro), and the further types each logical type's writer
# converts into its underlying type. A union's generated dispatch only considers these.
_COULD_VALIDATE: dict[str, tuple[type, ...]] = {
    "null": (type(None),),
    "boolean": (bool,),
    "int": (int,),
    "long": (int,),
    "float": (int, float),
    "double": (int, float),
    "string": (str,),
    "bytes": (bytes,),
    "fixed": (bytes,),
    "enum": (str,),
    "array": (list,),
    "map": (dict,),
    "record": (dict,),
    "error": (dict,),
}
_LOGICAL_SOURCES: dict[str, tuple[type, ...]] = {
    "long-timestamp-millis": (datetime.datetime,),
    "long-timestamp-micros": (datetime.datetime,),
    "long-local-timestamp-millis": (datetime.datetime,),
    "long-local-timestamp-micros": (datetime.datetime,),
    "int-date": (datetime.date, datetime.datetime, str),
    "int-time-millis": (datetime.time,),
    "long-time-micros": (datetime.time,),
    "string-uuid": (uuid.UUID,),
    "bytes-decimal": (decimal.Decimal,),
    "fixed-decimal": (decimal.Decimal,),
}


def logical_key(schema: Any) -> str | None:
    """fastavro's ``extract_logical_type``: ``"long-timestamp-millis"`` and the like, or None."""
    if isinstance(schema, dict) and schema.get("logicalType") is not None:
        return f"{schema['type']}-{schema['logicalType']}"
    return None


class _EncoderGen(CodeGen):
    def __init__(self, named: dict[str, Any]) -> None:
        super().__init__(
            named,
            {
                "T": _VARINT,
                "L": _LOW,
                "big": _big_varint,
                "big32": _big_int_varint,
                "F": struct.Struct("<f").pack,
                "D": struct.Struct("<d").pack,
                "wd": fastavro_core.write_data,
                "named": named,
                "opts": fastavro_core.WRITE_OPTIONS,
            },
        )
        self.known: dict[str, type] = {}  # variables whose exact type a union's dispatch has already checked

    def check_type(self, v: str, python_type: type, name: str, ind: int) -> None:
        """``if type(v) is not <name>: raise TypeError``, unless the dispatch already made sure of it."""
        if self.known.get(v) is not python_type:
            self.emit(f"if type({v}) is not {name}: raise TypeError", ind)

    def length(self, n: str, ind: int) -> None:
        self.emit(f"z = {n} << 1", ind)
        self.emit(f"buf += T[z] if z < 8192 else L[z & 127] + T[z >> 7] if z < {_TWO_TABLES} else big(z)", ind)

    def delegate(self, schema: Any, v: str, ind: int) -> None:
        """Hand one value to fastavro (a type that contains itself)."""
        self.emit(f"wd(buf, {v}, {self.const(schema)}, named, '', opts)", ind)

    def resolve(self, schema: Any) -> Any:
        """A named type's definition for its name, ``{"type": "string"}`` as ``"string"``."""
        while True:
            if isinstance(schema, str) and schema in self.named:
                schema = self.named[schema]
            elif isinstance(schema, dict) and isinstance(schema["type"], str) and schema["type"] in PRIMITIVES:
                if logical_key(schema) is not None:
                    return schema
                schema = schema["type"]
            else:
                return schema

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
        logical = logical_key(schema)
        if logical is not None and logical in LOGICAL_WRITERS:
            # fastavro's own conversion (the one its write_data applies), then the underlying type inline
            p = self.var("p")
            self.emit(f"{p} = {self.const(LOGICAL_WRITERS[logical])}({v}, {self.const(schema)})", ind)
            v = p
        if kind == "record" or kind == "error":
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
            self.check_type(v, bytes, "bytes", ind)
            self.emit(f"if len({v}) != {int(schema['size'])}: raise TypeError", ind)
            self.emit(f"buf += {v}", ind)
        elif isinstance(kind, str):
            self.value(kind, v, ind)  # {"type": "string"} and friends
        else:
            self.delegate(schema, v, ind)

    def primitive(self, kind: str, v: str, ind: int) -> None:
        if kind == "null":
            if self.known.get(v) is not type(None):
                self.emit(f"if {v} is not None: raise TypeError", ind)
        elif kind == "boolean":
            self.emit(f"if {v} is True: buf += b'\\x01'", ind)
            self.emit(f"elif {v} is False: buf += b'\\x00'", ind)
            self.emit("else: raise TypeError", ind)
        elif kind in ("int", "long"):
            # an int out of the 32-bit range is left to fastavro (its union matching would not pick "int")
            self.check_type(v, int, "int", ind)
            self.emit(f"z = ({v} << 1) ^ ({v} >> 63)", ind)
            big = "big" if kind == "long" else "big32"
            self.emit("if 0 <= z < 8192: buf += T[z]", ind)
            self.emit(f"elif 0 < z < {_TWO_TABLES}: buf += L[z & 127]; buf += T[z >> 7]", ind)
            self.emit(f"else: buf += {big}(z)", ind)
        elif kind == "double":
            self.check_type(v, float, "float", ind)
            self.emit(f"buf += D({v})", ind)
        elif kind == "float":
            self.check_type(v, float, "float", ind)
            self.emit(f"buf += F({v})", ind)
        elif kind == "string":
            b = self.var("b")
            self.check_type(v, str, "str", ind)
            self.emit(f"{b} = {v}.encode()", ind)
            self.length(f"len({b})", ind)
            self.emit(f"buf += {b}", ind)
        elif kind == "bytes":
            self.check_type(v, bytes, "bytes", ind)
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
        self.check_type(v, dict, "dict", ind)
        for field in schema["fields"]:
            fv = self.var("v")
            self.emit(f"{fv} = {v}[{field['name']!r}]", ind)
            self.value(field["type"], fv, ind)
        self.stack.pop()

    def array(self, items: Any, v: str, ind: int) -> None:
        x = self.var("x")
        self.check_type(v, list, "list", ind)
        self.emit(f"if {v}:", ind)
        self.length(f"len({v})", ind + 1)
        self.emit(f"for {x} in {v}:", ind + 1)
        self.value(items, x, ind + 2)
        self.emit("buf += b'\\x00'", ind)

    def map(self, values: Any, v: str, ind: int) -> None:
        k, x, b = self.var("k"), self.var("x"), self.var("b")
        self.check_type(v, dict, "dict", ind)
        self.emit(f"if {v}:", ind)
        self.length(f"len({v})", ind + 1)
        self.emit(f"for {k}, {x} in {v}.items():", ind + 1)
        self.emit(f"if type({k}) is not str: raise TypeError", ind + 2)
        self.emit(f"{b} = {k}.encode()", ind + 2)
        self.length(f"len({b})", ind + 2)
        self.emit(f"buf += {b}", ind + 2)
        self.value(values, x, ind + 2)
        self.emit("buf += b'\\x00'", ind)

    # -- unions: fastavro's write_union, decided per value type -------------------------------------------------

    def could_validate(self, branch: Any) -> tuple[type, ...]:
        schema = self.resolve(branch)
        if isinstance(schema, str):
            return _COULD_VALIDATE[schema]
        kind = schema["type"]
        found = _COULD_VALIDATE[self.resolve(kind) if kind in PRIMITIVES else kind]
        return found + _LOGICAL_SOURCES.get(logical_key(schema) or "", ())

    def union(self, branches: list[Any], v: str, ind: int) -> None:
        start = len(self.lines)
        candidates: dict[type, list[int]] = {}
        for index, branch in enumerate(branches):
            for python_type in self.could_validate(branch):
                candidates.setdefault(python_type, []).append(index)
        t = self.var("t")
        self.emit(f"{t} = type({v})", ind)
        keyword = "if"
        for python_type, indexes in candidates.items():
            if python_type is type(None):
                self.emit(f"{keyword} {v} is None:", ind)
            else:
                self.emit(f"{keyword} {t} is {self.const(python_type)}:", ind)
            keyword = "elif"
            if python_type is dict:  # fastavro reads "-type" as the name of the branch to take
                self.emit(f"if '-type' in {v}: raise TypeError", ind + 1)
            self.branch_choice(branches, indexes, python_type, v, ind + 1)
        self.emit("else: raise TypeError", ind)
        if any("wd(" in line for line in self.lines[start:]):
            # Part of a branch goes to fastavro's write_data, which does not re-check what fastavro's union
            # matching would have rejected: leave the whole union to fastavro.
            del self.lines[start:]
            self.delegate(branches, v, ind)

    def chosen(self, branches: list[Any], index: int, v: str, python_type: type, ind: int) -> None:
        self.emit(f"buf += {_VARINT[index << 1]!r}", ind)
        self.known[v] = python_type
        try:
            self.value(branches[index], v, ind)
        finally:
            del self.known[v]

    def branch_choice(self, branches: list[Any], indexes: list[int], python_type: type, v: str, ind: int) -> None:
        """Code picking, among the branches ``indexes`` that could take a value of ``python_type``, the one
        fastavro picks, and writing the value with it; raises where that needs more than a cheap test."""
        if not indexes:
            self.emit("raise TypeError", ind)
            return
        index, rest = indexes[0], indexes[1:]
        schema = self.resolve(branches[index])
        kind = schema if isinstance(schema, str) else schema["type"]
        if isinstance(schema, dict) and logical_key(schema) is not None:
            if rest:  # would take the converted value's type to tell; fastavro decides
                self.emit("raise TypeError", ind)
            else:
                self.chosen(branches, index, v, python_type, ind)
        elif kind in ("null", "boolean", "string", "bytes", "double"):
            if kind == "double" and python_type is int:
                self.emit("raise TypeError", ind)  # fastavro would write the int as a double
            else:
                self.chosen(branches, index, v, python_type, ind)
        elif kind == "float":
            if python_type is int:
                self.emit("raise TypeError", ind)
                return
            later_double = [
                i for i in range(index + 1, len(branches)) if record_type(branches[i]) == "double"
            ]  # fastavro prefers a later double for a Python float
            self.chosen(branches, later_double[0] if later_double else index, v, python_type, ind)
        elif kind in ("int", "long"):
            low, high = _INT_RANGE[kind]
            self.emit(f"if {low} <= {v} <= {high}:", ind)
            self.chosen(branches, index, v, python_type, ind + 1)
            self.emit("else:", ind)
            self.branch_choice(branches, rest, python_type, v, ind + 1)
        elif kind == "enum":
            self.emit(f"if {v} in {self.const(frozenset(schema['symbols']))}:", ind)
            self.chosen(branches, index, v, python_type, ind + 1)
            self.emit("else:", ind)
            self.branch_choice(branches, rest, python_type, v, ind + 1)
        elif kind == "fixed":
            self.emit(f"if len({v}) == {int(schema['size'])}:", ind)
            self.chosen(branches, index, v, python_type, ind + 1)
            self.emit("else:", ind)
            self.branch_choice(branches, rest, python_type, v, ind + 1)
        elif rest:  # an array, map or record branch with another candidate after it: a deep test decides
            self.emit("raise TypeError", ind)
        else:  # the last candidate: the generated code is as strict as fastavro's validator of it
            self.chosen(branches, index, v, python_type, ind)


def record_type(schema: Any) -> Any:
    """fastavro's ``extract_record_type``: the type name as the union matching compares it."""
    if isinstance(schema, dict):
        return schema["type"]
    if isinstance(schema, list):
        return "union"
    return schema


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


class DecoderGen(ReaderGen):
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
        self.options = options

    def long(self, target: str, ind: int) -> None:
        self.emit("b = data[pos]", ind)
        self.emit(f"if b < 128: {target} = (b >> 1) ^ -(b & 1); pos += 1", ind)
        self.emit("else:", ind)  # two bytes inline, longer varints in rv (the IndexError of a truncation as well)
        self.emit("c = data[pos + 1]", ind + 1)
        self.emit(f"if c < 128: n = (b & 127) | (c << 7); {target} = (n >> 1) ^ -(n & 1); pos += 2", ind + 1)
        self.emit(f"else: {target}, pos = rv(data, pos)", ind + 1)

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
        logical = logical_key(schema)
        if logical is not None and logical in LOGICAL_READERS:
            # the underlying type inline, then fastavro's own conversion (the one its reader applies)
            raw = self.var("r")
            self.value({k: v for k, v in schema.items() if k != "logicalType"}, raw, ind)
            self.emit(f"{target} = {self.const(LOGICAL_READERS[logical])}({raw}, {self.const(schema)}, None)", ind)
        elif kind == "record" or kind == "error":
            self.record(schema, target, ind)
        elif kind == "enum":
            i = self.var("i")
            symbols = self.const(tuple(schema["symbols"]))
            self.long(i, ind)
            self.emit(f"if not 0 <= {i} < {len(schema['symbols'])}: raise ValueError", ind)
            self.emit(f"{target} = {symbols}[{i}]", ind)
        elif kind == "fixed":
            self.emit(f"e = pos + {int(schema['size'])}", ind)
            self.emit("if e > end: raise ValueError", ind)
            self.emit(f"{target} = data[pos:e]; pos = e", ind)
        elif kind == "array":
            self.blocks(target, ind, False, lambda x, i: self.value(schema["items"], x, i))
        elif kind == "map":
            self.blocks(target, ind, True, lambda x, i: self.value(schema["values"], x, i))
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

    def blocks(self, target: str, ind: int, is_map: bool, read_item: Callable[[str, int], None]) -> None:
        """An array's (``is_map``: a map's) blocks into ``target``; ``read_item(var, ind)`` emits the read of one
        item (a map entry's value) into ``var``: the writer's item type here, a writer-reader pair when resolving."""
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
        read_item(x, ind + 2)
        self.emit(f"{target}[{k}] = {x}" if is_map else f"{target}.append({x})", ind + 2)

    def union(self, branches: list[Any], target: str, ind: int) -> None:
        i = self.var("i")
        self.long(i, ind)
        for index, branch in enumerate(branches):
            self.emit(f"{'if' if index == 0 else 'elif'} {i} == {index}:", ind)
            name = self.record_name(branches, branch)
            if name is None:
                self.value(branch, target, ind + 1)
            else:
                x = self.var("x")
                self.value(branch, x, ind + 1)
                self.emit(f"{target} = ({name!r}, {x})", ind + 1)
        self.emit("else: raise ValueError", ind)

    def record_name(self, branches: list[Any], branch: Any) -> str | None:
        """The name fastavro's reader pairs a union value with (``return_record_name``), or None for the value
        alone: a record branch, or a branch naming a type (which fastavro takes for a record), unless
        ``return_record_name_override`` and the union has one such branch."""
        if not self.options["return_record_name"]:
            return None
        kinds = [record_type(b) for b in branches]
        records = sum(1 for k in kinds if k == "record" or k not in _AVRO_TYPES)
        if self.options["return_record_name_override"] and records == 1:
            return None
        kind = record_type(branch)
        if kind == "record":
            return str(branch["name"])
        if kind not in _AVRO_TYPES:
            return str(self.named[branch]["name"])
        return None


def compile_decoder(
    schema: Any, named: dict[str, Any], options: dict[str, Any]
) -> Callable[[bytes, int], tuple[Any, int]]:
    """``decode(data, pos) -> (value, end position)`` for a fastavro-parsed writer ``schema``, read without a
    reader schema. Raises on anything unexpected (truncation, bad index, bad UTF-8); the caller then reads the
    record with fastavro, which gives its own result or error."""
    gen = DecoderGen(named, options)
    gen.value(schema, "out", 1)
    return decode_function(gen, "<serdes avro decoder>")


def decode_function(gen: CodeGen, filename: str) -> Callable[[bytes, int], tuple[Any, int]]:
    """The ``decode(data, pos) -> (out, pos)`` function of the lines ``gen`` emitted (which read into ``out``),
    compiled as ``filename``; its source is kept as ``decode.source`` for debugging."""
    source = "def decode(data, pos):\n    end = len(data)\n" + "\n".join(gen.lines) + "\n    return out, pos\n"
    namespace = dict(gen.consts)
    exec(compile(source, filename, "exec"), namespace)
    decode = namespace["decode"]
    decode.source = source
    return decode
