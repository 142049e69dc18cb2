"""The Avro plug-in: Java-identical canonical strings, Java-like validation, references, normalize, resolved."""

from __future__ import annotations

import pytest

from registry.schema_types.avro import AvroType
from registry.schema_types.base import InvalidSchemaError, ResolvedReference

AVRO = AvroType()

# (schema as a user might send it, the exact string Java's Schema.toString() prints)
CANONICAL = [
    ("bare primitive", '"int"', '"int"'),
    ("primitive object without props", '{"type": "string"}', '"string"'),
    ("bare name for a primitive (not JSON)", "long", '"long"'),
    ("primitive with logical type", '{"type":"int","logicalType":"date"}', '{"type":"int","logicalType":"date"}'),
    (
        "decimal keeps its props in input order",
        '{"scale": 2, "type": "bytes", "precision": 4, "logicalType": "decimal"}',
        '{"type":"bytes","scale":2,"precision":4,"logicalType":"decimal"}',
    ),
    (
        "invalid logical type is kept as a property",
        '{"type":"string","logicalType":"date"}',
        '{"type":"string","logicalType":"date"}',
    ),
    (
        "whitespace removed, attribute order fixed",
        '{ "fields": [ {"type": "int", "name": "a"} ], "name": "R", "type": "record" }',
        '{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}',
    ),
    (
        "namespace printed after name; doc after namespace",
        '{"namespace":"com.x","doc":"d","type":"record","name":"R","fields":[]}',
        '{"type":"record","name":"R","namespace":"com.x","doc":"d","fields":[]}',
    ),
    (
        "dotted name carries the namespace",
        '{"type":"record","name":"com.x.R","namespace":"ignored","fields":[]}',
        '{"type":"record","name":"R","namespace":"com.x","fields":[]}',
    ),
    (
        "nested record inherits the namespace (not printed)",
        '{"type":"record","name":"R","namespace":"n","fields":[{"name":"s","type":'
        '{"type":"record","name":"S","fields":[{"name":"i","type":"int"}]}}]}',
        '{"type":"record","name":"R","namespace":"n","fields":[{"name":"s","type":'
        '{"type":"record","name":"S","fields":[{"name":"i","type":"int"}]}}]}',
    ),
    (
        "nested record overriding the namespace",
        '{"type":"record","name":"R","namespace":"n","fields":[{"name":"s","type":'
        '{"type":"record","name":"S","namespace":"m","fields":[]}},{"name":"t","type":"m.S"}]}',
        '{"type":"record","name":"R","namespace":"n","fields":[{"name":"s","type":'
        '{"type":"record","name":"S","namespace":"m","fields":[]}},{"name":"t","type":"m.S"}]}',
    ),
    (
        "nested type in the null namespace inside a namespaced record",
        '{"type":"record","name":"R","namespace":"n","fields":[{"name":"s","type":'
        '{"type":"fixed","name":"F","namespace":"","size":2}}]}',
        '{"type":"record","name":"R","namespace":"n","fields":[{"name":"s","type":'
        '{"type":"fixed","name":"F","namespace":"","size":2}}]}',
    ),
    (
        "second use is a short name in the same namespace",
        '{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":'
        '{"type":"enum","name":"E","symbols":["X"]}},{"name":"b","type":"n.E"}]}',
        '{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":'
        '{"type":"enum","name":"E","symbols":["X"]}},{"name":"b","type":"E"}]}',
    ),
    (
        "recursive record refers to itself by name",
        '{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"],"default":null}]}',
        '{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"],"default":null}]}',
    ),
    (
        "enum: symbols, default, props, aliases; doc before symbols",
        '{"aliases":["Old"],"default":"B","x-p":true,"symbols":["A","B"],"doc":"e","name":"E","type":"enum",'
        '"namespace":"n"}',
        '{"type":"enum","name":"E","namespace":"n","doc":"e","symbols":["A","B"],"default":"B","x-p":true,'
        '"aliases":["Old"]}',
    ),
    (
        "fixed with size, logical type and aliases in another namespace",
        '{"type":"fixed","size":16,"name":"Id","namespace":"n","logicalType":"uuid","aliases":["o.Id"]}',
        '{"type":"fixed","name":"Id","namespace":"n","size":16,"logicalType":"uuid","aliases":["o.Id"]}',
    ),
    (
        "record props come before aliases",
        '{"type":"record","name":"R","aliases":["Q"],"connect.name":"R","fields":[]}',
        '{"type":"record","name":"R","fields":[],"connect.name":"R","aliases":["Q"]}',
    ),
    (
        "error type keeps its keyword",
        '{"type":"error","name":"Oops","fields":[{"name":"m","type":"string"}]}',
        '{"type":"error","name":"Oops","fields":[{"name":"m","type":"string"}]}',
    ),
    (
        "array and map with props",
        '{"type":"array","x":1,"items":{"type":"map","values":"long","y":"z"}}',
        '{"type":"array","items":{"type":"map","values":"long","y":"z"},"x":1}',
    ),
    (
        "union of primitives and an array",
        '["null", "string", {"type":"array","items":"int"}]',
        '["null","string",{"type":"array","items":"int"}]',
    ),
    (
        "field attribute order: name type doc default order aliases props",
        '{"type":"record","name":"R","fields":[{"p":1,"aliases":["b"],"order":"ignore","default":3,'
        '"doc":"dd","type":"int","name":"a"}]}',
        '{"type":"record","name":"R","fields":[{"name":"a","type":"int","doc":"dd","default":3,'
        '"order":"ignore","aliases":["b"],"p":1}]}',
    ),
    (
        "ascending order is not printed",
        '{"type":"record","name":"R","fields":[{"name":"a","type":"int","order":"ascending"}]}',
        '{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}',
    ),
    (
        "defaults of every type",
        '{"type":"record","name":"R","fields":['
        '{"name":"n","type":"null","default":null},{"name":"b","type":"boolean","default":false},'
        '{"name":"i","type":"int","default":-7},{"name":"l","type":"long","default":9007199254740993},'
        '{"name":"f","type":"float","default":1},{"name":"d","type":"double","default":1.5e-7},'
        '{"name":"s","type":"string","default":"x"},{"name":"y","type":"bytes","default":"\\u00ff"},'
        '{"name":"a","type":{"type":"array","items":"int"},"default":[1,2]},'
        '{"name":"m","type":{"type":"map","values":"double"},"default":{"k":2.0}},'
        '{"name":"u","type":["int","null"],"default":0}]}',
        '{"type":"record","name":"R","fields":['
        '{"name":"n","type":"null","default":null},{"name":"b","type":"boolean","default":false},'
        '{"name":"i","type":"int","default":-7},{"name":"l","type":"long","default":9007199254740993},'
        '{"name":"f","type":"float","default":1},{"name":"d","type":"double","default":1.5E-7},'
        '{"name":"s","type":"string","default":"x"},{"name":"y","type":"bytes","default":"\u00ff"},'
        '{"name":"a","type":{"type":"array","items":"int"},"default":[1,2]},'
        '{"name":"m","type":{"type":"map","values":"double"},"default":{"k":2.0}},'
        '{"name":"u","type":["int","null"],"default":0}]}',
    ),
    (
        "double defaults printed like Java Double.toString",
        '{"type":"record","name":"R","fields":[{"name":"a","type":"double","default":100},'
        '{"name":"b","type":"double","default":1e2},{"name":"c","type":"double","default":12345678.9},'
        '{"name":"d","type":"double","default":0.001},{"name":"e","type":"double","default":"2.5"}]}',
        '{"type":"record","name":"R","fields":[{"name":"a","type":"double","default":100},'
        '{"name":"b","type":"double","default":100.0},{"name":"c","type":"double","default":1.23456789E7},'
        '{"name":"d","type":"double","default":0.001},{"name":"e","type":"double","default":2.5}]}',
    ),
    (
        "record default",
        '{"type":"record","name":"R","fields":[{"name":"p","type":{"type":"record","name":"P","fields":'
        '[{"name":"x","type":"int"},{"name":"y","type":"int","default":0}]},"default":{"x":1}}]}',
        '{"type":"record","name":"R","fields":[{"name":"p","type":{"type":"record","name":"P","fields":'
        '[{"name":"x","type":"int"},{"name":"y","type":"int","default":0}]},"default":{"x":1}}]}',
    ),
    (
        "doc with unicode, quotes, slash and control characters",
        '{"type":"record","name":"R","doc":"caf\\u00e9 \\u2603 \\"q\\" a/b \\t\\n\\u0001\\u007f","fields":[]}',
        '{"type":"record","name":"R","doc":"caf\u00e9 \u2603 \\"q\\" a/b \\t\\n\\u0001\u007f","fields":[]}',
    ),
    (
        "field props of every JSON kind",
        '{"type":"record","name":"R","fields":[{"name":"a","type":"int","o":{"k":[1,true,null]},"f":0.5}]}',
        '{"type":"record","name":"R","fields":[{"name":"a","type":"int","o":{"k":[1,true,null]},"f":0.5}]}',
    ),
    (
        "named type called like an Avro type name is always printed in full",
        '{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":'
        '{"type":"fixed","name":"record","size":1}},{"name":"b","type":"n.record"}]}',
        '{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":'
        '{"type":"fixed","name":"record","size":1}},{"name":"b","type":"n.record"}]}',
    ),
    (
        "name reference in the null namespace from inside a namespaced record",
        '[{"type":"enum","name":"E","symbols":["A"]},{"type":"record","name":"R","namespace":"n",'
        '"fields":[{"name":"e","type":"E"}]}]',
        '[{"type":"enum","name":"E","symbols":["A"]},{"type":"record","name":"R","namespace":"n",'
        '"fields":[{"name":"e","type":"E"}]}]',
    ),
    (
        "json comments are allowed as in Jackson",
        '/* c */ {"type": "record", // x\n "name": "R", "fields": []}',
        '{"type":"record","name":"R","fields":[]}',
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CANONICAL], ids=[c[0] for c in CANONICAL])
def test_canonical_string_is_javas_to_string(text: str, expected: str) -> None:
    assert AVRO.parse(text).canonical == expected


