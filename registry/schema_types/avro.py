"""The Avro schema type: parse and validate like Java Avro's ``Schema.Parser``, print like ``toString()``.

Parsed form (``ParsedSchema.parsed``, consumed by ``compat/avro.py``): plain dicts, one per schema node,
with every name resolved. A named type used twice is the *same* dict, so recursive schemas are cyclic
graphs and compatibility can memoize on node identity.

- primitive ``{"type": "int", "props": {...}}`` (``logicalType``, ``precision``... stay in ``props``)
- ``{"type": "record", "name": full, "short": name, "space": ns|None, "doc", "error": bool,
  "fields": [field...], "aliases": [full...], "props"}``; field ``{"name", "type": node, "doc",
  "default" (present only when given), "order", "aliases", "props"}``
- ``{"type": "enum", ..., "symbols": [...], "default": symbol|None}``, ``{"type": "fixed", ..., "size"}``
- ``{"type": "array", "items": node, "props"}``, ``{"type": "map", "values": node, "props"}``,
  ``{"type": "union", "types": [node...]}``

Validation follows Java Avro 1.11 with name and default validation on (Confluent validates defaults of
new schemas; pass ``validate_defaults=False`` to read back stored schemas that predate that): names are
identifiers, named types may not be redefined nor named after primitives, unknown names are errors,
enum symbols are valid and unique and the enum default is a symbol, a fixed size is an int, a field
default must match the field type (for a union: its first branch), unions hold no nested unions or
duplicates. Namespaces are not validated character by character, like Java. Invalid logical types are
kept as plain properties, as Java ignores them. Error texts are Java's ``SchemaParseException`` texts.

References: each referenced schema is parsed first (depth first, deduplicated by reference name) into
the same name table; the canonical string prints the referenced *top-level* types by name only, as
Confluent's ``AvroSchema.canonicalString()`` does with ``toString(referencedSchemas, false)``.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from typing import Any, TypeGuard

from compat import avro as avro_compat
from compat.levels import CompatibilityPolicy
from compat.result import Incompatibility
from registry.schema_types.avro_canonical import (
    NAMED,
    JFloat,
    json_value,
    jstr,
    split_alias,
    to_json,
)
from registry.schema_types.base import (
    InvalidSchemaError,
    ParsedSchema,
    ResolvedReference,
    SchemaType,
    sorted_references,
)

PRIMITIVES = frozenset(["string", "bytes", "int", "long", "float", "double", "boolean", "null"])
SCHEMA_RESERVED = frozenset(
    ["doc", "fields", "items", "name", "namespace", "size", "symbols", "values", "type", "aliases"]
)
ENUM_RESERVED = SCHEMA_RESERVED | {"default"}
FIELD_RESERVED = frozenset(["default", "doc", "name", "order", "type", "aliases"])
_ORDERS = {"ASCENDING": "ascending", "DESCENDING": "descending", "IGNORE": "ignore"}
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_BARE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
# one way to read each digit run (``\d+\.?\d*`` would try every split of a long run: quadratic)
_JAVA_DOUBLE = re.compile(r"^[+-]?(NaN|Infinity|(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?)[fFdD]?$")


def _is_letter(c: str) -> bool:
    return unicodedata.category(c) in ("Lu", "Ll", "Lt", "Lm", "Lo")


def validate_name(name: Any) -> str:
    """Java's ``Schema.validateName``: a letter or ``_`` first, then letters, digits or ``_``."""
    if name is None:
        raise InvalidSchemaError("Null name")
    if not name:
        raise InvalidSchemaError("Empty name")
    if not (_is_letter(name[0]) or name[0] == "_"):
        raise InvalidSchemaError(f"Illegal initial character: {name}")
    for c in name[1:]:
        if not (_is_letter(c) or unicodedata.category(c) == "Nd" or c == "_"):
            raise InvalidSchemaError(f"Illegal character in: {name}")
    return name


def make_name(name: str, space: str | None) -> tuple[str, str | None, str]:
    """Java's ``Schema.Name``: (short, namespace, full); a dotted name brings its own namespace."""
    dot = name.rfind(".")
    if dot >= 0:
        space, name = name[:dot], name[dot + 1 :]
    validate_name(name)
    if space == "":
        space = None
    return name, space, (name if space is None else f"{space}.{name}")


def _text(obj: dict[str, Any], key: str) -> str | None:
    """Jackson's ``get(key).textValue()``: the value when it is a string, else None."""
    v = obj.get(key)
    return v if isinstance(v, str) else None


