"""JsonSchemaType: validation by draft, references, Confluent's canonical string, normalization."""

from __future__ import annotations

import json

import pytest

from compat.levels import CompatibilityLevel, check_levels
from registry.schema_types.base import InvalidSchemaError, ResolvedReference
from registry.schema_types.json_schema import JsonSchemaType, dumps, loads

schema_type = JsonSchemaType()
D4 = "http://json-schema.org/draft-04/schema#"
D6 = "http://json-schema.org/draft-06/schema#"
D7 = "http://json-schema.org/draft-07/schema#"
D2019 = "https://json-schema.org/draft/2019-09/schema"
D2020 = "https://json-schema.org/draft/2020-12/schema"


def _ref(name: str, schema: object, *refs: ResolvedReference) -> ResolvedReference:
    return ResolvedReference(name, name, 1, json.dumps(schema), "JSON", refs)


# -- canonical string (Jackson's compact writer over a BigDecimal tree) ---------------------------


def test_canonical_is_compact_and_keeps_key_order() -> None:
    parsed = schema_type.parse('{\n  "type": "object",\n  "properties": { "b": {"type": "string"}, "a": {} }\n}')
    assert parsed.canonical == '{"type":"object","properties":{"b":{"type":"string"},"a":{}}}'


def test_canonical_numbers_follow_bigdecimal_to_string() -> None:
    parsed = schema_type.parse(
        '{"type":"number","maximum":1.0,"minimum":1e2,"multipleOf":0.00001,"exclusiveMaximum":1.5E-7,'
        '"default":123456789012345678901234567890,"examples":[-0.0, 10, 2.50]}'
    )
    assert parsed.canonical == (
        '{"type":"number","maximum":1.0,"minimum":1E+2,"multipleOf":0.00001,"exclusiveMaximum":1.5E-7,'
        '"default":123456789012345678901234567890,"examples":[-0.0,10,2.50]}'
    )


def test_canonical_strings_escape_like_jackson() -> None:
    parsed = schema_type.parse('{"title":"caf\\u00e9 \\u2028 / \\"q\\" \\\\ \\u0001\\t\\n\\u001f"}')
    assert parsed.canonical == '{"title":"café \u2028 / \\"q\\" \\\\ \\u0001\\t\\n\\u001F"}'


def test_duplicate_keys_keep_first_position_and_last_value() -> None:
    assert schema_type.parse('{"a":1,"type":"string","a":2}').canonical == '{"a":2,"type":"string"}'


def test_whitespace_only_differences_give_one_canonical() -> None:
    assert schema_type.parse('{ "type" : "string" }').canonical == schema_type.parse('{"type":"string"}').canonical


def test_dumps_loads_round_trip() -> None:
    text = '{"x":[true,false,null,1,1.10,"ü"],"y":{}}'
    assert dumps(loads(text)) == text


# -- validation and drafts ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"type": 5}', "Invalid schema at '#/type': 5 is not valid under any of the given schemas"),
        ('{"type": "string", "minLength": -1}', "Invalid schema at '#/minLength': -1 is less than the minimum of 0"),
        ('{"properties": {"a": {"type": "strin"}}}', "Invalid schema at '#/properties/a/type': 'strin' is not valid"),
        ('{"required": "a"}', "Invalid schema at '#/required': 'a' is not of type 'array'"),
        ("[1, 2]", "A JSON schema must be an object or a boolean, got array"),
        ('{"type": "object"', "Invalid JSON: Expecting ',' delimiter at line 1 column 18"),
        ('{"$schema": "http://example.com/custom"}', "Unsupported $schema 'http://example.com/custom'"),
    ],
)
def test_invalid_schemas_name_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(InvalidSchemaError) as info:
        schema_type.parse(text)
    assert str(info.value).startswith(message)


def test_boolean_schemas_are_valid_from_draft_6() -> None:
    assert schema_type.parse("true").canonical == "true"
    assert schema_type.parse("false").canonical == "false"


