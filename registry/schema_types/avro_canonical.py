"""Java Avro's ``Schema.toString()`` (compact form), byte for byte, over our parsed Avro nodes.

Confluent stores ``schema.toString(referencedSchemas, false)`` as the schema string, so ids and dedup only
agree with a Java registry on a shared ``_schemas`` topic if we print exactly the same bytes. The rules,
taken from ``org.apache.avro.Schema#toJson`` (1.11 and 1.12 print identically):

- primitive: ``"int"``; with properties ``{"type":"int",<props in input order>}`` (``logicalType`` is a prop).
- record: ``type`` (``record`` or ``error``), ``name`` (short), ``namespace`` (only when it differs from the
  enclosing namespace; ``""`` when the record has none but the enclosing one does), ``doc``, ``fields``,
  props, ``aliases``. Fields are printed with the record's own namespace as the enclosing one.
- field: ``name``, ``type``, ``doc``, ``default``, ``order`` (only when not ascending), ``aliases`` (as
  written), then the field's props.
- enum: ``type``, ``name``, ``namespace``, ``doc``, ``symbols``, ``default``, props, ``aliases``.
- fixed: ``type``, ``name``, ``namespace``, ``doc``, ``size``, props, ``aliases``.
- array / map: ``type``, ``items`` / ``values``, props. Union: a JSON array.
- A named type already printed (or one of the *known* names: the top-level types of the referenced
  schemas) is printed as a name: short when its namespace equals the enclosing one and the short name is
  not an Avro type name, full otherwise. Aliases of a named type are shortened relative to the type's own
  namespace.
- JSON values (defaults, props) as Jackson writes a parsed tree: integers as digits, doubles with Java's
  ``Double.toString`` (``1.0``, ``1.0E-4``, ``1.0E7``), NaN/Infinity quoted, strings escaping only ``"``,
  ``\\`` and control characters (``\\n`` style where one exists, else ``\\u00XX`` upper-case); non-ASCII
  and ``/`` are written as they are, except a lone surrogate, escaped (``json_strings.py`` says why).

Digits of doubles come from Python's shortest round-trip repr, which is what Java 19+ prints; older JDKs
print a few values with extra digits (JDK-4511638), which we do not reproduce.
"""

from __future__ import annotations

import math
import struct
from decimal import Decimal
from typing import Any

from registry.schema_types.json_strings import jstr

#: every Avro ``Schema.Type`` name: a named type called like one of these is always printed in full
TYPE_NAMES = frozenset(
    [
        "record",
        "enum",
        "array",
        "map",
        "union",
        "fixed",
        "string",
        "bytes",
        "int",
        "long",
        "float",
        "double",
        "boolean",
        "null",
    ]
)
NAMED = frozenset(["record", "enum", "fixed"])


class JFloat(float):
    """A value Java holds as a 32-bit ``float`` (printed with ``Float.toString`` digits)."""


def _java_decimal_str(digits: str, exp10: int) -> str:
    """Java's Float/Double.toString layout for the decimal ``0.d1d2...dn * 10**exp10`` (d1 != 0)."""
    # scientific exponent of d1.d2d3...
    sci = exp10 - 1
    if -3 <= sci < 7:
        if sci >= 0:
            int_part = digits[: sci + 1].ljust(sci + 1, "0")
            frac = digits[sci + 1 :] or "0"
        else:
            int_part = "0"
            frac = "0" * (-sci - 1) + digits
        return f"{int_part}.{frac}"
    return f"{digits[0]}.{digits[1:] or '0'}E{sci}"


def _shortest_digits(x: float, single: bool) -> tuple[str, int]:
    """Shortest digits (no trailing zeros) and the exponent so that x = 0.digits * 10**exp."""
    if single:
        target = struct.unpack("f", struct.pack("f", x))[0]
        text = repr(target)
        for p in range(1, 10):
            cand = f"{target:.{p}g}"
            if struct.unpack("f", struct.pack("f", float(cand)))[0] == target:
                text = cand
                break
    else:
        text = repr(x)
    _sign, dig, exp = Decimal(text).as_tuple()
    stripped = "".join(map(str, dig)).lstrip("0")
    # value = 0.<stripped> * 10**exp10
    return stripped.rstrip("0") or "0", len(stripped) + int(exp)


