"""JSON Schema compatibility: Confluent's change kinds, paths and verdicts.

Each case is (original, update, changes, compatible) as in Confluent's ``diff-schema-examples.json``
(most cases below are taken from that corpus as data): ``changes`` is the exact multiset of
``"<KIND> <path>"`` that ``diff(original, update)`` reports, ``compatible`` whether ``update`` as
reader can read data written with ``original`` (Confluent's BACKWARD), i.e. whether
``check(reader=update, writer=original)`` is empty.
"""

from __future__ import annotations

import json

import pytest

from compat import CompatibilityPolicy, json_schema_changes
from compat import json_schema as json_compat
from registry.schema_types.json_schema import JsonSchemaType
from tests.compat.helpers import assert_diff_case, assert_reported_as

STR = {"type": "string"}
NUM = {"type": "number"}
INT = {"type": "integer"}
NUL = {"type": "null"}
OPEN = {"additionalProperties": True}
CLOSED = {"additionalProperties": False}
D2020 = "https://json-schema.org/draft/2020-12/schema"
D4 = "http://json-schema.org/draft-04/schema#"


def obj(props: dict, **extra: object) -> dict:
    return {"properties": props, **extra}


def arr(items: object, **extra: object) -> dict:
    return {"type": "array", "items": items, **extra}


def string(**keywords: object) -> dict:
    return {"type": "string", **keywords}


def number(**keywords: object) -> dict:
    return {"type": "number", **keywords}