def test_canonical_is_a_fixed_point() -> None:
    for _, _, expected in CANONICAL:
        assert AVRO.parse(expected).canonical == expected


def test_names_list_the_top_level_record_first() -> None:
    parsed = AVRO.parse(
        '{"type":"record","name":"Outer","namespace":"a","fields":[{"name":"e","type":'
        '{"type":"enum","name":"E","namespace":"b","symbols":["X"]}},{"name":"i","type":'
        '{"type":"record","name":"Inner","fields":[]}}]}'
    )
    assert parsed.names == ("a.Outer", "b.E", "a.Inner")
    assert parsed.schema_type == "AVRO"


INVALID = [
    (
        '{"type":"record","name":"R","fields":[{"name":"a","type":"Foo"}]}',
        '"Foo" is not a defined name. The type of the "a" field must be a defined name or a {"type": ...} expression.',
    ),
    ('{"type":"array","items":"Foo"}', 'Undefined name: "Foo"'),
    ('"com.x.Missing"', 'Undefined name: "com.x.Missing"'),
    (
        '{"type":"record","name":"R","fields":[{"name":"x","type":"int"},{"name":"x","type":"long"}]}',
        "Duplicate field x in record R: x type:LONG pos:1 and x type:INT pos:0.",
    ),
    ('{"type":"record","name":"1R","fields":[]}', "Illegal initial character: 1R"),
    ('{"type":"record","name":"R-x","fields":[]}', "Illegal character in: R-x"),
    ('{"type":"record","name":"R","fields":[{"name":"a b","type":"int"}]}', "Illegal character in: a b"),
    ('{"type":"enum","name":"E","symbols":["A","A"]}', "Duplicate enum symbol: A"),
    ('{"type":"enum","name":"E","symbols":["A","9"]}', "Illegal initial character: 9"),
    (
        '{"type":"enum","name":"E","symbols":["A","B"],"default":"C"}',
        "The Enum Default: C is not in the enum symbol set: [A, B]",
    ),
    ('{"type":"enum","name":"E"}', 'Enum has no symbols: {"type":"enum","name":"E"}'),
    ('{"type":"fixed","name":"F","size":"16"}', 'Invalid or no size: {"type":"fixed","name":"F","size":"16"}'),
    ('{"type":"record","name":"R"}', 'Record has no fields: {"type":"record","name":"R"}'),
    ('{"type":"record","fields":[]}', 'No name in schema: {"type":"record","fields":[]}'),
    ('{"type":"record","name":"R","fields":[{"type":"int"}]}', 'No field name: {"type":"int"}'),
    ('{"type":"record","name":"R","fields":[{"name":"a"}]}', 'No field type: {"name":"a"}'),
    ('{"type":"array"}', 'Array has no items type: {"type":"array"}'),
    ('{"type":"map"}', 'Map has no values type: {"type":"map"}'),
    ('{"items":"int"}', 'No type: {"items":"int"}'),
    ("42", "Schema not yet supported: 42"),
    ('["int","int"]', "Duplicate in union:int"),
    ('["null",["int"]]', 'Nested union: ["null",["int"]]'),
    ('{"type":"record","name":"int","fields":[]}', "Schemas may not be named after primitives: int"),
    ('[{"type":"fixed","name":"F","size":1},{"type":"fixed","name":"F","size":2}]', "Can't redefine: F"),
    (
        '{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":"x"}]}',
        'Invalid default for field a: "x" not a "int"',
    ),
    (
        '{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":2147483648}]}',
        'Invalid default for field a: 2147483648 not a "int"',
    ),
    (
        '{"type":"record","name":"R","fields":[{"name":"a","type":["null","string"],"default":"x"}]}',
        'Invalid default for field a: "x" not a ["null","string"]',
    ),
    (
        '{"type":"record","name":"R","fields":[{"name":"a","type":"int","order":"up"}]}',
        "No enum constant org.apache.avro.Schema.Field.Order.UP (field a)",
    ),
    (
        '{"type":"record","name":"R","aliases":"x","fields":[]}',
        'aliases not an array: {"type":"record","name":"R","aliases":"x","fields":[]}',
    ),
    ('{"type":"Foo"}', "Type not supported: Foo"),
    ("{not json", "Invalid JSON at line 1 column 2: Expecting property name enclosed in double quotes"),
]