def _is_int(v: Any, lo: int, hi: int) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


def valid_default(node: dict[str, Any], v: Any, missing: bool = False) -> bool:
    """Java Avro 1.11 ``Schema.isValidDefault`` (a union default must match the first branch)."""
    if missing:
        return False
    t = node["type"]
    if t in ("string", "bytes", "enum", "fixed"):
        return isinstance(v, str)
    if t == "int":
        return _is_int(v, _INT_MIN, _INT_MAX)
    if t == "long":
        return _is_int(v, _LONG_MIN, _LONG_MAX)
    if t in ("float", "double"):
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "boolean":
        return isinstance(v, bool)
    if t == "null":
        return v is None
    if t == "array":
        return isinstance(v, list) and all(valid_default(node["items"], x) for x in v)
    if t == "map":
        return isinstance(v, dict) and all(valid_default(node["values"], x) for x in v.values())
    if t == "union":
        return bool(node["types"]) and valid_default(node["types"][0], v)
    if t == "record":
        if not isinstance(v, dict):
            return False
        for f in node["fields"]:
            if f["name"] in v:
                ok = valid_default(f["type"], v[f["name"]])
            else:
                ok = valid_default(f["type"], f.get("default"), missing="default" not in f)
            if not ok:
                return False
        return True
    return False


def _java_type(node: dict[str, Any]) -> str:
    return node["type"].upper()


