"""Hypothesis strategies for hostile schema texts of the three types: lone surrogates and other odd strings,
huge and deeply precise numbers, unicode and reserved names, giant enums, deep nesting, recursive types,
diamond references (through the subjects ``REFERENCES`` names) and long defaults.

Each strategy draws a registration body (``{"schema", "schemaType", "references"}``): the text may be valid
or not; what the tests check is that the registry answers it (2xx or a 4xx with a Confluent error code).
Numbers are written as raw JSON tokens (``Raw``), so that ``1e400`` or a 5000-digit integer reaches the
server's parser as written; strings are written with ``json.dumps``, so a lone surrogate arrives as the escape
``\\ud800`` inside the schema text.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st


class Raw(str):
    """A JSON token written as it is (a number the serializer must not round)."""


def to_json(value: Any) -> str:
    """``value`` as JSON text: ``Raw`` tokens as they are, strings with ASCII escapes (lone surrogates too)."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(str(k)) + ":" + to_json(v) for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    return json.dumps(value)


LONG = 200_000
ODD_STRINGS = [
    "\ud800",
    "\udfff",
    "a\udbffb",
    "\udc00\ud800",
    "😀",
    "\u0000",
    "\u202e",
    "\ufeff",
    "名前",
    "é",
    "",
    " ",
    "\\",
    '"',
    "null",
    "x" * LONG,
]
NUMBERS = [
    "0",
    "-0",
    "-0.0",
    "1e400",
    "-1e400",
    "1e-400",
    "1E+2",
    "2147483648",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551616",
    "1" * 400,
    "1" + "0" * 5000,  # past Python's default int digit limit
    "0." + "3" * 5000,
    "1.7976931348623157e309",
    "123456789.123456789e-99999",
    "4.9e-325",
]

odd_strings = st.one_of(
    st.sampled_from(ODD_STRINGS),
    st.text(st.characters(categories=["Cs", "Co", "Cn", "Lo", "Mn", "Zs", "Cc"]), max_size=8),
    st.text(max_size=12),
)
numbers = st.sampled_from(NUMBERS).map(Raw)
scalars = st.one_of(st.none(), st.booleans(), numbers, odd_strings)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(odd_strings, inner, max_size=3)),
    max_leaves=6,
) | st.sampled_from([["x"] * 50_000, {f"k{i}": i for i in range(20_000)}])
#: how deep nested parts go: within, at and past the server's default limit (128)
depths = st.sampled_from([1, 8, 60, 126, 127, 128, 129, 500, 20_000])
giant = st.sampled_from([1_000, 20_000, 60_000])

# --- subjects -------------------------------------------------------------------------------------------

#: subject names (encoded for a path by the test): a few shared ones, so hostile schemas meet earlier hostile
#: versions in compatibility checks, and odd ones
subjects = st.one_of(
    st.sampled_from(["hostile-a", "hostile-b", "hostile-c"]),
    st.sampled_from(["名前", "\ud800", "a/b", ":.ctx:x", "x" * 300, " ", "%", "..", "\u202e"]),
)

# --- Avro ---------------------------------------------------------------------------------------------------

#: the referenced subjects of each type: ``base`` and two that reference it, ``left`` and ``right`` (a diamond
#: when a schema references both); the test registers them first
REFERENCES = {
    "AVRO": {
        "base": '{"type":"record","name":"Base","namespace":"h","fields":[{"name":"a","type":"int"}]}',
        "left": '{"type":"record","name":"Left","namespace":"h","fields":[{"name":"b","type":"h.Base"}]}',
        "right": '{"type":"record","name":"Right","namespace":"h","fields":[{"name":"b","type":"h.Base"}]}',
    },
    "JSON": {
        "base": '{"type":"object","properties":{"a":{"type":"integer"}}}',
        "left": '{"type":"object","properties":{"b":{"$ref":"base.json"}}}',
        "right": '{"type":"object","properties":{"b":{"$ref":"base.json"}}}',
    },
    "PROTOBUF": {
        "base": 'syntax = "proto3";\npackage h;\nmessage Base { int32 a = 1; }\n',
        "left": 'syntax = "proto3";\npackage h;\nimport "base.proto";\nmessage Left { Base b = 1; }\n',
        "right": 'syntax = "proto3";\npackage h;\nimport "base.proto";\nmessage Right { Base b = 1; }\n',
    },
}
#: how each type names a referenced subject (Avro: the full name of its type; JSON: a URL; Protobuf: a file)
REFERENCE_NAMES = {
    "AVRO": {"base": "h.Base", "left": "h.Left", "right": "h.Right"},
    "JSON": {"base": "base.json", "left": "left.json", "right": "right.json"},
    "PROTOBUF": {"base": "base.proto", "left": "left.proto", "right": "right.proto"},
}
reference_sets = st.sampled_from([(), ("left",), ("left", "right"), ("base", "left", "right"), ("missing",)])