@pytest.mark.parametrize(("text", "message"), INVALID)
def test_invalid_schemas_are_rejected_with_javas_message(text: str, message: str) -> None:
    with pytest.raises(InvalidSchemaError) as err:
        AVRO.parse(text)
    assert str(err.value) == message


def test_union_default_matching_a_later_branch_is_accepted_when_defaults_are_not_validated() -> None:
    text = '{"type":"record","name":"R","fields":[{"name":"a","type":["null","string"],"default":"x"}]}'
    parsed = AVRO.parse(text, validate_defaults=False)
    assert parsed.canonical == text


def ref(name: str, subject: str, schema: str, *refs: ResolvedReference) -> ResolvedReference:
    return ResolvedReference(name, subject, 1, schema, "AVRO", tuple(refs))


ADDRESS = (
    '{"type":"record","name":"Address","namespace":"com.acme","fields":[{"name":"zip","type":'
    '{"type":"enum","name":"Kind","symbols":["A"]}}]}'
)
CUSTOMER = (
    '{"type":"record","name":"Customer","namespace":"com.acme","fields":[{"name":"home","type":"com.acme.Address"}]}'
)


def test_referenced_types_are_printed_by_name_only() -> None:
    parsed = AVRO.parse(CUSTOMER, (ref("com.acme.Address", "address", ADDRESS),))
    assert parsed.canonical == (
        '{"type":"record","name":"Customer","namespace":"com.acme","fields":[{"name":"home","type":"Address"}]}'
    )
    assert parsed.names == ("com.acme.Customer",)


