"""A generated decoder per (writer, reader) schema pair: Avro schema resolution without fastavro's per-record work.

fastavro's reader, given a reader schema, matches the two schemas again for every value it reads (``match_schemas``
at each level), builds dicts of the reader's fields for every record, and promotes values one by one. For a fixed
pair all of that can be decided once: ``compile_resolver`` generates ``decode(data, pos) -> (value, end)`` that
reads the writer's encoding and produces what fastavro's ``_read_data(writer, reader)`` returns:

- records matched by name (or the reader's aliases): the writer's fields read into the reader's fields of the
  same name or alias, in the writer's order, the others skipped; then the reader's other fields as their
  defaults (the parsed default object itself, as fastavro returns it);
- promotions: int to long, int/long to float/double (``float()``), float to double, string to bytes and back;
- enums: each writer symbol mapped once to itself, or the reader's default where the reader lacks it (or an
  error, as fastavro raises);
- unions: a writer branch goes to the first reader branch fastavro's ``match_types`` accepts (or to the reader's
  type when that is not a union), a writer type to the first reader branch it matches;
- arrays, maps and fixed, and types read as written (logical types only where both sides are the same).

Which pairs match is asked of fastavro's own ``match_schemas`` / ``match_types`` when generating (from its
pure-Python reader, ``fastavro._read_py``, the same rules as its compiled one), so the generated code accepts
what fastavro accepts. What it does not cover (recursive types, a logical type on one side only,
``return_record_name``, a named type meeting one of another kind) raises ``ValueError`` when generating, and the
deserializer keeps fastavro's resolution for that pair; at run time anything unexpected raises, and fastavro
reads that payload and gives its result or error. Checked against fastavro on random schema pairs in
``tests/serdes/test_avro_resolver.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastavro._read_py import SchemaResolutionError, match_schemas, match_types

from serdes.avro_codegen import PRIMITIVES, DecoderGen, decode_function, logical_key, record_type

__all__ = ["compile_resolver", "strip_schema"]

_NAMED_KINDS = ("record", "error", "enum", "fixed")
_BAD = object()  # an enum symbol the reader does not know and has no default for


def strip_schema(schema: Any) -> Any:
    """A parsed schema without fastavro's bookkeeping keys and docs: equal results read the same."""
    if isinstance(schema, dict):
        return {k: strip_schema(v) for k, v in schema.items() if not k.startswith("__") and k not in ("doc", "aliases")}
    if isinstance(schema, list):
        return [strip_schema(v) for v in schema]
    return schema