def references_body(schema_type: str, which: tuple[str, ...]) -> list[dict[str, Any]]:
    names = REFERENCE_NAMES[schema_type]
    return [{"name": names.get(w, "missing"), "subject": f"ref-{schema_type.lower()}-{w}", "version": 1} for w in which]


avro_names = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True),
    st.sampled_from(["名前", "é", "\ud800", "", "1a", "a.b", "a..b", ".a", "record", "int", "null", "n" * 5000]),
)
avro_primitives = st.sampled_from(["null", "boolean", "int", "long", "float", "double", "bytes", "string"])


def _avro_field(types: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"name": avro_names, "type": types},
        optional={"default": json_values, "doc": odd_strings, "order": odd_strings, "aliases": st.lists(avro_names)},
    )


def _avro_composites(types: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    named = {"name": avro_names}
    optional = {"namespace": avro_names, "doc": odd_strings, "aliases": st.lists(avro_names, max_size=2)}
    record = st.fixed_dictionaries(
        {"type": st.just("record"), **named, "fields": st.lists(_avro_field(types), max_size=4)},
        optional={**optional, "x-prop": json_values},
    )
    enum = st.fixed_dictionaries(
        {
            "type": st.just("enum"),
            **named,
            "symbols": st.one_of(st.lists(avro_names, max_size=4), giant.map(lambda n: [f"S{i}" for i in range(n)])),
        },
        optional={**optional, "default": odd_strings},
    )
    fixed = st.fixed_dictionaries({"type": st.just("fixed"), **named, "size": st.one_of(numbers, st.integers())})
    return st.one_of(
        record,
        enum,
        fixed,
        st.fixed_dictionaries({"type": st.just("array"), "items": types}),
        st.fixed_dictionaries({"type": st.just("map"), "values": types}),
        st.lists(types, min_size=1, max_size=4),  # a union
        st.fixed_dictionaries(
            {"type": avro_primitives, "logicalType": st.sampled_from(["decimal", "uuid", "date", "\ud800"])},
            optional={"precision": numbers, "scale": numbers},
        ),
    )


def _avro_deep(depth: int) -> str:
    """Arrays of arrays ``depth`` deep, as text (too deep for a recursive writer)."""
    return '{"type":"array","items":' * depth + '"int"' + "}" * depth


AVRO_RECURSIVE = {
    "type": "record",
    "name": "Node",
    "fields": [{"name": "next", "type": ["null", "Node"], "default": None}, {"name": "v", "type": "Node"}],
}
avro_types = st.recursive(
    avro_primitives | st.sampled_from(["h.Base", "h.Left", "Undefined"]), _avro_composites, max_leaves=10
)
avro_schemas = st.one_of(st.one_of(avro_types, st.just(AVRO_RECURSIVE)).map(to_json), depths.map(_avro_deep))

# --- JSON Schema --------------------------------------------------------------------------------------------

json_refs = st.sampled_from(
    [
        "#",
        "#/definitions/a",
        "#/definitions/\ud800",
        "left.json",
        "right.json",
        "base.json",
        "#/%",
        "http://[",
        "\ud800",
    ]
)
patterns = st.sampled_from(["(a+)+$", "^\ud800$", "[", "\\p{L}+", "(?=a)a", "a{99999}", "名前"]) | odd_strings


def _json_composites(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keyed = st.dictionaries(odd_strings, inner, max_size=3)
    return st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["object", "array", "string", "integer", "number", "null", "\ud800"])
            | st.lists(st.sampled_from(["string", "null", "integer"]), max_size=3),
            "properties": keyed,
            "patternProperties": st.dictionaries(patterns, inner, max_size=2),
            "items": inner,
            "definitions": keyed,
            "additionalProperties": inner,
            "allOf": st.lists(inner, max_size=3),
            "anyOf": st.lists(inner, max_size=3),
            "oneOf": st.lists(inner, max_size=3),
            "not": inner,
            "enum": st.one_of(st.lists(json_values, max_size=3), giant.map(lambda n: list(range(n)))),
            "const": json_values,
            "default": json_values,
            "required": st.lists(odd_strings, max_size=3),
            "minimum": numbers,
            "maximum": numbers,
            "multipleOf": numbers,
            "maxLength": numbers,
            "minItems": numbers,
            "pattern": patterns,
            "format": odd_strings,
            "description": odd_strings,
            "$ref": json_refs,
            "$id": odd_strings,
        },
    )


def _json_deep(depth: int) -> str:
    """Objects ``depth`` properties deep, as text."""
    return '{"type":"object","properties":{"p":' * depth + '{"type":"string"}' + "}}" * depth


json_schema_nodes = st.recursive(
    st.booleans() | st.fixed_dictionaries({"$ref": json_refs}) | st.just({"type": "string"}),
    _json_composites,
    max_leaves=10,
)
dialects = st.sampled_from(
    [
        "http://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft/2020-12/schema",
        "http://json-schema.org/draft-04/schema#",
        "\ud800",
        "urn:nothing",
    ]
)
json_schemas = st.one_of(
    json_schema_nodes,
    st.builds(
        lambda node, dialect: {"$schema": dialect, **node} if isinstance(node, dict) else node,
        json_schema_nodes,
        dialects,
    ),
    st.just({"$ref": "#", "properties": {"self": {"$ref": "#"}}}),
).map(to_json) | depths.map(_json_deep)

