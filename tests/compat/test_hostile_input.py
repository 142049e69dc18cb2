"""Hostile input for the compatibility checks and the number handling of the schema parsers.

Each input here used to take exponential or quadratic time (or to escape as a RecursionError / ValueError).
The tests assert the verdict, the error and the engine used, never a wall-clock time: the old behaviour
would run into pytest's timeout.
"""

from __future__ import annotations

import json
import re
import sys
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from compat import CompatibilityPolicy, SchemaTooComplexError, SchemaTooDeepError
from compat import avro as avro_compat
from compat import json_schema as json_compat
from compat import protobuf as proto_compat
from compat.limits import MAX_DEPTH
from compat.patterns import Patterns, compile_pattern
from registry.schema_types.avro import AvroType
from registry.schema_types.base import InvalidSchemaError
from registry.schema_types.json_schema import JsonSchemaType
from registry.schema_types.protobuf import ProtobufType, decode_descriptor

T = TypeVar("T")
EVIL = "^(a+)+$"  # exponential for a backtracking engine on "aaa...a!"
STR = {"type": "string"}
NUM = {"type": "number"}


def json_doc(schema: object) -> Any:
    return JsonSchemaType().parse(json.dumps(schema)).parsed


def with_patterns(patterns: dict[str, object], properties: dict[str, object]) -> dict[str, object]:
    return {"type": "object", "properties": properties, "patternProperties": patterns, "additionalProperties": False}


# -- user regular expressions ----------------------------------------------------------------------------


def test_patterns_run_on_re2() -> None:
    compiled = compile_pattern(EVIL)
    assert type(compiled).__module__ == "re2"
    assert compiled is not None and compiled.search("a" * 100_000 + "!") is None


def test_catastrophic_pattern_against_a_long_property_name() -> None:
    name = "a" * 100_000 + "!"
    old = json_doc(with_patterns({EVIL: STR}, {}))
    # the name does not match: the added property is not covered by the pattern, only by additionalProperties
    new = json_doc(with_patterns({EVIL: STR}, {name: NUM}))
    assert [(d.kind, d.path) for d in json_compat.diff(old, new)] == [
        ("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", f"#/properties/{name}")
    ]
    # a name the pattern matches is checked against the pattern's schema (string, not number)
    matching = json_doc(with_patterns({EVIL: STR}, {"a" * 100_000: NUM}))
    assert sorted(d.kind for d in json_compat.check(reader=matching, writer=old)) == [
        "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "TYPE_CHANGED",
    ]


def test_pattern_re2_cannot_run_never_counts_as_covering() -> None:
    lookahead = "^(?=x)x+$"
    assert compile_pattern(lookahead) is None
    old = json_doc(with_patterns({lookahead: STR}, {}))
    new = json_doc(with_patterns({lookahead: STR}, {"xx": STR}))
    assert [d.kind for d in json_compat.check(reader=new, writer=old)] == [
        "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
    ]
    assert json_compat.check(reader=new, writer=old, policy=CompatibilityPolicy.LENIENT) == []


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        ("^\\u00e9t\\u00e9$", "été", True),
        ("^\\uD83D\\uDE00$", "\U0001f600", True),
        ("\\\\u0041", "\\u0041", True),
        ("^\\u0041", "B", False),
        ("[", "[", None),
    ],
)
def test_ecma_unicode_escapes_are_translated(pattern: str, text: str, found: bool | None) -> None:
    assert Patterns().search(pattern, text) is found


# -- numbers -----------------------------------------------------------------------------------------------


def test_long_textual_double_default_is_rejected_in_linear_time() -> None:
    # the default was matched with a regex that tried every split of a digit run (quadratic)
    digits = "1" * 1_000_000
    field = {"name": "f", "type": "double", "default": digits + "x"}
    with pytest.raises(InvalidSchemaError, match=r'^Invalid default for field f: "1111'):
        AvroType().parse(json.dumps({"type": "record", "name": "R", "fields": [field]}))
    field["default"] = digits  # a long number in a string is a number to Java
    parsed = AvroType().parse(json.dumps({"type": "record", "name": "R", "fields": [field]}))
    assert '"default":Infinity' in parsed.canonical or '"default":"Infinity"' in parsed.canonical