@pytest.mark.parametrize(
    ("dialect", "draft_name"),
    [(D4, "draft-04"), (D6, "draft-06"), (D7, "draft-07"), (D2019, "2019-09"), (D2020, "2020-12"), (None, "draft-07")],
)
def test_draft_chosen_by_schema_keyword(dialect: str | None, draft_name: str) -> None:
    schema = {"type": "string"} | ({"$schema": dialect} if dialect else {})
    assert draft_name in schema_type.parse(json.dumps(schema)).parsed.draft


def test_draft4_boolean_exclusive_maximum_is_valid_only_in_draft4() -> None:
    schema = {"type": "number", "maximum": 5, "exclusiveMaximum": True}
    schema_type.parse(json.dumps({"$schema": D4, **schema}))
    with pytest.raises(InvalidSchemaError, match="exclusiveMaximum"):
        schema_type.parse(json.dumps({"$schema": D7, **schema}))


def test_draft_2020_prefix_items_validate_instances() -> None:
    parsed = schema_type.parse(
        json.dumps({"$schema": D2020, "type": "array", "prefixItems": [{"type": "string"}], "items": False})
    )
    validator = parsed.parsed.validator()
    assert validator.is_valid(["a"])
    assert not validator.is_valid(["a", 1])


def test_names_is_the_title() -> None:
    assert schema_type.parse('{"title": "com.acme.Order", "type": "object"}').names == ("com.acme.Order",)
    assert schema_type.parse('{"type": "object"}').names == ()


# -- references -----------------------------------------------------------------------------------

ADDRESS = {"type": "object", "properties": {"street": {"type": "string"}}, "required": ["street"]}


def test_reference_by_relative_name() -> None:
    parsed = schema_type.parse(
        json.dumps({"type": "object", "properties": {"home": {"$ref": "address.json"}}}),
        (_ref("address.json", ADDRESS),),
    )
    validator = parsed.parsed.validator()
    assert validator.is_valid({"home": {"street": "Main"}})
    assert [e.message for e in validator.iter_errors({"home": {"street": 5}})] == ["5 is not of type 'string'"]


def test_reference_resolved_against_root_id() -> None:
    address = {"$id": "https://acme.example/schemas/address.json", **ADDRESS}
    root = {"$id": "https://acme.example/schemas/customer.json", "properties": {"a": {"$ref": "address.json"}}}
    parsed = schema_type.parse(json.dumps(root), (_ref("https://acme.example/schemas/address.json", address),))
    assert not parsed.parsed.validator().is_valid({"a": {}})


def test_reference_to_a_fragment_of_a_referenced_schema() -> None:
    defs = {"$defs": {"Money": {"type": "object", "required": ["units"]}}}
    parsed = schema_type.parse(json.dumps({"$ref": "defs.json#/$defs/Money"}), (_ref("defs.json", defs),))
    assert not parsed.parsed.validator().is_valid({})


@pytest.mark.parametrize(
    ("ref", "base"),
    [
        ("#/$defs/a", "http://x/sub/a.json"),  # the pointer enters a subschema with an $id
        ("#/$defs/a/properties/p", "http://x/sub/deeper.json"),  # ids on the way join up
        ("sub/a.json#/properties/p", "http://x/sub/deeper.json"),
        ("#/properties/q", "http://x/root.json"),
        ("other.json#/$defs/k", "http://x/k/"),  # a referenced schema, looked up under its name
        ("http://y/other.json#/$defs/k", "http://y/k/"),  # ... and under its own $id
    ],
)
def test_resolve_returns_the_base_uri_inside_the_target(ref: str, base: str) -> None:
    other = {"$id": "http://y/other.json", "$defs": {"k": {"$id": "k/", "type": "string"}}}
    root = {
        "$schema": D2020,
        "$id": "http://x/root.json",
        "$defs": {"a": {"$id": "sub/a.json", "properties": {"p": {"$id": "deeper.json", "type": "string"}}}},
        "properties": {"q": {"type": "integer"}},
    }
    document = schema_type.parse(json.dumps(root), (_ref("other.json", other),)).parsed
    assert document.resolve(ref, document.base_uri)[1] == base