def load_json(text: str) -> Any:
    """The schema text as JSON (Jackson with comments allowed; a bare name is taken as a string)."""
    try:
        try:
            return json.loads(text, parse_constant=_reject_constant)
        except json.JSONDecodeError as e:
            stripped = text.strip()
            if _BARE_NAME.match(stripped):
                return stripped
            if "/*" in text or "//" in text:
                try:
                    return json.loads(_strip_comments(text), parse_constant=_reject_constant)
                except json.JSONDecodeError:
                    pass
            raise InvalidSchemaError(f"Invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except ValueError as e:  # an integer longer than Python converts (sys.get_int_max_str_digits)
        raise InvalidSchemaError(f"Invalid JSON: {e}") from None


def _reject_constant(name: str) -> Any:
    raise InvalidSchemaError(f"Non-standard token '{name}': JSON numbers cannot be NaN or Infinity")


def _strip_comments(text: str) -> str:
    """Drop ``//`` and ``/* */`` comments outside strings (Jackson's ALLOW_COMMENTS)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


class AvroParser:
    """One name table shared by the referenced schemas and the main schema, as Java's ``Schema.Parser``."""

    def __init__(self, validate_defaults: bool = True) -> None:
        self.names: dict[str, dict[str, Any]] = {}
        self.validate_defaults = validate_defaults
        self._defined: list[str] = []

    def parse(self, text: str) -> tuple[dict[str, Any], list[str]]:
        """Parse one schema document; returns its root node and the full names it defined, in order."""
        self._defined = []
        root = self.node(load_json(text), None)
        return root, self._defined

    # -- names -----------------------------------------------------------------------------------
    def lookup(self, name: str, space: str | None) -> dict[str, Any] | None:
        if name in PRIMITIVES:
            return {"type": name, "props": {}}
        _short, _space, full = make_name(name, space)
        found = self.names.get(full)
        if found is None and "." not in name:
            found = self.names.get(name)  # not in the enclosing namespace: try the null namespace
        return found

    def _register(self, node: dict[str, Any]) -> None:
        full = node["name"]
        if full in self.names:
            raise InvalidSchemaError(f"Can't redefine: {full}")
        self.names[full] = node
        self._defined.append(full)

    def _named(self, j: dict[str, Any], space: str | None, t: str) -> dict[str, Any]:
        ns = _text(j, "namespace")
        if ns is None:
            ns = space
        name = _text(j, "name")
        if name is None:
            raise InvalidSchemaError(f"No name in schema: {json_value(j)}")
        short, ns, full = make_name(name, ns)
        if full in PRIMITIVES:
            raise InvalidSchemaError(f"Schemas may not be named after primitives: {full}")
        return {
            "type": t,
            "name": full,
            "short": short,
            "space": ns,
            "doc": _text(j, "doc"),
            "aliases": [],
            "props": {},
        }

    def _aliases(self, j: dict[str, Any]) -> list[str] | None:
        if "aliases" not in j:
            return None
        a = j["aliases"]
        if not isinstance(a, list):
            raise InvalidSchemaError(f"aliases not an array: {json_value(j)}")
        out: list[str] = []
        for x in a:
            if not isinstance(x, str):
                raise InvalidSchemaError(f"alias not a string: {json_value(x)}")
            if x not in out:
                out.append(x)
        return out

    def _type_aliases(self, node: dict[str, Any], j: dict[str, Any]) -> None:
        """Named-type aliases, reported like Java's ``getAliases()`` (resolved in the type's namespace)."""
        for a in self._aliases(j) or ():
            short, space, full = make_name(a, node["space"])
            shown = "." + short if space is None and node["space"] is not None else full
            if shown not in node["aliases"]:
                node["aliases"].append(shown)

    @staticmethod
    def _props(node: dict[str, Any], j: dict[str, Any], reserved: frozenset[str]) -> None:
        node["props"] = {k: v for k, v in j.items() if k not in reserved}

    # -- nodes -----------------------------------------------------------------------------------
    def node(self, j: Any, space: str | None) -> dict[str, Any]:
        if isinstance(j, str):
            found = self.lookup(j, space)
            if found is None:
                raise InvalidSchemaError(f"Undefined name: {jstr(j)}")
            return found
        if isinstance(j, list):
            return self._union(j, space)
        if not isinstance(j, dict):
            raise InvalidSchemaError(f"Schema not yet supported: {json_value(j)}")
        t = _text(j, "type")
        if t is None:
            raise InvalidSchemaError(f"No type: {json_value(j)}")
        if t in PRIMITIVES:
            node: dict[str, Any] = {"type": t}
            self._props(node, j, SCHEMA_RESERVED)
            return node
        if t in ("record", "error"):
            return self._record(j, space, t == "error")
        if t == "enum":
            return self._enum(j, space)
        if t in ("array", "map"):
            key = "items" if t == "array" else "values"
            if key not in j:
                what = "Array has no items type" if t == "array" else "Map has no values type"
                raise InvalidSchemaError(f"{what}: {json_value(j)}")
            node = {"type": t, key: self.node(j[key], space)}
            self._props(node, j, SCHEMA_RESERVED)
            return node
        if t == "fixed":
            return self._fixed(j, space)
        # {"type": "SomeName"}: a reference to a defined type in the current namespace
        _short, _space, full = make_name(t, space)
        if full in self.names:
            return self.names[full]
        raise InvalidSchemaError(f"Type not supported: {t}")

    def _union(self, j: list[Any], space: str | None) -> dict[str, Any]:
        types = [self.node(x, space) for x in j]
        node = {"type": "union", "types": types}
        seen: set[str] = set()
        for b in types:
            if b["type"] == "union":
                raise InvalidSchemaError(f"Nested union: {to_json(node)}")
            key = b["name"] if b["type"] in NAMED else b["type"]
            if key in seen:
                raise InvalidSchemaError(f"Duplicate in union:{key}")
            seen.add(key)
        return node

    def _record(self, j: dict[str, Any], space: str | None, error: bool) -> dict[str, Any]:
        node = self._named(j, space, "record")
        node["error"] = error
        node["fields"] = []
        self._register(node)  # before the fields: a record may refer to itself
        fields_json = j.get("fields")
        if not isinstance(fields_json, list):
            raise InvalidSchemaError(f"Record has no fields: {json_value(j)}")
        fields: list[dict[str, Any]] = []
        by_name: dict[str, int] = {}
        for fj in fields_json:
            f = self._field(fj, node["space"])
            if f["name"] in by_name:
                other = fields[by_name[f["name"]]]
                raise InvalidSchemaError(
                    f"Duplicate field {f['name']} in record {node['name']}: {f['name']} type:"
                    f"{_java_type(f['type'])} pos:{len(fields)} and {other['name']} type:"
                    f"{_java_type(other['type'])} pos:{by_name[f['name']]}."
                )
            by_name[f["name"]] = len(fields)
            fields.append(f)
        node["fields"] = fields
        self._props(node, j, SCHEMA_RESERVED)
        self._type_aliases(node, j)
        return node

    def _field(self, fj: Any, space: str | None) -> dict[str, Any]:
        fj = fj if isinstance(fj, dict) else {}
        name = _text(fj, "name")
        if name is None:
            raise InvalidSchemaError(f"No field name: {json_value(fj)}")
        if "type" not in fj:
            raise InvalidSchemaError(f"No field type: {json_value(fj)}")
        tj = fj["type"]
        if isinstance(tj, str) and self.lookup(tj, space) is None:
            raise InvalidSchemaError(
                f'{jstr(tj)} is not a defined name. The type of the "{name}" field must be a defined '
                'name or a {"type": ...} expression.'
            )
        ftype = self.node(tj, space)
        order = "ascending"
        if "order" in fj:
            o = fj["order"]
            if not isinstance(o, str) or o.upper() not in _ORDERS:
                raise InvalidSchemaError(
                    f"No enum constant org.apache.avro.Schema.Field.Order.{str(o).upper()} (field {name})"
                )
            order = _ORDERS[o.upper()]
        validate_name(name)
        f: dict[str, Any] = {"name": name, "type": ftype, "doc": _text(fj, "doc"), "order": order}
        if "default" in fj:
            d = fj["default"]
            if ftype["type"] in ("float", "double") and isinstance(d, str):
                d = _java_parse_double(d, name)
            if self.validate_defaults and not valid_default(ftype, d):
                raise InvalidSchemaError(f"Invalid default for field {name}: {json_value(d)} not a {to_json(ftype)}")
            f["default"] = d
        self._props(f, fj, FIELD_RESERVED)
        f["aliases"] = self._aliases(fj) or []
        return f

    def _enum(self, j: dict[str, Any], space: str | None) -> dict[str, Any]:
        node = self._named(j, space, "enum")
        sj = j.get("symbols")
        if not isinstance(sj, list):
            raise InvalidSchemaError(f"Enum has no symbols: {json_value(j)}")
        symbols: list[str] = []
        seen: set[str] = set()  # a set, not the list: 60,000 symbols took 20 s checked against a list
        for s in sj:
            validate_name(s if isinstance(s, str) else None)
            if s in seen:
                raise InvalidSchemaError(f"Duplicate enum symbol: {s}")
            seen.add(s)
            symbols.append(s)
        default = _text(j, "default")
        if default is not None and default not in seen:
            raise InvalidSchemaError(
                f"The Enum Default: {default} is not in the enum symbol set: [{', '.join(symbols)}]"
            )
        node["symbols"] = symbols
        node["default"] = default
        self._register(node)
        self._props(node, j, ENUM_RESERVED)
        self._type_aliases(node, j)
        return node

    def _fixed(self, j: dict[str, Any], space: str | None) -> dict[str, Any]:
        node = self._named(j, space, "fixed")
        size = j.get("size")
        if not _is_int(size, _INT_MIN, _INT_MAX):
            raise InvalidSchemaError(f"Invalid or no size: {json_value(j)}")
        if size < 0:
            raise InvalidSchemaError(f"Invalid fixed size {size} for {node['name']}: must not be negative")
        node["size"] = size
        self._register(node)
        self._props(node, j, SCHEMA_RESERVED)
        self._type_aliases(node, j)
        return node


def _java_parse_double(text: str, field: str) -> float:
    """``Double.parseDouble`` for a textual float/double default (Java converts those to numbers)."""
    s = text.strip()
    if not _JAVA_DOUBLE.match(s):
        raise InvalidSchemaError(f'Invalid default for field {field}: "{text}" is not a number')
    s = s.rstrip("fFdD")
    if s.endswith("NaN"):
        return math.nan
    if s.endswith("Infinity"):
        return -math.inf if s.startswith("-") else math.inf
    return float(s)


def flatten_references(references: tuple[ResolvedReference, ...]) -> list[ResolvedReference]:
    """Referenced schemas in parse order: each one's own references first, deduplicated by name."""
    out: dict[str, ResolvedReference] = {}

    def visit(refs: tuple[ResolvedReference, ...], depth: int) -> None:
        if depth > 100:
            raise InvalidSchemaError("References nest more than 100 levels deep (a reference cycle?)")
        for r in refs:
            if r.name in out:
                continue
            visit(r.references, depth + 1)
            out.setdefault(r.name, r)

    visit(references, 0)
    return list(out.values())


class AvroType(SchemaType):
    name = "AVRO"

    def parse(
        self,
        schema: str,
        references: tuple[ResolvedReference, ...] = (),
        *,
        validate_defaults: bool = True,
    ) -> ParsedSchema:
        root, _defined, _known, canonical = self._parse(schema, references, validate_defaults)
        return ParsedSchema("AVRO", canonical, tuple(references), root, tuple(_defined))

    def parse_stored(self, schema: str, references: tuple[ResolvedReference, ...] = ()) -> ParsedSchema:
        return self.parse(schema, references, validate_defaults=False)

    @staticmethod
    def _parse(
        schema: str, references: tuple[ResolvedReference, ...], validate_defaults: bool
    ) -> tuple[dict[str, Any], list[str], list[str], str]:
        parser = AvroParser(validate_defaults)
        known: list[str] = []
        for ref in flatten_references(tuple(references)):
            try:
                ref_root, _ = parser.parse(ref.schema)
            except InvalidSchemaError as e:
                raise InvalidSchemaError(
                    f"Invalid referenced schema {ref.name} (subject {ref.subject}, version {ref.version}): {e}"
                ) from None
            if ref_root["type"] in NAMED:
                known.append(ref_root["name"])
        root, defined = parser.parse(schema)
        return root, defined, known, to_json(root, frozenset(known))

    def normalize(self, parsed: ParsedSchema) -> ParsedSchema:
        """Confluent's ``AvroSchema.normalize()``: ``AvroSchemaUtils.toNormalizedString`` re-parsed.

        That string is Avro's Parsing Canonical Form extended with what PCF drops: named types get their
        full name and ``type`` first, then ``symbols`` / ``size`` (with the logical type) / ``fields``;
        each field ``name``, ``type``, ``order`` (always, upper case), ``doc``, ``aliases`` (sorted),
        ``default`` (converted through the field's type, union: first branch), then its props sorted by
        key; a named type's non-empty ``doc``, sorted ``aliases`` and enum ``default`` come next, then its
        props sorted by key; a primitive with a valid logical type prints ``logicalType`` (and decimal
        ``precision`` / non-zero ``scale``) first. Referenced top-level types are printed by full name.
        The result is parsed again and printed canonically, so ``order`` ascending disappears, duplicated
        keys collapse, and names are shortened again. References are sorted and deduplicated.
        """
        _root, _d, known, _c = self._parse_for(parsed)
        text = normalized_string(parsed.parsed, known)
        return self.parse(text, sorted_references(parsed.references), validate_defaults=False)

    def _parse_for(self, parsed: ParsedSchema) -> tuple[dict[str, Any], list[str], list[str], str]:
        return self._parse(parsed.canonical, parsed.references, False)

    def check(
        self, reader: ParsedSchema, writer: ParsedSchema, policy: CompatibilityPolicy = CompatibilityPolicy.STRICT
    ) -> list[Incompatibility]:
        return avro_compat.check(reader.parsed, writer.parsed, policy)

    def format(self, parsed: ParsedSchema, fmt: str) -> str | None:
        """``resolved``: referenced types inlined (Java ``toString()``); ``default``: the canonical string."""
        f = fmt.strip().lower()
        if f == "resolved":
            return to_json(parsed.parsed)
        if f in ("", "default"):
            return parsed.canonical
        return None


# -- normalization (Confluent AvroSchemaUtils.toNormalizedString) ------------------------------------

_LOGICAL_BASE = {
    "date": ("int",),
    "time-millis": ("int",),
    "time-micros": ("long",),
    "timestamp-millis": ("long",),
    "timestamp-micros": ("long",),
    "timestamp-nanos": ("long",),
    "local-timestamp-millis": ("long",),
    "local-timestamp-micros": ("long",),
    "local-timestamp-nanos": ("long",),
    "uuid": ("string", "fixed"),
    "duration": ("fixed",),
    "decimal": ("bytes", "fixed"),
    "big-decimal": ("bytes",),
}


def logical_type(node: dict[str, Any]) -> tuple[str, int, int] | None:
    """The logical type Java would accept on this node (name, precision, scale), or None if invalid/absent."""
    lt = node.get("props", {}).get("logicalType")
    if not isinstance(lt, str) or lt not in _LOGICAL_BASE or node["type"] not in _LOGICAL_BASE[lt]:
        return None
    if lt == "duration" and node["size"] != 12:
        return None
    if lt == "uuid" and node["type"] == "fixed" and node["size"] != 16:
        return None
    if lt != "decimal":
        return lt, 0, 0
    p, s = node["props"].get("precision"), node["props"].get("scale", 0)
    if not (_is_int(p, _INT_MIN, _INT_MAX) and _is_int(s, _INT_MIN, _INT_MAX)):
        return None
    if p <= 0 or s < 0 or s > p:
        return None
    if node["type"] == "fixed" and p > len(str(2 ** (8 * node["size"] - 1) - 1)) - 1:
        return None
    return lt, p, s


def _logical_props(lt: tuple[str, int, int]) -> str:
    out = ',"logicalType":' + jstr(lt[0])
    if lt[0] == "decimal":
        out += f',"precision":{lt[1]}'
        if lt[2]:
            out += f',"scale":{lt[2]}'
    return out


def _sorted_props(props: dict[str, Any]) -> str:
    return "".join("," + jstr(k) + ":" + json_value(props[k]) for k in sorted(props))


def _default_object(v: Any, node: dict[str, Any] | None) -> Any:
    """Java ``JacksonUtils.toObject(default, schema)`` then back to JSON; ``_DROP`` where Java gets null."""
    if node is not None and node["type"] == "union":
        node = node["types"][0] if node["types"] else None
    node = node or {}  # no schema: Java converts by the value's own type
    t = node.get("type")
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int):
        if t is None or t in ("int", "long"):
            return v if _LONG_MIN <= v <= _LONG_MAX else _DROP
        if t == "float":
            return JFloat(v)
        if t == "double":
            return float(v)
        return _DROP
    if isinstance(v, float):
        if t is None or t == "double":
            return v
        return JFloat(v) if t == "float" else _DROP
    if isinstance(v, str):
        if t in (None, "string", "enum"):
            return v
        if t in ("bytes", "fixed"):
            return v.encode("latin-1", errors="replace").decode("latin-1")
        return _DROP
    if isinstance(v, list):
        items = node["items"] if t == "array" else None
        return [_default_object(x, items) for x in v]
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            sub = None
            if t == "map":
                sub = node["values"]
            elif t == "record":
                sub = next((f["type"] for f in node["fields"] if f["name"] == k), None)
            out[k] = _default_object(x, sub)
        return out
    return _DROP