def java_double(x: float, single: bool = False) -> str:
    """``Double.toString(x)`` (or ``Float.toString`` when ``single``) as Jackson writes it in a tree."""
    if math.isnan(x):
        return '"NaN"'
    if math.isinf(x):
        return '"Infinity"' if x > 0 else '"-Infinity"'
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    digits, exp10 = _shortest_digits(abs(x), single)
    return ("-" if x < 0 else "") + _java_decimal_str(digits, exp10)


def json_value(v: Any) -> str:
    """A parsed JSON value (dict/list/str/int/float/bool/None) printed like Jackson's ``writeTree``."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, str):
        return jstr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return java_double(v, isinstance(v, JFloat))
    if isinstance(v, dict):
        return "{" + ",".join(jstr(k) + ":" + json_value(x) for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(json_value(x) for x in v) + "]"
    raise TypeError(f"not a JSON value: {type(v).__name__}")


def split_alias(alias: str) -> tuple[str, str | None]:
    """A named type's alias as Java's ``getAliases()`` reports it, back to (name, namespace)."""
    if alias.startswith("."):
        return alias[1:], None
    dot = alias.rfind(".")
    return (alias, None) if dot < 0 else (alias[dot + 1 :], alias[:dot])


def qualified(short: str, space: str | None, enclosing: str | None) -> str:
    if space is not None and space == enclosing and short not in TYPE_NAMES:
        return short
    return short if space is None else f"{space}.{short}"


def _props(node: dict[str, Any], out: list[str]) -> None:
    for k, v in node["props"].items():
        out.append("," + jstr(k) + ":" + json_value(v))


def _write(node: dict[str, Any], ns: str | None, known: set[str], out: list[str]) -> None:
    t = node["type"]
    if t in NAMED:
        full = node["name"]
        if full in known:
            out.append(jstr(qualified(node["short"], node["space"], ns)))
            return
        known.add(full)
        out.append('{"type":' + jstr("error" if node.get("error") else t) + ',"name":' + jstr(node["short"]))
        space = node["space"]
        if space is not None:
            if space != ns:
                out.append(',"namespace":' + jstr(space))
        elif ns is not None:
            out.append(',"namespace":""')
        if node.get("doc") is not None:
            out.append(',"doc":' + jstr(node["doc"]))
        if t == "record":
            out.append(',"fields":[')
            for i, f in enumerate(node["fields"]):
                out.append(("," if i else "") + '{"name":' + jstr(f["name"]) + ',"type":')
                _write(f["type"], space, known, out)
                if f.get("doc") is not None:
                    out.append(',"doc":' + jstr(f["doc"]))
                if "default" in f:
                    out.append(',"default":' + json_value(f["default"]))
                if f["order"] != "ascending":
                    out.append(',"order":' + jstr(f["order"]))
                if f["aliases"]:
                    out.append(',"aliases":[' + ",".join(jstr(a) for a in f["aliases"]) + "]")
                _props(f, out)
                out.append("}")
            out.append("]")
        elif t == "enum":
            out.append(',"symbols":[' + ",".join(jstr(s) for s in node["symbols"]) + "]")
            if node.get("default") is not None:
                out.append(',"default":' + jstr(node["default"]))
        else:
            out.append(',"size":' + str(node["size"]))
        _props(node, out)
        if node["aliases"]:
            names = [qualified(*split_alias(a), space) for a in node["aliases"]]
            out.append(',"aliases":[' + ",".join(jstr(a) for a in names) + "]")
        out.append("}")
    elif t == "union":
        out.append("[")
        for i, b in enumerate(node["types"]):
            if i:
                out.append(",")
            _write(b, ns, known, out)
        out.append("]")
    elif t in ("array", "map"):
        key = "items" if t == "array" else "values"
        out.append('{"type":"' + t + '","' + key + '":')
        _write(node[key], ns, known, out)
        _props(node, out)
        out.append("}")
    elif node["props"]:
        out.append('{"type":' + jstr(t))
        _props(node, out)
        out.append("}")
    else:
        out.append(jstr(t))


def to_json(node: dict[str, Any], known: set[str] | frozenset[str] = frozenset()) -> str:
    """``Schema.toString(knownNames, false)``: named types in ``known`` are printed by name only."""
    out: list[str] = []
    _write(node, None, set(known), out)
    return "".join(out)
