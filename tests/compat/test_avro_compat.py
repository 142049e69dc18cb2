"""Avro reader/writer compatibility: Java SchemaCompatibility verdicts, kinds, paths and Confluent texts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from compat.avro import check
from registry.schema_types.avro import AvroType

AVRO = AvroType()


def parse(schema: Any) -> dict[str, Any]:
    return AVRO.parse(json.dumps(schema)).parsed


def rec(name: str, *fields: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": list(fields), **extra}


def fld(name: str, type_: Any, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, **extra}


def enum(name: str, *symbols: str, **extra: Any) -> dict[str, Any]:
    return {"type": "enum", "name": name, "symbols": list(symbols), **extra}


def fixed(name: str, size: int, **extra: Any) -> dict[str, Any]:
    return {"type": "fixed", "name": name, "size": size, **extra}


def arr(items: Any) -> dict[str, Any]:
    return {"type": "array", "items": items}


def mp(values: Any) -> dict[str, Any]:
    return {"type": "map", "values": values}


LIST = rec("L", fld("v", "int"), fld("next", ["null", "L"], default=None))
LIST_LONG = rec("L", fld("v", "long"), fld("next", ["null", "L"], default=None))
LIST_STR = rec("L", fld("v", "string"), fld("next", ["null", "L"], default=None))

# (id, reader, writer, expected [(kind, path)]) -- empty list: compatible
CASES: list[tuple[str, Any, Any, list[tuple[str, str]]]] = [
    # primitives and promotions
    ("same int", "int", "int", []),
    ("null", "null", "null", []),
    ("boolean", "boolean", "boolean", []),
    ("int->long", "long", "int", []),
    ("int->float", "float", "int", []),
    ("int->double", "double", "int", []),
    ("long->float", "float", "long", []),
    ("long->double", "double", "long", []),
    ("float->double", "double", "float", []),
    ("string->bytes", "bytes", "string", []),
    ("bytes->string", "string", "bytes", []),
    ("long->int narrows", "int", "long", [("TYPE_MISMATCH", "/")]),
    ("double->float narrows", "float", "double", [("TYPE_MISMATCH", "/")]),
    ("float->long", "long", "float", [("TYPE_MISMATCH", "/")]),
    ("int->string", "string", "int", [("TYPE_MISMATCH", "/")]),
    ("boolean->int", "int", "boolean", [("TYPE_MISMATCH", "/")]),
    ("null->boolean", "boolean", "null", [("TYPE_MISMATCH", "/")]),
    ("string->null", "null", "string", [("TYPE_MISMATCH", "/")]),
    ("logical types do not matter", {"type": "long", "logicalType": "timestamp-millis"}, "long", []),
    # records
    ("identical records", rec("R", fld("a", "int")), rec("R", fld("a", "int")), []),
    ("reader drops a field", rec("R", fld("a", "int")), rec("R", fld("a", "int"), fld("b", "string")), []),
    (
        "reader adds field with default",
        rec("R", fld("a", "int"), fld("b", "string", default="x")),
        rec("R", fld("a", "int")),
        [],
    ),
    (
        "reader adds field without default",
        rec("R", fld("a", "int"), fld("b", "string")),
        rec("R", fld("a", "int")),
        [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")],
    ),
    ("field promoted inside record", rec("R", fld("a", "long")), rec("R", fld("a", "int")), []),
    (
        "field type changed",
        rec("R", fld("x", "int"), fld("a", "string")),
        rec("R", fld("a", "int"), fld("x", "int")),
        [("TYPE_MISMATCH", "/fields/1/type")],
    ),
    (
        "field renamed without alias",
        rec("R", fld("b", "int")),
        rec("R", fld("a", "int")),
        [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/0")],
    ),
    ("field renamed with reader alias", rec("R", fld("b", "int", aliases=["a"])), rec("R", fld("a", "int")), []),
    (
        "writer alias does not help",
        rec("R", fld("b", "int")),
        rec("R", fld("a", "int", aliases=["b"])),
        [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/0")],
    ),
    (
        "field order irrelevant",
        rec("R", fld("b", "int"), fld("a", "int")),
        rec("R", fld("a", "int"), fld("b", "int")),
        [],
    ),
    ("record name changed", rec("S", fld("a", "int")), rec("R", fld("a", "int")), [("NAME_MISMATCH", "/name")]),
    ("record renamed with reader alias", rec("S", fld("a", "int"), aliases=["R"]), rec("R", fld("a", "int")), []),
    (
        "record namespace change ignored",
        rec("R", fld("a", "int"), namespace="x"),
        rec("R", fld("a", "int"), namespace="y"),
        [],
    ),
    (
        "name and field both wrong",
        rec("S", fld("a", "int"), fld("c", "int")),
        rec("R", fld("a", "string")),
        [
            ("NAME_MISMATCH", "/name"),
            ("TYPE_MISMATCH", "/fields/0/type"),
            ("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1"),
        ],
    ),
    ("record vs int", rec("R", fld("a", "int")), "int", [("TYPE_MISMATCH", "/")]),
    (
        "nested record field missing default",
        rec("R", fld("n", rec("N", fld("x", "int"), fld("y", "int")))),
        rec("R", fld("n", rec("N", fld("x", "int")))),
        [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/0/type/fields/1")],
    ),
    ("record with no fields reads anything named alike", rec("R"), rec("R", fld("a", "int")), []),
    (
        "missing field of enum type with enum default (Java special case)",
        rec("R", fld("a", "int"), fld("e", enum("E", "A", "B", default="A"))),
        rec("R", fld("a", "int")),
        [("TYPE_MISMATCH", "/fields/1/type")],
    ),
    # enums
    ("enum same", enum("E", "A", "B"), enum("E", "A", "B"), []),
    ("enum reader adds symbol", enum("E", "A", "B", "C"), enum("E", "A", "B"), []),
    ("enum reader lacks symbol", enum("E", "A"), enum("E", "A", "B", "C"), [("MISSING_ENUM_SYMBOLS", "/symbols")]),
    ("enum reader lacks symbol but has default", enum("E", "A", "U", default="U"), enum("E", "A", "B"), []),
    ("enum renamed", enum("F", "A"), enum("E", "A"), [("NAME_MISMATCH", "/name")]),
    ("enum renamed with alias", enum("F", "A", aliases=["E"]), enum("E", "A"), []),
    ("enum vs string", "string", enum("E", "A"), [("TYPE_MISMATCH", "/")]),
    (
        "enum inside record",
        rec("R", fld("e", enum("E", "A"))),
        rec("R", fld("e", enum("E", "A", "B"))),
        [("MISSING_ENUM_SYMBOLS", "/fields/0/type/symbols")],
    ),
    # fixed
    ("fixed same", fixed("F", 4), fixed("F", 4), []),
    ("fixed size changed", fixed("F", 8), fixed("F", 4), [("FIXED_SIZE_MISMATCH", "/size")]),
    ("fixed renamed", fixed("G", 4), fixed("F", 4), [("NAME_MISMATCH", "/name")]),
    (
        "fixed renamed and resized",
        fixed("G", 2),
        fixed("F", 4),
        [("NAME_MISMATCH", "/name"), ("FIXED_SIZE_MISMATCH", "/size")],
    ),
    ("fixed vs bytes", "bytes", fixed("F", 4), [("TYPE_MISMATCH", "/")]),
    # arrays and maps
    ("array items promoted", arr("long"), arr("int"), []),
    ("array items narrowed", arr("int"), arr("long"), [("TYPE_MISMATCH", "/items")]),
    ("map values promoted", mp("double"), mp("float"), []),
    ("map values incompatible", mp("int"), mp("string"), [("TYPE_MISMATCH", "/values")]),
    ("array vs map", arr("int"), mp("int"), [("TYPE_MISMATCH", "/")]),
    (
        "array of records missing default",
        arr(rec("R", fld("a", "int"))),
        arr(rec("R")),
        [("READER_FIELD_MISSING_DEFAULT_VALUE", "/items/fields/0")],
    ),
    ("map of enums", mp(enum("E", "A")), mp(enum("E", "A", "B")), [("MISSING_ENUM_SYMBOLS", "/values/symbols")]),
    # unions
    ("union same", ["null", "int"], ["null", "int"], []),
    ("union reader superset", ["null", "int", "string"], ["null", "int"], []),
    (
        "union reader lacks a writer branch",
        ["null", "int"],
        ["null", "int", "string"],
        [("MISSING_UNION_BRANCH", "/2")],
    ),
    ("union branches reordered", ["int", "null"], ["null", "int"], []),
    ("union branch promoted", ["null", "long"], ["null", "int"], []),
    ("non-union writer read by union", ["null", "string"], "string", []),
    ("non-union writer promoted into union", ["null", "double"], "int", []),
    ("non-union writer missing from union", ["null", "string"], "int", [("MISSING_UNION_BRANCH", "/")]),
    ("union writer read by non-union, all readable", "long", ["int", "long"], []),
    ("union writer read by non-union, one branch not", "string", ["null", "string"], [("TYPE_MISMATCH", "/0")]),
    (
        "optional field made required",
        rec("R", fld("a", "string")),
        rec("R", fld("a", ["null", "string"])),
        [("TYPE_MISMATCH", "/fields/0/type/0")],
    ),
    (
        "required field made optional",
        rec("R", fld("a", ["null", "string"], default=None)),
        rec("R", fld("a", "string")),
        [],
    ),
    ("union of records by name", [rec("A", fld("x", "int")), rec("B")], [rec("B")], []),
    ("union record branch renamed", ["null", rec("S")], ["null", rec("R")], [("MISSING_UNION_BRANCH", "/1")]),
    (
        "union in record field lacking branch",
        rec("R", fld("u", ["int"])),
        rec("R", fld("u", ["int", "boolean"])),
        [("MISSING_UNION_BRANCH", "/fields/0/type/1")],
    ),
    ("empty writer union", "int", [], []),
    # recursive types
    ("recursive list same", LIST, LIST, []),
    ("recursive list promoted", LIST_LONG, LIST, []),
    ("recursive list incompatible", LIST_STR, LIST, [("TYPE_MISMATCH", "/fields/0/type")]),
    ("recursive reader vs flat writer", LIST, rec("L", fld("v", "int")), []),
]


@pytest.mark.parametrize(("reader", "writer", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_reader_writer_compatibility(reader: Any, writer: Any, expected: list[tuple[str, str]]) -> None:
    found = check(parse(reader), parse(writer))
    assert [(i.kind, i.path) for i in found] == expected


def test_there_are_at_least_sixty_cases() -> None:
    assert len(CASES) >= 60


def test_recursive_types_mutually_referencing() -> None:
    tree = rec("T", fld("kids", arr("T")), fld("tag", ["null", enum("Tag", "A", "B")], default=None))
    tree_narrow = rec("T", fld("kids", arr("T")), fld("tag", ["null", enum("Tag", "A")], default=None))
    assert check(parse(tree), parse(tree)) == []
    found = check(parse(tree_narrow), parse(tree))
    assert [(i.kind, i.path) for i in found] == [("MISSING_UNION_BRANCH", "/fields/1/type/1")]


def test_missing_default_text_matches_confluent() -> None:
    [inc] = check(parse(rec("R", fld("a", "int"), fld("b", "int"))), parse(rec("R", fld("a", "int"))))
    assert inc.confluent_text() == (
        "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'b' at path '/fields/1' in the "
        "new schema has no default value and is missing in the old schema', additionalInfo:'b'}"
    )
    assert inc.for_forward().message == (
        "The field 'b' at path '/fields/1' in the old schema has no default value and is missing in the new schema"
    )


def test_type_mismatch_text_matches_confluent() -> None:
    [inc] = check(parse(rec("R", fld("a", "string"))), parse(rec("R", fld("a", "double"))))
    assert inc.confluent_text() == (
        "{errorType:'TYPE_MISMATCH', description:'The type (path '/fields/0/type') of a field in the new schema "
        "does not match with the old schema', additionalInfo:'reader type: STRING not compatible with writer "
        "type: DOUBLE'}"
    )


def test_name_mismatch_text() -> None:
    [inc] = check(parse(rec("S", namespace="x")), parse(rec("R", namespace="com.y")))
    assert inc.message == "The name of the schema has changed (path '/name')"
    assert inc.additional_info == "expected: com.y.R"
    assert inc.for_forward() is inc


def test_enum_fixed_union_texts() -> None:
    [e] = check(parse(enum("E", "A")), parse(enum("E", "C", "A", "B")))
    assert e.additional_info == "[B, C]"
    assert e.message == "The new schema is missing enum symbols '[B, C]' at path '/symbols' in the old schema"
    [f] = check(parse(fixed("F", 8)), parse(fixed("F", 4)))
    assert f.additional_info == "expected: 4, found: 8"
    assert f.message == (
        "The size of FIXED type field at path '/size' in the new schema does not match with the old schema"
    )
    [u] = check(parse(["null", "int"]), parse(["null", "int", rec("R")]))
    assert u.additional_info == "reader union lacking writer type: RECORD"
    assert u.message == "The new schema is missing a type inside a union field at path '/2' in the old schema"


def test_reader_field_matching_two_writer_fields_is_reported() -> None:
    [inc] = check(parse(rec("R", fld("a", "int", aliases=["b"]))), parse(rec("R", fld("a", "int"), fld("b", "int"))))
    assert inc.kind == "UNEXPECTED_EXCEPTION"
    assert inc.message.startswith("Unexpected exception during compatibility check: Reader record field a")