_DROP = object()


def normalized_string(root: dict[str, Any], known: list[str]) -> str:
    env = {n: jstr(n) for n in known}
    out: list[str] = []

    def build(s: dict[str, Any]) -> None:
        t = s["type"]
        if t == "union":
            out.append("[")
            for i, b in enumerate(s["types"]):
                if i:
                    out.append(",")
                build(b)
            out.append("]")
        elif t in ("array", "map"):
            key = "items" if t == "array" else "values"
            out.append('{"type":"' + t + '","' + key + '":')
            build(s[key])
            out.append(_sorted_props(s["props"]) + "}")
        elif t in NAMED:
            name = s["name"]
            if name in env:
                out.append(env[name])
                return
            env[name] = jstr(name)
            out.append('{"name":' + jstr(name) + ',"type":"' + t + '"')
            if t == "enum":
                out.append(',"symbols":[' + ",".join(jstr(x) for x in s["symbols"]) + "]")
            elif t == "fixed":
                out.append(f',"size":{s["size"]}')
                lt = logical_type(s)
                if lt is not None:
                    out.append(_logical_props(lt))
            else:
                out.append(',"fields":[')
                for i, f in enumerate(s["fields"]):
                    out.append(("," if i else "") + '{"name":' + jstr(f["name"]) + ',"type":')
                    build(f["type"])
                    out.append(',"order":"' + f["order"].upper() + '"')
                    if f.get("doc") is not None:
                        out.append(',"doc":' + jstr(f["doc"]))
                    if f["aliases"]:
                        out.append(',"aliases":' + json_value(sorted(f["aliases"])))
                    if "default" in f:
                        d = _default_object(f["default"], f["type"])
                        if d is not _DROP and not _contains_drop(d):
                            out.append(',"default":' + json_value(d))
                    out.append(_sorted_props(f["props"]) + "}")
                out.append("]")
            if s.get("doc"):
                out.append(',"doc":' + jstr(s["doc"]))
            if s["aliases"]:
                out.append(',"aliases":' + json_value(sorted(s["aliases"])))
            if t == "enum" and s.get("default") is not None:
                out.append(',"default":' + jstr(s["default"]))
            out.append(_sorted_props(s["props"]) + "}")
        else:
            lt = logical_type(s)
            if lt is not None:
                out.append('{"type":"' + t + '"' + _logical_props(lt) + _sorted_props(s["props"]) + "}")
            elif s["props"]:
                out.append('{"type":"' + t + '"' + _sorted_props(s["props"]) + "}")
            else:
                out.append(jstr(t))

    build(root)
    return "".join(out)


def _contains_drop(v: Any) -> bool:
    if v is _DROP:
        return True
    if isinstance(v, list):
        return any(_contains_drop(x) for x in v)
    if isinstance(v, dict):
        return any(_contains_drop(x) for x in v.values())
    return False


__all__ = ["AvroParser", "AvroType", "split_alias"]