def test_nested_types_of_a_reference_are_inlined_like_confluent() -> None:
    # Confluent's known names are the referenced schemas' top-level names only
    main = '{"type":"record","name":"O","namespace":"com.acme","fields":[{"name":"k","type":"Kind"}]}'
    parsed = AVRO.parse(main, (ref("com.acme.Address", "address", ADDRESS),))
    assert parsed.canonical == (
        '{"type":"record","name":"O","namespace":"com.acme","fields":[{"name":"k","type":'
        '{"type":"enum","name":"Kind","symbols":["A"]}}]}'
    )


def test_transitive_references_are_parsed_depth_first() -> None:
    order = (
        '{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"c","type":"Customer"},'
        '{"name":"a","type":"Address"}]}'
    )
    address = ref("com.acme.Address", "address", ADDRESS)
    customer = ref("com.acme.Customer", "customer", CUSTOMER, address)
    parsed = AVRO.parse(order, (customer, address))
    assert parsed.canonical == (
        '{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"c","type":"Customer"},'
        '{"name":"a","type":"Address"}]}'
    )
    resolved = AVRO.format(parsed, "resolved")
    assert resolved == (
        '{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"c","type":'
        '{"type":"record","name":"Customer","fields":[{"name":"home","type":{"type":"record","name":"Address",'
        '"fields":[{"name":"zip","type":{"type":"enum","name":"Kind","symbols":["A"]}}]}}]}},'
        '{"name":"a","type":"Address"}]}'
    )


def test_missing_reference_is_an_undefined_name() -> None:
    with pytest.raises(InvalidSchemaError, match=r'^"com\.acme\.Address" is not a defined name'):
        AVRO.parse(CUSTOMER)


def test_invalid_referenced_schema_names_the_reference() -> None:
    with pytest.raises(InvalidSchemaError, match=r"^Invalid referenced schema com.acme.Address \(subject address"):
        AVRO.parse(CUSTOMER, (ref("com.acme.Address", "address", '{"type":"record"}'),))