class _ResolverGen(DecoderGen):
    def __init__(self, w_named: dict[str, Any], r_named: dict[str, Any], options: dict[str, Any]) -> None:
        super().__init__(w_named, options)
        self.r_named = r_named
        self.both = {"writer": w_named, "reader": r_named}
        self.consts["BAD"] = _BAD
        self.pairs: list[tuple[str, str]] = []  # named pairs being generated: a repeat is a recursive type

    def definition(self, schema: Any, named: dict[str, Any]) -> Any:
        """A named type's definition for its name, ``{"type": "long"}`` as ``"long"``."""
        while True:
            if isinstance(schema, str) and schema in named:
                schema = named[schema]
            elif isinstance(schema, dict) and schema["type"] in PRIMITIVES and logical_key(schema) is None:
                schema = schema["type"]
            else:
                return schema

    def resolve(self, writer: Any, reader: Any, target: str, ind: int) -> None:
        """Code reading a value written as ``writer`` into ``target`` as fastavro reads it as ``reader``."""
        if isinstance(writer, list):
            self.writer_union(writer, reader, target, ind)
            return
        if isinstance(reader, list):
            for branch in reader:
                if match_types(writer, branch, self.both):
                    self.resolve(writer, branch, target, ind)
                    return
            raise ValueError("no reader branch matches the writer's type")  # fastavro raises for every record
        w = self.definition(writer, self.named)
        r = self.definition(reader, self.r_named)
        try:
            match_schemas(writer, reader, self.both)
        except SchemaResolutionError as e:
            raise ValueError("the writer's type does not match the reader's") from e
        if logical_key(w) is not None or logical_key(r) is not None:
            if strip_schema(w) != strip_schema(r):
                raise ValueError("a logical type on one side only, or two different ones")
            self.value(writer, target, ind)
            return
        if isinstance(w, str) or isinstance(r, str):
            self.primitive_pair(w, r, target, ind)
            return
        kind = w["type"]
        if r["type"] != kind or (kind in _NAMED_KINDS and record_type(r) != kind):
            raise ValueError(f"{kind} read as {r['type']}")
        depth = len(self.pairs)
        if kind in _NAMED_KINDS:
            pair = (w["name"], r["name"])
            if pair in self.pairs:
                raise ValueError("a type that contains itself")
            self.pairs.append(pair)
        try:
            if kind in ("record", "error"):
                self.record_pair(w, r, target, ind)
            elif kind == "enum":
                self.enum_pair(w, r, target, ind)
            elif kind == "fixed":
                self.value(w, target, ind)  # match_schemas checked the sizes
            elif kind in ("array", "map"):
                key = "items" if kind == "array" else "values"
                w_items, r_items = w[key], r[key]
                self.blocks(target, ind, kind == "map", lambda x, i: self.resolve(w_items, r_items, x, i))
            else:
                raise ValueError(f"unknown Avro type {kind!r}")
        finally:
            del self.pairs[depth:]

    def primitive_pair(self, w: Any, r: Any, target: str, ind: int) -> None:
        if not (isinstance(w, str) and isinstance(r, str)):
            raise ValueError(f"{record_type(w)} read as {record_type(r)}")
        if w == r or (w == "int" and r == "long"):  # an int is a long in Python
            self.primitive(w, target, ind)
        elif w in ("int", "long") and r in ("float", "double"):
            self.long(target, ind)
            self.emit(f"{target} = float({target})", ind)
        elif w == "float" and r == "double":
            self.primitive("float", target, ind)
        elif w == "string" and r == "bytes":
            self.blob(target, ind, decode=True)
            self.emit(f"{target} = {target}.encode()", ind)
        elif w == "bytes" and r == "string":
            self.blob(target, ind, decode=True)
        else:
            raise ValueError(f"{w} read as {r}")

    def record_pair(self, w: dict[str, Any], r: dict[str, Any], target: str, ind: int) -> None:
        by_name = {f["name"]: f for f in r["fields"]}
        by_alias = {alias: f for f in r["fields"] for alias in f.get("aliases", [])}
        read: list[tuple[str, str]] = []
        for field in w["fields"]:
            mine = by_name.get(field["name"], by_alias.get(field["name"]))
            if mine is None:
                self.value(field["type"], self.var("skip"), ind)  # read and dropped, as fastavro skips it
                continue
            if any(name == mine["name"] for name, _ in read):
                raise ValueError(f"two writer fields read into {mine['name']!r}")
            v = self.var("v")
            self.resolve(field["type"], mine["type"], v, ind)
            read.append((mine["name"], v))
        entries = [f"{name!r}: {v}" for name, v in read]
        for field in r["fields"]:
            if any(name == field["name"] for name, _ in read):
                continue
            if "default" not in field:
                raise ValueError(f"no default for the reader's field {field['name']!r}")
            entries.append(f"{field['name']!r}: {self.const(field['default'])}")
        self.emit(f"{target} = {{{', '.join(entries)}}}", ind)

    def enum_pair(self, w: dict[str, Any], r: dict[str, Any], target: str, ind: int) -> None:
        known = set(r["symbols"])
        default = r.get("default")
        symbols = tuple(s if s in known else (default if default else _BAD) for s in w["symbols"])
        i = self.var("i")
        self.long(i, ind)
        self.emit(f"if not 0 <= {i} < {len(symbols)}: raise ValueError", ind)
        self.emit(f"{target} = {self.const(symbols)}[{i}]", ind)
        if _BAD in symbols:
            self.emit(f"if {target} is BAD: raise ValueError", ind)

    def writer_union(self, branches: list[Any], reader: Any, target: str, ind: int) -> None:
        i = self.var("i")
        self.long(i, ind)
        for index, branch in enumerate(branches):
            self.emit(f"{'if' if index == 0 else 'elif'} {i} == {index}:", ind)
            choices = reader if isinstance(reader, list) else [reader]
            chosen = next((c for c in choices if match_types(branch, c, self.both)), None)
            if chosen is None:
                self.emit("raise ValueError", ind + 1)  # fastavro raises for a value of this branch
                continue
            start, stack = len(self.lines), list(self.stack)
            try:
                self.resolve(branch, chosen, target, ind + 1)
            except ValueError:
                del self.lines[start:]
                self.stack[:] = stack
                self.emit("raise ValueError", ind + 1)  # fastavro decides values of this branch
        self.emit("else: raise ValueError", ind)


def compile_resolver(
    writer: Any, w_named: dict[str, Any], reader: Any, r_named: dict[str, Any], options: dict[str, Any]
) -> Callable[[bytes, int], tuple[Any, int]]:
    """``decode(data, pos) -> (value, end position)`` reading data written with the fastavro-parsed ``writer`` as
    the parsed ``reader`` (``w_named`` / ``r_named``: their named types). Raises ``ValueError`` for a pair it does
    not cover; the generated function raises on anything unexpected (the caller then reads with fastavro)."""
    if options["return_record_name"] or options.get("return_named_type"):
        raise ValueError("union values named by their branch: left to fastavro")
    gen = _ResolverGen(w_named, r_named, options)
    gen.resolve(writer, reader, "out", 1)
    if any("rd(" in line for line in gen.lines):
        raise ValueError("part of the pair would be read by fastavro without the reader schema")
    return decode_function(gen, "<serdes avro resolver>")