CASES: list[tuple[str, object, object, list[str], bool]] = [
    # -- metadata and basic types
    ("anything-to-empty", {"properties": {}}, {}, [], True),
    ("id-changed", {"id": "something"}, {"id": "something_else"}, ["ID_CHANGED #/"], True),
    ("title-changed", {"title": "a"}, {"title": "b"}, ["TITLE_CHANGED #/"], True),
    ("description-changed", {"description": "a"}, {"description": "b"}, ["DESCRIPTION_CHANGED #/"], True),
    ("default-changed", string(default="a"), string(default="b"), ["DEFAULT_CHANGED #/"], True),
    ("object-to-array", {"type": "object"}, {"type": "array"}, ["TYPE_CHANGED #/"], False),
    ("string-to-number", STR, NUM, ["TYPE_CHANGED #/"], False),
    ("integer-widened-to-number", INT, NUM, ["TYPE_EXTENDED #/"], True),
    ("number-narrowed-to-integer", NUM, INT, ["TYPE_NARROWED #/"], False),
    ("false-to-anything", False, STR, [], True),
    ("anything-to-true", STR, True, [], True),
    ("empty-to-string", {}, STR, ["TYPE_CHANGED #/"], False),
    # -- strings
    ("min-length-increased", string(minLength=10), string(minLength=11), ["MIN_LENGTH_INCREASED #/minLength"], False),
    ("min-length-decreased", string(minLength=11), string(minLength=10), ["MIN_LENGTH_DECREASED #/minLength"], True),
    ("min-length-added", STR, string(minLength=1), ["MIN_LENGTH_ADDED #/minLength"], False),
    ("max-length-increased", string(maxLength=10), string(maxLength=12), ["MAX_LENGTH_INCREASED #/maxLength"], True),
    ("max-length-decreased", string(maxLength=12), string(maxLength=10), ["MAX_LENGTH_DECREASED #/maxLength"], False),
    ("max-length-added", STR, string(maxLength=5), ["MAX_LENGTH_ADDED #/maxLength"], False),
    ("max-length-removed", string(maxLength=5), STR, ["MAX_LENGTH_REMOVED #/maxLength"], True),
    ("pattern-removed", string(pattern="uuid"), STR, ["PATTERN_REMOVED #/pattern"], True),
    ("pattern-added", STR, string(pattern="^a"), ["PATTERN_ADDED #/pattern"], False),
    ("pattern-changed", string(pattern="date-time"), string(pattern="uuid"), ["PATTERN_CHANGED #/pattern"], False),
    ("pattern-same", string(pattern="x"), string(pattern="x"), [], True),
    # -- numbers
    ("maximum-removed", number(maximum=10), NUM, ["MAXIMUM_REMOVED #/maximum"], True),
    ("maximum-increased", number(maximum=10), number(maximum=11), ["MAXIMUM_INCREASED #/maximum"], True),
    ("maximum-decreased", number(maximum=11), number(maximum=10), ["MAXIMUM_DECREASED #/maximum"], False),
    ("maximum-added", NUM, number(maximum=1), ["MAXIMUM_ADDED #/maximum"], False),
    ("minimum-removed", number(minimum=10), NUM, ["MINIMUM_REMOVED #/minimum"], True),
    ("minimum-increased", number(minimum=10), number(minimum=11), ["MINIMUM_INCREASED #/minimum"], False),
    ("minimum-decreased", number(minimum=11), number(minimum=10), ["MINIMUM_DECREASED #/minimum"], True),
    ("exclusive-maximum-decreased", number(exclusiveMaximum=5), number(exclusiveMaximum=4),
     ["EXCLUSIVE_MAXIMUM_DECREASED #/exclusiveMaximum"], False),
    ("exclusive-minimum-decreased", number(exclusiveMinimum=5), number(exclusiveMinimum=4),
     ["EXCLUSIVE_MINIMUM_DECREASED #/exclusiveMinimum"], True),
    ("draft4-boolean-exclusive-maximum-added", {"$schema": D4, "type": "number", "maximum": 5},
     {"$schema": D4, "type": "number", "maximum": 5, "exclusiveMaximum": True},
     ["MAXIMUM_REMOVED #/maximum", "EXCLUSIVE_MAXIMUM_ADDED #/exclusiveMaximum"], False),
    ("multiple-of-removed", number(multipleOf=10), NUM, ["MULTIPLE_OF_REMOVED #/multipleOf"], True),
    ("multiple-of-reduced", number(multipleOf=10), number(multipleOf=2), ["MULTIPLE_OF_REDUCED #/multipleOf"], True),
    ("multiple-of-expanded", number(multipleOf=2), number(multipleOf=10), ["MULTIPLE_OF_EXPANDED #/multipleOf"], False),
    ("multiple-of-changed", number(multipleOf=10), number(multipleOf=11), ["MULTIPLE_OF_CHANGED #/multipleOf"], False),
    ("multiple-of-decimal-reduced", number(multipleOf=0.5), number(multipleOf=0.25),
     ["MULTIPLE_OF_REDUCED #/multipleOf"], True),
    # -- not, enum, const
    ("not-narrowed", {"not": NUM}, {"not": INT}, ["NOT_TYPE_NARROWED #/not"], True),
    ("not-extended", {"not": INT}, {"not": NUM}, ["NOT_TYPE_EXTENDED #/not"], False),
    ("enum-removed-from-string", {"type": "string", "enum": ["red"]}, STR, ["PRODUCT_TYPE_NARROWED #/"], True),
    ("enum-changed-in-allof", {"allOf": [STR, {"enum": ["red"]}]}, {"allOf": [STR, {"enum": ["blue"]}]},
     ["COMBINED_TYPE_SUBSCHEMAS_CHANGED #/"], False),
    ("enum-extended-in-allof", {"allOf": [STR, {"enum": ["red"]}]}, {"allOf": [{"enum": ["red", "blue"]}, STR]},
     ["ENUM_ARRAY_EXTENDED #/allOf/1/enum"], True),
    ("enum-extended", {"enum": ["a"]}, {"enum": ["a", "b"]}, ["ENUM_ARRAY_EXTENDED #/enum"], True),
    ("enum-narrowed", {"enum": ["a", "b"]}, {"enum": ["a"]}, ["ENUM_ARRAY_NARROWED #/enum"], False),
    ("enum-changed", {"enum": ["a", "b"]}, {"enum": ["a", "c"]}, ["ENUM_ARRAY_CHANGED #/enum"], False),
    ("const-to-enum", {"const": "a"}, {"enum": ["a", "b"]}, ["ENUM_ARRAY_EXTENDED #/enum"], True),
    # -- combined schemas
    ("type-array-extended", {"type": ["object"]}, {"type": ["object", "array"]}, ["SUM_TYPE_EXTENDED #/"], True),
    ("type-array-narrowed", {"type": ["string", "null"]}, {"type": ["string"]}, ["SUM_TYPE_NARROWED #/"], False),
    ("oneof-subschema-changed", {"oneOf": [STR]}, {"oneOf": [NUM]}, ["COMBINED_TYPE_SUBSCHEMAS_CHANGED #/"], False),
    ("oneof-extended", {"oneOf": [STR]}, {"oneOf": [NUM, STR]}, ["SUM_TYPE_EXTENDED #/"], True),
    ("oneof-narrowed", {"oneOf": [NUM, STR]}, {"oneOf": [STR]}, ["SUM_TYPE_NARROWED #/"], False),
    ("composed-subschema-changed", {"oneOf": [obj({"foo": STR})]}, {"oneOf": [obj({"foo": NUM})]},
     ["COMBINED_TYPE_SUBSCHEMAS_CHANGED #/"], False),
    # a singleton oneOf/anyOf to a singleton allOf is the same constraint (Confluent's current rule)
    ("singleton-oneof-to-allof", {"oneOf": [STR]}, {"allOf": [STR]}, ["COMBINED_TYPE_EXTENDED #/"], True),
    ("oneof-to-allof", {"oneOf": [STR, NUM]}, {"allOf": [STR, NUM]}, ["COMBINED_TYPE_CHANGED #/"], False),
    ("oneof-to-anyof", {"oneOf": [STR, NUM]}, {"anyOf": [STR, NUM]}, ["COMBINED_TYPE_EXTENDED #/"], True),
    ("anyof-to-oneof", {"anyOf": [STR, NUM]}, {"oneOf": [STR, NUM]}, ["COMBINED_TYPE_CHANGED #/"], False),
    ("allof-extended", {"allOf": [STR]}, {"allOf": [STR, {"maxLength": 3}]}, ["PRODUCT_TYPE_EXTENDED #/"], False),
    ("string-to-oneof", STR, {"oneOf": [NUM, STR]}, ["SUM_TYPE_EXTENDED #/"], True),
    ("null-to-optional-oneof", NUL, {"oneOf": [NUM, NUL]}, ["SUM_TYPE_EXTENDED #/"], True),
    ("bounded-string-to-oneof", string(maxLength=3), {"oneOf": [NUM, STR]},
     ["MAX_LENGTH_REMOVED #/maxLength", "SUM_TYPE_EXTENDED #/"], True),
    ("string-to-oneof-without-it", STR, {"oneOf": [NUM, NUL]}, ["TYPE_CHANGED #/"], False),
    # -- objects: properties and content models
    ("properties-renamed-in-open-model", obj({"foo": STR}), obj({"bar": STR}),
     ["OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/bar",
      "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL #/properties/foo"], False),
    ("property-type-changed", obj({"foo": STR}), obj({"foo": NUM}), ["TYPE_CHANGED #/properties/foo"], False),
    ("property-added-to-open-model", obj({"foo": STR}), obj({"foo": STR, "bar": NUM}),
     ["OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/bar"], False),
    ("optional-property-added-to-closed-model", obj({"foo": STR}, additionalProperties=False),
     obj({"foo": STR, "bar": NUM}, additionalProperties=False),
     ["OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/bar"], True),
    ("required-property-added-to-closed-model", obj({"foo": STR}, additionalProperties=False),
     obj({"foo": STR, "bar": NUM}, additionalProperties=False, required=["bar"]),
     ["REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/bar"], False),
    ("required-property-with-default-added", obj({"foo": STR}, additionalProperties=False),
     obj({"foo": STR, "bar": number(default=0)}, additionalProperties=False, required=["bar"]),
     ["REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/bar"], True),
    ("property-added-covered-by-pattern",
     obj({"foo": STR}, additionalProperties=False, patternProperties={"^S_": STR, "^I_": INT}),
     obj({"foo": STR, "I_123": NUM}, additionalProperties=False, patternProperties={"^S_": STR, "^I_": INT}),
     ["TYPE_EXTENDED #/properties/I_123",
      "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/I_123",
      "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/I_123"], True),
    ("property-added-covered-by-additional", obj({"foo": STR}, additionalProperties=STR),
     obj({"foo": STR, "bar": STR}, additionalProperties=STR),
     ["PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/bar",
      "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/bar"], True),
    ("property-added-not-covered", obj({"foo": STR}, additionalProperties=STR),
     obj({"foo": STR, "bar": NUM}, additionalProperties=STR),
     ["TYPE_CHANGED #/properties/bar",
      "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/bar",
      "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/bar"], False),
    ("required-property-added-to-partial-model", obj({"foo": STR}, additionalProperties=STR),
     obj({"foo": STR, "bar": STR}, additionalProperties=STR, required=["bar"]),
     ["PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/bar",
      "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/bar"], False),
    ("property-removed-covered-by-pattern", obj({"foo": STR, "I_123": INT}, additionalProperties=False),
     obj({"foo": STR}, additionalProperties=False, patternProperties={"^S_": STR, "^I_": NUM}),
     ["TYPE_EXTENDED #/properties/I_123",
      "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/I_123"], True),
    ("property-removed-covered-by-additional", obj({"foo": STR, "bar": STR}, additionalProperties=False),
     obj({"foo": STR}, additionalProperties=STR),
     ["PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/bar",
      "ADDITIONAL_PROPERTIES_ADDED #/additionalProperties"], True),
    ("property-removed-not-covered", obj({"foo": STR, "bar": NUM}, additionalProperties=False),
     obj({"foo": STR}, additionalProperties=STR),
     ["TYPE_CHANGED #/properties/bar",
      "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/bar",
      "ADDITIONAL_PROPERTIES_ADDED #/additionalProperties"], False),
    ("property-removed-covered-by-oneof", obj({"foo": STR, "bar": STR}, additionalProperties=False),
     obj({"foo": STR}, additionalProperties={"oneOf": [NUL, STR]}),
     ["SUM_TYPE_EXTENDED #/properties/bar",
      "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/bar",
      "ADDITIONAL_PROPERTIES_ADDED #/additionalProperties"], True),
    ("property-removed-from-closed-model", obj({"foo": STR, "bar": STR}, additionalProperties=False),
     obj({"foo": STR}, additionalProperties=False),
     ["PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL #/properties/bar"], False),
    ("empty-property-added-to-open-model", OPEN, {"additionalProperties": True, "properties": {"foo": True}},
     ["PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL #/properties/foo"], True),
    ("empty-property-removed-from-open-model", {"additionalProperties": True, "properties": {"foo": True}}, OPEN,
     ["PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL #/properties/foo"], True),
    ("false-property-added-to-closed-model", CLOSED, {"additionalProperties": False, "properties": {"foo": False}},
     ["OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/foo"], True),
    ("false-property-removed-from-closed-model", {"additionalProperties": False, "properties": {"foo": False}}, CLOSED,
     ["PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL #/properties/foo"], True),
    # -- objects: required, dependencies, additionalProperties, sizes
    ("required-removed", obj({"foo": STR}, required=["foo"]), obj({"foo": STR}),
     ["REQUIRED_ATTRIBUTE_REMOVED #/required/foo"], True),
    ("required-added", obj({"foo": STR}), obj({"foo": STR}, required=["foo"]),
     ["REQUIRED_ATTRIBUTE_ADDED #/required/foo"], False),
    ("required-with-default-added", obj({"foo": string(default="x")}),
     obj({"foo": string(default="x")}, required=["foo"]),
     ["REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED #/required/foo"], True),
    ("required-changed-to-undeclared", obj({"foo": STR}, required=["foo"]), obj({"foo": STR}, required=["bar"]),
     ["REQUIRED_ATTRIBUTE_REMOVED #/required/foo"], True),
    ("dependency-array-moved", obj({"foo": NUM, "bar": STR}, dependencies={"foo": ["bar"]}),
     obj({"foo": NUM, "bar": STR}, dependencies={"bar": ["foo"]}),
     ["DEPENDENCY_ARRAY_REMOVED #/dependencies/foo", "DEPENDENCY_ARRAY_ADDED #/dependencies/bar"], False),
    ("dependency-array-extended", {"dependencies": {"a": ["b"]}}, {"dependencies": {"a": ["b", "c"]}},
     ["DEPENDENCY_ARRAY_EXTENDED #/dependencies/a"], False),
    ("dependency-array-narrowed", {"dependencies": {"a": ["b", "c"]}}, {"dependencies": {"a": ["b"]}},
     ["DEPENDENCY_ARRAY_NARROWED #/dependencies/a"], True),
    ("dependency-schema-removed", {"dependencies": {"foo": STR, "bar": STR}}, {"dependencies": {"foo": STR}},
     ["DEPENDENCY_SCHEMA_REMOVED #/dependencies/bar"], True),
    ("dependency-schema-type-changed", {"dependencies": {"foo": STR}}, {"dependencies": {"foo": NUM}},
     ["TYPE_CHANGED #/dependencies/foo"], False),
    ("dependency-schema-renamed", {"dependencies": {"foo": STR}}, {"dependencies": {"bar": STR}},
     ["DEPENDENCY_SCHEMA_REMOVED #/dependencies/foo", "DEPENDENCY_SCHEMA_ADDED #/dependencies/bar"], False),
    ("max-properties-removed", {"properties": {}, "maxProperties": 1}, {"properties": {}},
     ["MAX_PROPERTIES_REMOVED #/maxProperties"], True),
    ("max-properties-increased", {"maxProperties": 1}, {"maxProperties": 2},
     ["MAX_PROPERTIES_INCREASED #/maxProperties"], True),
    ("max-properties-decreased", {"maxProperties": 2}, {"maxProperties": 1},
     ["MAX_PROPERTIES_DECREASED #/maxProperties"], False),
    ("min-properties-increased", {"minProperties": 1}, {"minProperties": 2},
     ["MIN_PROPERTIES_INCREASED #/minProperties"], False),
    ("min-properties-decreased", {"minProperties": 2}, {"minProperties": 1},
     ["MIN_PROPERTIES_DECREASED #/minProperties"], True),
    ("additional-properties-allowed", {"properties": {}, "additionalProperties": False}, {"properties": {}},
     ["ADDITIONAL_PROPERTIES_ADDED #/additionalProperties"], True),
    ("additional-properties-forbidden", OPEN, CLOSED, ["ADDITIONAL_PROPERTIES_REMOVED #/additionalProperties"], False),
    ("additional-properties-narrowed", OPEN, {"additionalProperties": NUM},
     ["ADDITIONAL_PROPERTIES_NARROWED #/additionalProperties"], False),
    ("additional-properties-schema-changed", {"additionalProperties": STR}, {"additionalProperties": NUM},
     ["TYPE_CHANGED #/additionalProperties"], False),
    # -- arrays
    ("items-schema-added", {"type": "array"}, arr(STR), ["SCHEMA_ADDED #/items"], False),
    ("items-schema-removed", arr(STR), {"type": "array"}, ["SCHEMA_REMOVED #/items"], True),
    ("items-type-widened", arr(INT), arr(NUM), ["TYPE_EXTENDED #/items"], True),
    ("tuple-removed-from-open-model", arr([STR, NUM]), {"type": "array"},
     ["ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL #/items/0", "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL #/items/1"], True),
    ("tuple-item-added-covered", arr([STR, NUM], additionalItems=STR), arr([STR, NUM, STR], additionalItems=STR),
     ["ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/items/2"], True),
    ("tuple-item-added-not-covered", arr([STR, NUM], additionalItems=STR), arr([STR, NUM, NUM], additionalItems=STR),
     ["TYPE_CHANGED #/items/2", "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/items/2"], False),
    ("tuple-item-removed-covered", arr([STR, NUM, STR], additionalItems=STR), arr([STR, NUM], additionalItems=STR),
     ["ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/items/2"], True),
    ("tuple-item-removed-not-covered", arr([STR, NUM, NUM], additionalItems=STR), arr([STR, NUM], additionalItems=STR),
     ["TYPE_CHANGED #/items/2", "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/items/2"], False),
    ("tuple-item-type-changed", arr([STR]), arr([NUM]), ["TYPE_CHANGED #/items/0"], False),
    ("tuple-item-added-to-closed", arr([STR], additionalItems=False), arr([STR, NUM], additionalItems=False),
     ["ITEM_ADDED_TO_CLOSED_CONTENT_MODEL #/items/1"], True),
    ("tuple-item-added-to-open", arr([NUM], additionalItems=True), arr([NUM, STR], additionalItems=True),
     ["ITEM_ADDED_TO_OPEN_CONTENT_MODEL #/items/1"], False),
    ("tuple-empty-item-added-to-open", arr([NUM], additionalItems=True), arr([NUM, True], additionalItems=True),
     ["ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL #/items/1"], True),
    ("tuple-false-item-removed-from-closed", arr([NUM, False], additionalItems=False),
     arr([NUM], additionalItems=False),
     ["ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL #/items/1"], True),
    ("tuple-item-removed-from-closed", arr([NUM, STR], additionalItems=False), arr([NUM], additionalItems=False),
     ["ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL #/items/1"], False),
    ("tuple-closed-to-open", arr([STR, NUM], additionalItems=False), arr([STR, NUM, {"type": "boolean"}]),
     ["ITEM_ADDED_TO_CLOSED_CONTENT_MODEL #/items/2", "ADDITIONAL_ITEMS_ADDED #/additionalItems"], True),
    ("tuple-partial-to-open", arr([STR], additionalItems=NUM), arr([STR, NUM], additionalItems=True),
     ["ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/items/1",
      "ADDITIONAL_ITEMS_EXTENDED #/additionalItems"], True),
    ("additional-items-forbidden", {"additionalItems": True}, {"additionalItems": False},
     ["ADDITIONAL_ITEMS_REMOVED #/additionalItems"], False),
    ("max-items-decreased", {"type": "array", "maxItems": 2}, {"type": "array", "maxItems": 1},
     ["MAX_ITEMS_DECREASED #/maxItems"], False),
    ("min-items-removed", {"type": "array", "minItems": 1}, {"type": "array"}, ["MIN_ITEMS_REMOVED #/minItems"], True),
    ("min-items-increased", {"type": "array", "minItems": 1}, {"type": "array", "minItems": 2},
     ["MIN_ITEMS_INCREASED #/minItems"], False),
    ("unique-items-removed", {"type": "array", "uniqueItems": True}, {"type": "array"},
     ["UNIQUE_ITEMS_REMOVED #/uniqueItems"], True),
    ("unique-items-added", {"type": "array"}, {"type": "array", "uniqueItems": True},
     ["UNIQUE_ITEMS_ADDED #/uniqueItems"], False),
    ("prefix-items-2020-added-to-closed", {"$schema": D2020, "type": "array", "prefixItems": [STR], "items": False},
     {"$schema": D2020, "type": "array", "prefixItems": [STR, NUM], "items": False},
     ["ITEM_ADDED_TO_CLOSED_CONTENT_MODEL #/items/1"], True),
    ("prefix-items-2020-removed-from-closed",
     {"$schema": D2020, "type": "array", "prefixItems": [STR, NUM], "items": False},
     {"$schema": D2020, "type": "array", "prefixItems": [STR], "items": False},
     ["ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL #/items/1"], False),
    # -- unevaluated* (2019-09 / 2020-12)
    ("unevaluated-properties-closed-model",
     {"$schema": D2020, "properties": {"a": STR}, "unevaluatedProperties": False},
     {"$schema": D2020, "properties": {"a": STR, "b": NUM}, "unevaluatedProperties": False},
     ["OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/b"], True),
    ("unevaluated-properties-forbidden", {"$schema": D2020, "properties": {"a": STR}},
     {"$schema": D2020, "properties": {"a": STR}, "unevaluatedProperties": False},
     ["UNEVALUATED_PROPERTIES_REMOVED #/unevaluatedProperties"], False),
    ("unevaluated-properties-allowed", {"$schema": D2020, "properties": {"a": STR}, "unevaluatedProperties": False},
     {"$schema": D2020, "properties": {"a": STR}},
     ["UNEVALUATED_PROPERTIES_ADDED #/unevaluatedProperties"], True),
    ("unevaluated-properties-partial-covers-removed",
     {"$schema": D2020, "properties": {"a": STR, "b": STR}, "unevaluatedProperties": False},
     {"$schema": D2020, "properties": {"a": STR}, "unevaluatedProperties": STR},
     ["PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/b",
      "UNEVALUATED_PROPERTIES_ADDED #/unevaluatedProperties"], True),
    ("unevaluated-properties-ignored-before-2019", {"properties": {"a": STR}},
     {"properties": {"a": STR}, "unevaluatedProperties": False},
     [], True),
    ("unevaluated-items-narrowed", {"$schema": D2020, "type": "array", "prefixItems": [STR]},
     {"$schema": D2020, "type": "array", "prefixItems": [STR], "unevaluatedItems": NUM},
     ["UNEVALUATED_ITEMS_NARROWED #/unevaluatedItems"], False),
    # -- references
    ("local-ref-target-changed", arr({"$ref": "#/definitions/r"}, definitions={"r": STR}),
     arr({"$ref": "#/definitions/r"}, definitions={"r": NUM}),
     ["TYPE_CHANGED #/items"], False),
    ("moved-into-ref", STR, {"$ref": "#/definitions/r", "definitions": {"r": STR}}, [], True),
    ("moved-out-of-ref", {"$ref": "#/definitions/r", "definitions": {"r": STR}}, STR, [], True),
    ("recursive-schema-unchanged",
     {"$defs": {"node": obj({"next": {"$ref": "#/$defs/node"}, "v": INT})}, "$ref": "#/$defs/node"},
     {"$defs": {"node": obj({"next": {"$ref": "#/$defs/node"}, "v": INT})}, "$ref": "#/$defs/node"},
     [], True),
    ("recursive-schema-widened",
     {"$defs": {"node": obj({"next": {"$ref": "#/$defs/node"}, "v": INT})}, "$ref": "#/$defs/node"},
     {"$defs": {"node": obj({"next": {"$ref": "#/$defs/node"}, "v": NUM})}, "$ref": "#/$defs/node"},
     ["TYPE_EXTENDED #/properties/v"], True),
    # -- combiners changing (Confluent's diff-combined-schema-examples): more parts are judged by the new
    #    combiner, fewer by the old one; allOf turned into a singleton only dropped conditions
    ("allof-to-anyof-fewer", {"allOf": [NUM, STR]}, {"anyOf": [STR]},
     ["COMBINED_TYPE_EXTENDED #/", "PRODUCT_TYPE_NARROWED #/"], True),
    ("allof-to-oneof-fewer", {"allOf": [NUM, STR]}, {"oneOf": [STR]},
     ["COMBINED_TYPE_EXTENDED #/", "PRODUCT_TYPE_NARROWED #/"], True),
    ("oneof-to-anyof-fewer", {"oneOf": [NUM, STR]}, {"anyOf": [STR]},
     ["COMBINED_TYPE_EXTENDED #/", "SUM_TYPE_NARROWED #/"], False),
    ("anyof-to-oneof-fewer", {"anyOf": [NUM, STR]}, {"oneOf": [STR]}, ["COMBINED_TYPE_CHANGED #/"], False),
    ("allof-to-oneof-more", {"allOf": [NUM]}, {"oneOf": [NUM, STR]},
     ["COMBINED_TYPE_EXTENDED #/", "SUM_TYPE_EXTENDED #/"], True),
    ("anyof-to-allof-more", {"anyOf": [STR]}, {"allOf": [NUM, STR]}, ["COMBINED_TYPE_CHANGED #/"], False),
    ("string-to-allof-of-two", STR, {"allOf": [NUM, STR]}, ["TYPE_CHANGED #/"], False),
    # a combination turned into one schema (Confluent's rule for a non-combined update)
    ("allof-to-one-of-its-parts", {"allOf": [NUM, STR]}, STR, ["PRODUCT_TYPE_NARROWED #/"], True),
    ("allof-to-its-base-type", {"allOf": [STR, {"maxLength": 3}]}, STR, ["PRODUCT_TYPE_NARROWED #/"], True),
    ("anyof-to-one-of-its-branches", {"anyOf": [NUM, STR]}, STR, ["TYPE_CHANGED #/"], False),
    ("single-type-array-to-type", {"type": ["string"]}, STR, [], True),
    ("const-changed", obj({"foo": {"const": "red"}}), obj({"foo": {"const": "blue"}}),
     ["ENUM_ARRAY_CHANGED #/properties/foo/const"], False),
    # -- nesting
    ("nested-property-bound", obj({"a": obj({"b": string(maxLength=5)})}), obj({"a": obj({"b": string(maxLength=4)})}),
     ["MAX_LENGTH_DECREASED #/properties/a/properties/b/maxLength"], False),
]  # fmt: skip


