"""Avro bodies -> Arrow columns: ``avro_column_decoder`` generates, per Avro schema, a decoder that reads a batch
of bodies straight into Arrow columns, with no dict per record (the Python engine's fast path; see
``python_engine`` for when it applies, and ``serdes.avro_codegen`` for the code generation it shares).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from serdes.avro_codegen import ReaderGen

__all__ = ["Unsupported", "avro_column_decoder"]

_ARROW_PRIMITIVES: dict[str, Any] = {}  # filled lazily: pyarrow is only imported where Spark runs


def _arrow_primitive(kind: str) -> Any:
    if not _ARROW_PRIMITIVES:
        import pyarrow as pa

        _ARROW_PRIMITIVES.update(
            {
                "boolean": pa.bool_(),
                "int": pa.int32(),
                "long": pa.int64(),
                "float": pa.float32(),
                "double": pa.float64(),
                "string": pa.string(),
                "bytes": pa.binary(),
            }
        )
    return _ARROW_PRIMITIVES.get(kind)


class Unsupported(Exception):
    """The schema has a part the column decoder does not generate code for (the row-wise path reads it)."""


def _read_long(data: bytes, pos: int, b: int) -> tuple[int, int]:
    """Zig-zag varint of two or more bytes at ``pos`` (``b = data[pos]``, the one-byte case is inlined).
    Unrolled: the bytes-at-a-time loop cost as much as the rest of a record. Raises past 64 bits, like
    ``avro_codegen``'s decoder (fastavro's C reader would wrap around; the row-wise path lets it decide)."""
    n = b & 0x7F
    pos += 1
    b = data[pos]
    if b < 128:
        n |= b << 7
        return (n >> 1) ^ -(n & 1), pos + 1
    n |= (b & 0x7F) << 7
    pos += 1
    b = data[pos]
    if b < 128:
        n |= b << 14
        return (n >> 1) ^ -(n & 1), pos + 1
    n |= (b & 0x7F) << 14
    shift = 21
    while True:
        pos += 1
        b = data[pos]
        n |= (b & 0x7F) << shift
        if b < 128:
            if n >> 64:
                raise ValueError("varint does not fit 64 bits")
            return (n >> 1) ^ -(n & 1), pos + 1
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


class _ColumnGen(ReaderGen):
    """Generates ``decode(data, starts, ends) -> lists``: one pass over the rows of a batch that appends every
    leaf value to its own list (no dict per record), plus a tree saying how the lists become Arrow arrays."""

    def __init__(self, named: dict[str, Any]) -> None:
        super().__init__(named, {"rv": _read_long})
        self.lists: list[tuple[str, str]] = []  # (name, initial value)
        self.counters: list[str] = []

    def new_list(self, init: str = "[]") -> str:
        name = f"L{next(self.ids)}"
        self.lists.append((name, init))
        return name

    def long(self, target: str, ind: int) -> None:
        self.emit("b = data[pos]", ind)
        self.emit(f"if b < 128: {target} = (b >> 1) ^ -(b & 1); pos += 1", ind)
        self.emit(f"else: {target}, pos = rv(data, pos, b)", ind)

    def resolve(self, schema: Any) -> Any:
        while True:
            if isinstance(schema, str) and schema in self.named:
                if schema in self.stack:
                    raise Unsupported("recursive type")
                schema = self.named[schema]
            elif isinstance(schema, dict) and not isinstance(schema.get("type"), str):
                schema = schema["type"]
            elif (
                isinstance(schema, dict)
                and schema["type"] not in ("record", "error", "enum", "array", "map", "fixed")
                and "logicalType" not in schema
            ):
                schema = schema["type"]  # {"type": "string"}
            else:
                return schema

    def node(self, schema: Any, atype: Any, ind: int, nullable: bool) -> tuple:
        """Emit code reading one value at ``pos`` into the columns; return the spec to build its array."""
        schema = self.resolve(schema)
        if isinstance(schema, list):
            return self.union(schema, atype, ind)
        if isinstance(schema, str):
            if schema == "null" or _arrow_primitive(schema) != atype:
                raise Unsupported(schema)
            lst = self.new_list()
            if schema in ("boolean", "double", "float"):
                self.scalar(schema, f"{lst}_({{}})", ind)
            elif schema in ("int", "long"):
                self.long("x", ind)
                self.emit(f"{lst}_(x)", ind)
            else:  # string / bytes: the raw slice; strings are checked as UTF-8 when the column is built
                self.long("n", ind)
                self.emit("e = pos + n", ind)
                self.emit("if n < 0 or e > end: raise ValueError", ind)
                self.emit(f"{lst}_(data[pos:e]); pos = e", ind)
                return ("utf8" if schema == "string" else "leaf", lst, atype)
            return ("leaf", lst, atype)
        kind = schema["type"]
        if "logicalType" in schema or kind not in ("record", "error", "enum", "array"):
            raise Unsupported(kind)
        if kind == "enum":
            if atype != _arrow_primitive("string"):
                raise Unsupported("enum")
            lst = self.new_list()
            self.long("x", ind)
            self.emit(f"if not 0 <= x < {len(schema['symbols'])}: raise ValueError", ind)
            self.emit(f"{lst}_(x)", ind)
            return ("enum", lst, tuple(schema["symbols"]))
        mask = self.new_list() if nullable else None
        if mask is not None:
            self.emit(f"{mask}_(False)", ind)
        if kind == "array":
            import pyarrow as pa

            if not pa.types.is_list(atype):
                raise Unsupported("array")
            offsets = self.new_list("[0]")
            count = f"K{next(self.ids)}"
            self.counters.append(count)
            c = f"c{next(self.ids)}"
            self.emit("while True:", ind)
            self.long(c, ind + 1)
            self.emit(f"if {c} == 0: break", ind + 1)
            self.emit(f"if {c} < 0:", ind + 1)  # a block with its byte size, which we do not need
            self.emit(f"{c} = -{c}", ind + 2)
            self.long("_", ind + 2)
            # every item takes at least one byte (null items and empty records are Unsupported), so a count
            # larger than the bytes left is corrupt: checked before looping over it
            self.emit(f"if {c} > end - pos: raise ValueError", ind + 1)
            self.emit(f"{count} += {c}", ind + 1)
            self.emit(f"for _ in range({c}):", ind + 1)
            item = self.node(schema["items"], atype.value_type, ind + 2, False)
            self.emit(f"{offsets}_({count})", ind)
            return ("list", offsets, item, mask, atype)
        fields = schema.get("fields", [])
        import pyarrow as pa

        if (
            not fields
            or not pa.types.is_struct(atype)
            or atype.num_fields != len(fields)
            or [f.name for f in atype] != [f["name"] for f in fields]
        ):
            raise Unsupported("record")
        self.stack.append(schema["name"])
        children = [self.node(f["type"], atype.field(i).type, ind, False) for i, f in enumerate(fields)]
        self.stack.pop()
        return ("struct", children, mask, atype)

    def union(self, branches: list[Any], atype: Any, ind: int) -> tuple:
        others = [b for b in branches if b != "null"]
        if len(branches) != 2 or len(others) != 1:
            raise Unsupported("union")
        null_index = branches.index("null")
        i = f"i{next(self.ids)}"
        self.long(i, ind)
        self.emit(f"if {i} == {1 - null_index}:", ind)
        spec = self.node(others[0], atype, ind + 1, True)
        self.emit(f"elif {i} == {null_index}:", ind)
        self.null(spec, ind + 1)
        self.emit("else: raise ValueError", ind)
        return spec

    def null(self, spec: tuple, ind: int) -> None:
        """Append a null for ``spec`` (and placeholders under it, so every column keeps its length)."""
        kind = spec[0]
        if kind in ("leaf", "utf8", "enum"):
            self.emit(f"{spec[1]}_(None)", ind)
        elif kind == "list":
            _, offsets, _item, mask, _ = spec
            self.emit(f"{offsets}_({offsets}[-1])", ind)
            if mask is not None:
                self.emit(f"{mask}_(True)", ind)
        else:  # a struct: its fields get placeholders (nulls) too, masked or not
            _, children, mask, _ = spec
            if mask is not None:
                self.emit(f"{mask}_(True)", ind)
            for child in children:
                self.null(child, ind)


def _build_column(spec: tuple, cols: dict[str, list]) -> Any:
    import pyarrow as pa

    kind = spec[0]
    if kind == "leaf":
        return pa.array(cols[spec[1]], type=spec[2])
    if kind == "utf8":  # the cast checks the UTF-8 (fastavro's strict decode rejects the same bytes)
        return pa.array(cols[spec[1]], type=pa.binary()).cast(pa.string())
    if kind == "enum":
        return pa.array(spec[2], type=pa.string()).take(pa.array(cols[spec[1]], type=pa.int32()))
    if kind == "list":
        _, offsets, item, mask, atype = spec
        return pa.ListArray.from_arrays(
            pa.array(cols[offsets], type=pa.int32()),
            _build_column(item, cols),
            type=atype,
            mask=None if mask is None else pa.array(cols[mask], pa.bool_()),
        )
    _, children, mask, atype = spec
    return pa.StructArray.from_arrays(
        [_build_column(c, cols) for c in children],
        fields=list(atype),
        mask=None if mask is None else pa.array(cols[mask], pa.bool_()),
    )


def avro_column_decoder(schema: Any, named: dict[str, Any], arrow_type: Any) -> Callable[[bytes, list, list], Any]:
    """``decode(data, starts, ends) -> pyarrow.Array`` of ``arrow_type`` for a fastavro-parsed Avro ``schema``
    read without schema resolution, one record per ``data[starts[i]:ends[i]]`` (no frame header).

    All or nothing: it raises on anything unexpected in any row (truncation, a record not ending exactly at its
    end, a bad union or enum index, invalid UTF-8, a value that does not fit its Arrow type) and the caller then
    reads the batch row by row with fastavro, which gives each row its result or error. Raises ``Unsupported``
    at build time for schemas with logical types, fixed, maps, general unions or recursion."""
    gen = _ColumnGen(named)
    spec = gen.node(schema, arrow_type, 2, False)
    head = ["def decode(data, starts, ends):"]
    for name, init in gen.lists:
        head.append(f"    {name} = {init}; {name}_ = {name}.append")
    head += [f"    {c} = 0" for c in gen.counters]
    head.append("    for pos, end in zip(starts, ends):")
    tail = [
        "        if pos != end: raise ValueError",
        "    return {" + ", ".join(f"{n!r}: {n}" for n, _ in gen.lists) + "}",
    ]
    source = "\n".join(head + gen.lines + tail) + "\n"
    namespace = dict(gen.consts)
    exec(compile(source, "<serdes avro column decoder>", "exec"), namespace)
    columns = namespace["decode"]

    def decode(data: bytes, starts: list, ends: list) -> Any:
        return _build_column(spec, columns(data, starts, ends))

    decode.source = source  # type: ignore[attr-defined]  # for debugging
    return decode