@pytest.mark.parametrize(
    ("schema_type", "text"),
    [
        (AvroType(), '{"type": "long", "default": ' + "9" * 5000 + "}"),
        (JsonSchemaType(), '{"type": "number", "maximum": ' + "9" * 5000 + "}"),
    ],
    ids=["avro", "json"],
)
def test_integer_longer_than_python_converts_is_an_invalid_schema(schema_type: Any, text: str) -> None:
    with pytest.raises(InvalidSchemaError, match=r"^Invalid JSON: Exceeds the limit"):
        schema_type.parse(text)


def test_base64_detection_of_protobuf_text_is_linear() -> None:
    # the descriptor detector's trailing \s* overlapped the line breaks it accepts (quadratic on failure)
    assert decode_descriptor("A" + "\n" * 1_000_000 + "!") is None


def test_huge_exponents_compare_without_expanding() -> None:
    old = json_doc({"type": "number", "multipleOf": 7, "maximum": 1e308})
    new = json_doc(json.loads('{"type": "number", "multipleOf": 1E+999999999, "maximum": 1E+999999998}'))
    assert sorted((d.kind, d.path) for d in json_compat.diff(old, new)) == [
        ("MAXIMUM_INCREASED", "#/maximum"),
        ("MULTIPLE_OF_CHANGED", "#/multipleOf"),
    ]


# -- nesting and repetition -------------------------------------------------------------------------------


def nested_arrays(depth: int, leaf: str) -> dict[str, Any]:
    node: dict[str, Any] = {"type": leaf}
    for _ in range(depth):
        node = {"type": "array", "items": node}
    return node


def test_avro_nesting_within_the_limit_is_checked() -> None:
    depth = MAX_DEPTH - 2
    [found] = avro_compat.check(nested_arrays(depth, "string"), nested_arrays(depth, "int"))
    assert (found.kind, found.path) == ("TYPE_MISMATCH", "/" + "/".join(["items"] * depth))
    assert avro_compat.check(nested_arrays(depth, "long"), nested_arrays(depth, "int")) == []


def test_avro_nesting_past_the_limit_is_a_clear_error() -> None:
    with pytest.raises(SchemaTooDeepError, match=f"at most {MAX_DEPTH} levels") as error:
        avro_compat.check(nested_arrays(1000, "long"), nested_arrays(1000, "int"))
    assert error.value.limit == MAX_DEPTH and error.value.path.startswith("/items/items")


def test_recursion_error_from_a_deep_caller_becomes_schema_too_deep() -> None:
    def check() -> object:
        return avro_compat.check(nested_arrays(100, "long"), nested_arrays(100, "int"))

    with pytest.raises(SchemaTooDeepError):
        _with_frames_left(60, check)


def _with_frames_left(frames: int, function: Callable[[], T]) -> T:
    def down(n: int) -> T:
        return function() if n <= 0 else down(n - 1)

    return down(sys.getrecursionlimit() - len(traceback.extract_stack()) - frames)


def ref_chain(length: int, leaf: object) -> dict[str, Any]:
    defs: dict[str, Any] = {
        f"d{i}": {"type": "object", "properties": {"next": {"$ref": f"#/$defs/d{i + 1}"}}} for i in range(length)
    }
    defs[f"d{length}"] = leaf
    return {"$defs": defs, "$ref": "#/$defs/d0"}


def test_json_ref_chain_past_the_limit_is_a_clear_error() -> None:
    old, new = json_doc(ref_chain(300, STR)), json_doc(ref_chain(300, NUM))
    with pytest.raises(SchemaTooDeepError) as error:
        json_compat.check(reader=new, writer=old)
    assert re.fullmatch(r"#/\$defs/d\d+", error.value.path)  # the reference it would have followed


