"""Field walkers over Avro records (dicts), compiled from a fastavro-parsed schema: only the fields a rule selects
are visited, and subtrees without one are never entered. Unions pick their branch by the value, as Avro does
(the first branch the value fits); the value of a nullable field that is null is visited as a ``NULL`` field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from serdes.rules.fields import ConditionFailed, Selection, Visit, Walker

_TYPE_NAMES = {
    "null": "NULL",
    "boolean": "BOOLEAN",
    "int": "INT",
    "long": "LONG",
    "float": "FLOAT",
    "double": "DOUBLE",
    "bytes": "BYTES",
    "string": "STRING",
    "record": "RECORD",
    "enum": "ENUM",
    "array": "ARRAY",
    "map": "MAP",
    "fixed": "FIXED",
    "error": "RECORD",
}

# (value, containing record, visit) -> new value
Step = Callable[[Any, Any, Visit], Any]
# (full name, name, inline tags) of the field a type sits in
Context = tuple[str, str, tuple[str, ...]] | None


def _type_name(schema: Any, named: dict[str, Any]) -> str:
    if isinstance(schema, list):
        return "COMBINED"
    if isinstance(schema, dict):
        return (
            _type_name(schema["type"], named)
            if isinstance(schema["type"], (dict, list))
            else _TYPE_NAMES.get(schema["type"], "NULL")
        )
    if schema in _TYPE_NAMES:
        return _TYPE_NAMES[schema]
    return _type_name(named[schema], named) if schema in named else "NULL"


class _Compiler:
    def __init__(self, named: dict[str, Any], selection: Selection, condition: bool) -> None:
        self.named = named
        self.selection = selection
        self.condition = condition
        self.records: dict[str, list[Step | None]] = {}  # record name -> cell holding its step (recursion)

    def step(self, schema: Any, ctx: Context) -> Step | None:
        if isinstance(schema, list):
            return self.union(schema, ctx)
        if isinstance(schema, str):
            if schema in self.named and schema not in _TYPE_NAMES:
                return self.step(self.named[schema], ctx)
            return self.leaf(schema, ctx)
        kind = schema["type"]
        if isinstance(kind, (dict, list)):
            return self.step(kind, ctx)
        if kind in ("record", "error"):
            return self.record(schema)
        if kind == "array":
            return _each_item(self.step(schema["items"], ctx))
        if kind == "map":
            return _each_value(self.step(schema["values"], ctx))
        if kind in ("enum", "fixed"):
            return None  # not primitive: field rules skip them
        return self.leaf(kind, ctx)

    def leaf(self, type_name: str, ctx: Context) -> Step | None:
        if ctx is None:
            return None
        full_name, name, inline = ctx
        info = self.selection.field(full_name, name, _TYPE_NAMES.get(type_name, "NULL"), inline)
        if not self.selection.selects(info):
            return None
        return lambda value, containing, visit: visit(info, value, containing)

    def record(self, schema: dict[str, Any]) -> Step | None:
        name = schema["name"]
        known = self.records.get(name)
        if known is not None:  # recursive reference: the step is filled in once compiled

            def later(value: Any, containing: Any, visit: Visit) -> Any:
                step = known[0]
                return value if step is None else step(value, containing, visit)

            return later
        cell: list[Step | None] = [None]
        self.records[name] = cell
        fields = []
        for f in schema["fields"]:
            sub = self.step(f["type"], (f"{name}.{f['name']}", f["name"], tuple(f.get("confluent:tags") or ())))
            if sub is not None:
                fields.append((f["name"], sub))
        if not fields:
            return None
        cell[0] = _record_step(name, fields, self.condition)
        return cell[0]

    def union(self, branches: list[Any], ctx: Context) -> Step | None:
        steps = [(branch, self.step(branch, ctx)) for branch in branches]
        if all(s is None for _, s in steps):
            return None
        named = self.named

        def union(value: Any, containing: Any, visit: Visit) -> Any:
            for branch, sub in steps:
                if fits(value, branch, named):
                    return value if sub is None else sub(value, containing, visit)
            return value

        return union


def _record_step(record: str, fields: list[tuple[str, Step]], condition: bool) -> Step:
    if condition:

        def check(value: Any, containing: Any, visit: Visit) -> Any:
            if type(value) is dict:
                for name, sub in fields:
                    if name in value and sub(value[name], value, visit) is False:
                        raise ConditionFailed(f"{record}.{name}")
            return value

        return check

    def transform(value: Any, containing: Any, visit: Visit) -> Any:
        if type(value) is not dict:
            return value
        out = value
        for name, sub in fields:
            if name in out:
                old = out[name]
                new = sub(old, out, visit)
                if new is not old:
                    if out is value:
                        out = dict(value)  # never change the caller's record
                    out[name] = new
        return out

    return transform


def _each_item(sub: Step | None) -> Step | None:
    if sub is None:
        return None
    return lambda value, containing, visit: [sub(v, containing, visit) for v in value] if type(value) is list else value


def _each_value(sub: Step | None) -> Step | None:
    if sub is None:
        return None
    return lambda value, containing, visit: (
        {k: sub(v, containing, visit) for k, v in value.items()} if type(value) is dict else value
    )


_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


def fits(value: Any, schema: Any, named: dict[str, Any]) -> bool:
    """Whether ``value`` is a valid datum of ``schema`` (fastavro's validation rules, for union branches)."""
    if isinstance(schema, list):
        return any(fits(value, s, named) for s in schema)
    if isinstance(schema, dict):
        kind = schema["type"]
        if isinstance(kind, (dict, list)):
            return fits(value, kind, named)
    else:
        if schema in named and schema not in _TYPE_NAMES:
            return fits(value, named[schema], named)
        kind = schema
    t = type(value)
    if kind == "null":
        return value is None
    if kind == "boolean":
        return t is bool
    if kind in ("int", "long"):
        lo, hi = _INT32 if kind == "int" else _INT64
        if isinstance(schema, dict) and "logicalType" in schema:
            return value is not None  # dates and times: leave the check to the encoder
        return t is int and lo <= value <= hi
    if kind in ("float", "double"):
        return (t is float or t is int) and t is not bool
    if kind in ("string", "bytes"):
        if isinstance(schema, dict) and "logicalType" in schema:
            return value is not None
        return t is str if kind == "string" else isinstance(value, (bytes, bytearray))
    if kind == "fixed":
        return isinstance(value, (bytes, bytearray)) and len(value) == schema["size"]
    if kind == "enum":
        return t is str and value in schema["symbols"]
    if kind == "array":
        return t is list and all(fits(v, schema["items"], named) for v in value)
    if kind == "map":
        return t is dict and all(type(k) is str and fits(v, schema["values"], named) for k, v in value.items())
    if kind in ("record", "error"):
        if t is not dict:
            return False
        return all(
            fits(value[f["name"]], f["type"], named) if f["name"] in value else "default" in f for f in schema["fields"]
        )
    return False


def avro_walker(parsed: Any, named: dict[str, Any], selection: Selection, condition: bool) -> Walker | None:
    """The walker for records of ``parsed`` (fastavro-parsed; ``named`` its named types), or None when the rule
    selects no field of it."""
    step = _Compiler(named, selection, condition).step(parsed, None)
    if step is None:
        return None
    return lambda message, visit: step(message, None, visit)