def test_transitive_references() -> None:
    street = {"type": "string", "minLength": 1}
    address = {"type": "object", "properties": {"street": {"$ref": "street.json"}}}
    refs = (_ref("address.json", address, _ref("street.json", street)),)
    parsed = schema_type.parse(json.dumps({"properties": {"a": {"$ref": "address.json"}}}), refs)
    assert not parsed.parsed.validator().is_valid({"a": {"street": ""}})


def test_unresolvable_reference_is_invalid() -> None:
    with pytest.raises(InvalidSchemaError) as info:
        schema_type.parse(json.dumps({"properties": {"a": {"$ref": "missing.json"}}}))
    assert str(info.value).startswith("$ref 'missing.json' at '#/properties/a/$ref' cannot be resolved")


def test_unresolvable_local_pointer_is_invalid() -> None:
    with pytest.raises(InvalidSchemaError, match="#/definitions/nope"):
        schema_type.parse(json.dumps({"$ref": "#/definitions/nope", "definitions": {}}))


def test_invalid_referenced_schema_is_reported_by_name() -> None:
    bad = {"$schema": D7, "type": 7}
    with pytest.raises(InvalidSchemaError, match=r"referenced schema 'bad\.json'"):
        schema_type.parse(json.dumps({"$ref": "bad.json"}), (_ref("bad.json", bad),))


def test_compatibility_follows_references() -> None:
    root = json.dumps({"type": "object", "properties": {"a": {"$ref": "address.json"}}})
    old = schema_type.parse(root, (_ref("address.json", ADDRESS),))
    narrowed = {**ADDRESS, "properties": {"street": {"type": "string", "maxLength": 3}}}
    new = schema_type.parse(root, (_ref("address.json", narrowed),))
    found = schema_type.check(reader=new, writer=old)
    assert [(i.kind, i.path) for i in found] == [("MAX_LENGTH_ADDED", "#/properties/a/properties/street/maxLength")]


# -- normalization and compatibility wiring ---------------------------------------------------------


def test_normalize_sorts_keys_recursively_and_keeps_arrays() -> None:
    parsed = schema_type.parse('{"type":"object","required":["b","a"],"properties":{"b":{"type":"string"},"a":{}}}')
    normalized = schema_type.normalize(parsed)
    assert normalized.canonical == '{"properties":{"a":{},"b":{"type":"string"}},"required":["b","a"],"type":"object"}'
    assert schema_type.normalize(normalized).canonical == normalized.canonical


def test_normalize_dedupes_and_sorts_references() -> None:
    a, b = _ref("b.json", {"type": "string"}), _ref("a.json", {"type": "number"})
    text = json.dumps({"anyOf": [{"$ref": "a.json"}, {"$ref": "b.json"}]})
    normalized = schema_type.normalize(schema_type.parse(text, (a, b, a)))
    assert [r.name for r in normalized.references] == ["a.json", "b.json"]


def test_check_plugs_into_levels_in_reader_writer_direction() -> None:
    closed = '{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}'
    v1 = schema_type.parse(closed)
    v2 = schema_type.parse(closed.replace('"additionalProperties"', '"required":["a"],"additionalProperties"'))
    backward = check_levels(CompatibilityLevel.BACKWARD, v2, [v1], schema_type.check)
    assert [(i.kind, i.path) for i in backward.incompatibilities] == [("REQUIRED_ATTRIBUTE_ADDED", "#/required/a")]
    assert backward.incompatibilities[0].message == (
        "The keyword at path '#/required/a' in the new schema is not present in the old schema"
    )
    assert check_levels(CompatibilityLevel.FORWARD, v2, [v1], schema_type.check).incompatibilities == []