def test_json_ref_chain_within_the_limit_is_checked() -> None:
    old, new = json_doc(ref_chain(40, STR)), json_doc(ref_chain(40, NUM))
    [found] = json_compat.check(reader=new, writer=old)
    assert (found.kind, found.path) == ("TYPE_CHANGED", "#" + "/properties/next" * 40)


def diamond(levels: int, leaf: object) -> Any:
    """Every level refers to the next one twice: 2**levels paths to the bottom."""
    defs: dict[str, Any] = {
        f"d{i}": {
            "type": "object",
            "properties": {"a": {"$ref": f"#/$defs/d{i + 1}"}, "b": {"$ref": f"#/$defs/d{i + 1}"}},
        }
        for i in range(levels)
    }
    defs[f"d{levels}"] = leaf
    return json_doc({"$defs": defs, "$ref": "#/$defs/d0"})


def test_json_diamond_of_references_is_compared_once_per_pair() -> None:
    old, new = diamond(60, STR), diamond(60, {"type": "string", "maxLength": 5})
    assert json_compat.check(reader=new, writer=new) == []
    # a change at the bottom is found once, but it is reported at each of the 2**60 paths: bounded
    with pytest.raises(SchemaTooComplexError, match=r"^Schema too complex: a compatibility check is limited to"):
        json_compat.check(reader=old, writer=new)


def test_json_long_names_above_many_differences_are_bounded() -> None:
    name = "n" * 1_000_000
    old = json_doc({"properties": {name: {"properties": {f"p{i}": STR for i in range(100)}}}})
    new = json_doc({"properties": {name: {"properties": {f"p{i}": NUM for i in range(100)}}}})
    with pytest.raises(SchemaTooComplexError, match=r"limited to 16777216 characters of reported differences"):
        json_compat.check(reader=new, writer=old)
    assert len(json_compat.check(reader=old, writer=old)) == 0


def test_json_combination_diamond_is_compared_once_per_pair() -> None:
    defs: dict[str, Any] = {
        f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}, {"title": str(i)}]}
        for i in range(60)
    }
    defs["d60"] = STR
    doc = json_doc({"$defs": defs, "$ref": "#/$defs/d0"})
    assert json_compat.check(reader=doc, writer=doc) == []


def proto_chain(length: int, leaf: str, fan_out: int = 1) -> str:
    """``M000`` has ``fan_out`` fields of type ``M001``, and so on; the last message holds one ``leaf``."""
    lines = ['syntax = "proto3";']
    for i in range(length):
        fields = " ".join(f"M{i + 1:03d} f{k} = {k + 1};" for k in range(fan_out))
        lines.append(f"message M{i:03d} {{ {fields} }}")
    lines.append(f"message M{length:03d} {{ {leaf} x = 1; }}")
    return "\n".join(lines)


def test_protobuf_message_chain_past_the_limit_is_a_clear_error() -> None:
    old, new = ProtobufType().parse(proto_chain(200, "int32")), ProtobufType().parse(proto_chain(200, "string"))
    with pytest.raises(SchemaTooDeepError):
        proto_compat.check(reader=new.parsed, writer=old.parsed)


def test_protobuf_diamond_is_compared_once_per_type_pair() -> None:
    # 60 levels of two fields each to the next message: 2**60 paths, one comparison per message pair
    old, new = ProtobufType().parse(proto_chain(60, "int32", 2)), ProtobufType().parse(proto_chain(60, "string", 2))
    found = proto_compat.check(reader=new.parsed, writer=old.parsed)
    assert {(d.kind, d.path) for d in found} == (
        {("FIELD_SCALAR_KIND_CHANGED", "#/M060/1")}
        | {("FIELD_NAMED_TYPE_CHANGED", f"#/M{i:03d}/{k}") for i in range(60) for k in (1, 2)}
    )