def test_format_default_is_canonical_and_unknown_format_is_none() -> None:
    parsed = AVRO.parse('{"type": "int"}')
    assert AVRO.format(parsed, "default") == '"int"'
    assert AVRO.format(parsed, "serialized") is None


NORMALIZE = [
    (
        "props sorted, doc and aliases kept, ascending order dropped",
        '{"type":"record","name":"R","namespace":"n","doc":"d","aliases":["Z","A"],"z":1,"a":2,'
        '"fields":[{"name":"f","type":"int","doc":"fd","default":1,"zz":1,"aa":2}]}',
        '{"type":"record","name":"R","namespace":"n","doc":"d","fields":[{"name":"f","type":"int","doc":"fd",'
        '"default":1,"aa":2,"zz":1}],"a":2,"z":1,"aliases":["A","Z"]}',
    ),
    (
        "int default of a double field becomes a double",
        '{"type":"record","name":"R","fields":[{"name":"d","type":"double","default":1}]}',
        '{"type":"record","name":"R","fields":[{"name":"d","type":"double","default":1.0}]}',
    ),
    (
        "valid logical type first, then the other props sorted",
        '{"type":"int","x":1,"logicalType":"date"}',
        '{"type":"int","logicalType":"date","x":1}',
    ),
    (
        "invalid logical type is just a sorted prop",
        '{"type":"string","x":1,"logicalType":"date"}',
        '{"type":"string","logicalType":"date","x":1}',
    ),
    (
        "decimal: logicalType, precision, scale",
        '{"type":"bytes","scale":2,"precision":5,"logicalType":"decimal"}',
        '{"type":"bytes","logicalType":"decimal","precision":5,"scale":2}',
    ),
    (
        "empty named-type doc dropped; enum default kept",
        '{"type":"enum","name":"E","doc":"","default":"A","symbols":["A","B"]}',
        '{"type":"enum","name":"E","symbols":["A","B"],"default":"A"}',
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in NORMALIZE], ids=[c[0] for c in NORMALIZE])
def test_normalize(text: str, expected: str) -> None:
    assert AVRO.normalize(AVRO.parse(text)).canonical == expected


def test_normalize_makes_property_order_irrelevant() -> None:
    a = AVRO.parse('{"type":"record","name":"R","fields":[{"name":"f","type":"int","x":1,"y":2}]}')
    b = AVRO.parse('{"type":"record","name":"R","fields":[{"name":"f","type":"int","y":2,"x":1}]}')
    assert a.canonical != b.canonical
    assert AVRO.normalize(a).canonical == AVRO.normalize(b).canonical


def test_normalize_keeps_references_by_name_and_sorts_them() -> None:
    r = ref("com.acme.Address", "address", ADDRESS)
    parsed = AVRO.parse(CUSTOMER, (r, r))
    normalized = AVRO.normalize(parsed)
    assert normalized.canonical == parsed.canonical
    assert normalized.references == (r,)


def test_compatibility_goes_through_the_plugin() -> None:
    old = AVRO.parse('{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}')
    new = AVRO.parse('{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"b","type":"int"}]}')
    assert [i.kind for i in AVRO.check(new, old)] == ["READER_FIELD_MISSING_DEFAULT_VALUE"]
    assert [(i.kind, i.path) for i in AVRO.check(old, new)] == [("TYPE_MISMATCH", "/fields/0/type")]


def test_a_giant_enum_is_parsed_in_linear_time() -> None:
    """Symbols were checked for duplicates against a list: 60,000 of them (a 0.5 MB schema) held a parse worker
    for 20 s. Thirty times the symbols must cost about thirty times the time, not 900 times: a ratio measured in
    the same run, each size timed five times interleaved (the fastest counts), and a bound five times the linear
    ratio, so a loaded machine's noise (a ratio of 32 for ten times the symbols was seen under load) does not
    matter while the quadratic check still fails it by far."""
    import json
    import time

    def parse_time(n: int) -> float:
        # This thread's CPU time, not wall time: on a loaded machine the long parse is preempted more often than
        # the short one, which alone gave a ratio of 188 (load 20) with wall time.
        text = json.dumps({"type": "enum", "name": "E", "symbols": [f"S{i}" for i in range(n)], "default": "none"})
        start = time.thread_time()
        with pytest.raises(InvalidSchemaError, match="is not in the enum symbol set"):
            AVRO.parse(text)
        return time.thread_time() - start

    times: dict[int, list[float]] = {2_000: [], 60_000: []}
    for _ in range(5):
        for n, seen in times.items():
            seen.append(parse_time(n))
    small, large = min(times[2_000]), min(times[60_000])
    assert large / small < 150, (small, large)