def _parse(schema: object):
    return JsonSchemaType().parse(json.dumps(schema)).parsed


@pytest.mark.parametrize(
    ("original", "update", "changes", "compatible"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_diff_kinds_paths_and_verdict(original: object, update: object, changes: list[str], compatible: bool) -> None:
    is_compatible = json_schema_changes.is_compatible_change
    assert_diff_case(json_compat, is_compatible, _parse(original), _parse(update), changes, compatible)


def test_case_count() -> None:
    assert len(CASES) >= 60


# -- compatibilityPolicy: (original, update, changes, compatible under STRICT, compatible under LENIENT), from
#    Confluent's corpus ("compatible_lenient") and its add/remove x optional/required x open/closed matrix
NAME = {"name": STR}
NAME_EMAIL = {"name": STR, "email": STR}
POLICY_CASES: list[tuple[str, object, object, list[str], bool, bool]] = [
    ("add-optional-to-closed", obj(NAME, required=["name"], **CLOSED), obj(NAME_EMAIL, required=["name"], **CLOSED),
     ["OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/email"], True, True),
    ("add-optional-to-open", obj(NAME, required=["name"], **OPEN), obj(NAME_EMAIL, required=["name"], **OPEN),
     ["OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/email"], False, True),
    ("remove-optional-from-closed", obj(NAME_EMAIL, required=["name"], **CLOSED),
     obj(NAME, required=["name"], **CLOSED),
     ["PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL #/properties/email"], False, True),
    ("remove-optional-from-open", obj(NAME_EMAIL, required=["name"], **OPEN), obj(NAME, required=["name"], **OPEN),
     ["PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL #/properties/email"], True, True),
    ("add-required-to-closed", obj(NAME, required=["name"], **CLOSED),
     obj(NAME_EMAIL, required=["name", "email"], **CLOSED),
     ["REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/email"], False, False),
    ("add-required-to-open", obj(NAME, required=["name"], **OPEN), obj(NAME_EMAIL, required=["name", "email"], **OPEN),
     ["REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/email"], False, False),
    ("add-required-with-default-to-open", obj(NAME, **OPEN),
     obj({"name": STR, "email": string(default="")}, required=["email"], **OPEN),
     ["REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL #/properties/email"], False, True),
    ("remove-required-from-closed", obj(NAME_EMAIL, required=["name", "email"], **CLOSED),
     obj(NAME, required=["name"], **CLOSED),
     ["PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL #/properties/email"], False, True),
    ("remove-required-from-open", obj(NAME_EMAIL, required=["name", "email"], **OPEN),
     obj(NAME, required=["name"], **OPEN),
     ["PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL #/properties/email"], True, True),
    ("additional-properties-forbidden", OPEN, CLOSED,
     ["ADDITIONAL_PROPERTIES_REMOVED #/additionalProperties"], False, True),
    ("additional-properties-narrowed", OPEN, {"additionalProperties": NUM},
     ["ADDITIONAL_PROPERTIES_NARROWED #/additionalProperties"], False, True),
    ("unevaluated-properties-narrowed", {"$schema": D2020, "properties": {"a": STR}},
     {"$schema": D2020, "properties": {"a": STR}, "unevaluatedProperties": NUM},
     ["UNEVALUATED_PROPERTIES_NARROWED #/unevaluatedProperties"], False, True),
    ("property-added-not-covered", obj({"a": STR}, additionalProperties=NUM),
     obj({"a": STR, "b": STR}, additionalProperties=NUM),
     ["TYPE_CHANGED #/properties/b",
      "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/b",
      "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/b"], False, False),
    # lenient relaxes object content models only: types, bounds and arrays stay strict
    ("type-changed", obj({"a": STR}), obj({"a": NUM}), ["TYPE_CHANGED #/properties/a"], False, False),
    ("item-added-to-open-tuple", arr([STR]), arr([STR, NUM]),
     ["ITEM_ADDED_TO_OPEN_CONTENT_MODEL #/items/1"], False, False),
    # the policy also decides which alternatives match: under LENIENT the widened object still matches
    ("oneof-branch-gains-optional-property", {"oneOf": [obj({"a": STR}), NUM]},
     {"oneOf": [obj({"a": STR, "b": STR}), NUM]},
     ["COMBINED_TYPE_SUBSCHEMAS_CHANGED #/"], False, True),
]  # fmt: skip


@pytest.mark.parametrize(
    ("original", "update", "changes", "strict", "lenient"),
    [case[1:] for case in POLICY_CASES],
    ids=[case[0] for case in POLICY_CASES],
)
def test_compatibility_policy(
    original: object, update: object, changes: list[str], strict: bool, lenient: bool
) -> None:
    old, new = _parse(original), _parse(update)
    assert sorted(f"{d.kind} {d.path}" for d in json_compat.diff(old, new)) == sorted(changes)
    assert (json_compat.check(reader=new, writer=old) == []) is strict
    assert (json_compat.check(reader=new, writer=old, policy=CompatibilityPolicy.STRICT) == []) is strict
    assert (json_compat.check(reader=new, writer=old, policy=CompatibilityPolicy.LENIENT) == []) is lenient
    # the registry's entry point passes the policy through
    assert (JsonSchemaType().check(_parsed(update), _parsed(original), CompatibilityPolicy.LENIENT) == []) is lenient


def test_lenient_match_inside_a_combination_reports_the_matched_branch() -> None:
    old = _parse({"oneOf": [obj({"a": STR}), NUM]})
    new = _parse({"oneOf": [obj({"a": STR, "b": STR}), NUM]})
    found = [f"{d.kind} {d.path}" for d in json_compat.diff(old, new, CompatibilityPolicy.LENIENT)]
    assert found == ["OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/oneOf/0/properties/b"]


def test_lenient_set_is_confluents() -> None:
    assert {
        "ADDITIONAL_PROPERTIES_NARROWED",
        "ADDITIONAL_PROPERTIES_REMOVED",
        "UNEVALUATED_PROPERTIES_NARROWED",
        "UNEVALUATED_PROPERTIES_REMOVED",
        "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL",
        "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    } == json_schema_changes.COMPATIBLE_CHANGES_LENIENT - json_schema_changes.COMPATIBLE_CHANGES


def test_messages_as_confluent_prints_them_in_both_directions() -> None:
    old, new = _parse(obj({"a": STR})), _parse(obj({"a": STR, "b": NUM}))
    assert_reported_as(
        json_compat.check(reader=new, writer=old),
        '{errorType:"OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", description:"The new schema has an open '
        "content model and has a property or item at path '#/properties/b' which is missing in the old schema'}",
        "The old schema has an open content model and has a property or item at path '#/properties/b' which is "
        "missing in the new schema",
    )


def _parsed(schema: object):
    return JsonSchemaType().parse(json.dumps(schema))