# --- Protobuf -----------------------------------------------------------------------------------------------


def proto_string(s: str) -> str:
    """``s`` as a .proto string literal: non-ASCII (a lone surrogate too) as ``\\u``/``\\U`` escapes."""
    out = []
    for c in s:
        o = ord(c)
        if c in '"\\':
            out.append("\\" + c)
        elif 0x20 <= o < 0x7F:
            out.append(c)
        elif o < 0x20:
            out.append(f"\\x{o:02x}")
        elif o <= 0xFFFF:
            out.append(f"\\u{o:04x}")
        else:
            out.append(f"\\U{o:08x}")
    return '"' + "".join(out) + '"'


proto_idents = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True),
    st.sampled_from(["名前", "é", "message", "int32", "1a", "a.b", "_", "n" * 5000]),
)
field_numbers = st.sampled_from(["1", "2", "0", "-1", "19000", "536870911", "536870912", "2147483648", "1" * 40])
proto_scalars = st.sampled_from(["int32", "int64", "uint64", "string", "bytes", "double", "bool", "sint32", "fixed64"])
proto_defaults = st.one_of(
    odd_strings.map(proto_string), numbers, st.sampled_from(["inf", "-nan", "0x7fffffffffffffffff"])
)


@st.composite
def proto_messages(draw: st.DrawFn, syntax: str, depth: int = 0, index: int = 0) -> str:
    """A message, hostile in its names and numbers one time in three (so some of the texts compile)."""
    hostile = draw(st.sampled_from([False, False, True]))
    name = draw(proto_idents) if hostile else f"M{depth}_{index}"
    lines = [f"message {name} {{"]
    for i in range(draw(st.integers(0, 4))):
        ftype = draw(st.one_of(proto_scalars, st.sampled_from([name, "h.Base", "h.Left", "Missing"])))
        label = draw(st.sampled_from(["", "repeated "] if syntax == "proto3" else ["optional ", "required "]))
        number = draw(field_numbers) if hostile else str(i + 1)
        field = draw(proto_idents) if hostile else f"f{i}"
        options = []
        if syntax == "proto2" and ftype in ("string", "bytes", "int64", "double") and draw(st.booleans()):
            options.append(f"default = {draw(proto_defaults)}")
        if draw(st.booleans()):
            options.append(f"json_name = {proto_string(draw(odd_strings))}")
        option_text = f" [{', '.join(options)}]" if options else ""
        lines.append(f"  {label}{ftype} {field} = {number}{option_text};")
    if draw(st.booleans()):
        count = draw(st.one_of(st.integers(1, 3), giant))
        values = " ".join(f"E{i} = {i};" for i in range(count))
        lines.append(f"  enum En{depth} {{ {values} }}")
    if depth < 2 and draw(st.booleans()):
        lines.append(draw(proto_messages(syntax, depth + 1)))
    lines.append("}")
    return "\n".join(lines)


def _proto_deep(depth: int) -> str:
    return "message M { " * depth + "int32 a = 1;" + " }" * depth


@st.composite
def proto_bodies(draw: st.DrawFn) -> tuple[str, tuple[str, ...]]:
    """A .proto text and the referenced subjects it imports (plus, sometimes, an import nothing provides)."""
    refs = draw(reference_sets)
    syntax = draw(st.sampled_from(["proto3", "proto3", "proto2", "\ud800", "proto4"]))
    head = [f"syntax = {proto_string(syntax)};"]
    if draw(st.booleans()):
        head.append(f"package {draw(st.sampled_from(['h', 'a.b.c', '名前', 'x' * 5000]))};")
    imports = [REFERENCE_NAMES["PROTOBUF"].get(w, "missing.proto") for w in refs]
    if draw(st.sampled_from([False, False, True])):
        imports.append(draw(st.sampled_from(["missing.proto", "\ud800.proto", "../etc/passwd", "/abs.proto"])))
    head.extend(f"import {proto_string(path)};" for path in imports)
    count = draw(st.integers(1, 3))
    messages = "\n".join(draw(proto_messages(syntax, 0, i)) for i in range(count))
    body = draw(st.one_of(st.just(messages), depths.map(_proto_deep)))
    # a raw lone surrogate in the text would make the JSON body invalid (a 400 tested elsewhere): not here
    comment = f"// {draw(odd_strings).encode('utf-8', 'replace').decode()}" if draw(st.booleans()) else ""
    return "\n".join([*head, body, comment]), refs


#: registration bodies of each type: (schema text, the referenced subjects it names)
BODIES = {
    "AVRO": st.tuples(avro_schemas, reference_sets),
    "JSON": st.tuples(json_schemas, reference_sets),
    "PROTOBUF": proto_bodies(),
}
