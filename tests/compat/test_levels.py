"""The seven compatibility levels over 3-version Avro histories (Confluent's choice of versions and directions)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from compat.levels import CompatibilityLevel, CompatibilityPolicy, check_levels
from registry.schema_types.avro import AvroType
from registry.schema_types.base import ParsedSchema

AVRO = AvroType()
L = CompatibilityLevel


def schema(*fields: dict[str, Any]) -> ParsedSchema:
    return AVRO.parse(json.dumps({"type": "record", "name": "R", "fields": list(fields)}))


A = {"name": "a", "type": "int"}
B = {"name": "b", "type": "int"}
B_DEF = {"name": "b", "type": "int", "default": 0}
C = {"name": "c", "type": "string"}
C_DEF = {"name": "c", "type": "string", "default": ""}

V_A = schema(A)
V_AB = schema(A, B)
V_AB_DEF = schema(A, B_DEF)
V_A_BDEF_CDEF = schema(A, B_DEF, C_DEF)


def verdict(level: CompatibilityLevel, new: ParsedSchema, previous: list[ParsedSchema]) -> tuple[bool, int | None]:
    result = check_levels(level, new, previous, AVRO.check)
    return not result.incompatibilities, result.failed_index


def test_first_version_is_always_accepted() -> None:
    for level in L:
        assert verdict(level, V_AB, []) == (True, None)


def test_none_accepts_anything() -> None:
    assert verdict(L.NONE, schema({"name": "a", "type": "string"}), [V_A, V_AB]) == (True, None)


def test_backward_checks_only_the_latest() -> None:
    # history: [a] -> [a, b default] ; new drops b's default: reads [a, b default] data, not [a] data
    history = [V_A, V_AB_DEF]
    assert verdict(L.BACKWARD, V_AB, history) == (True, None)
    assert verdict(L.BACKWARD_TRANSITIVE, V_AB, history) == (False, 0)


def test_backward_rejects_new_field_without_default() -> None:
    result = check_levels(L.BACKWARD, V_AB, [V_A], AVRO.check)
    assert [i.kind for i in result.incompatibilities] == ["READER_FIELD_MISSING_DEFAULT_VALUE"]
    expected = "in the new schema has no default value and is missing in the old schema"
    assert expected in result.incompatibilities[0].message


def test_forward_checks_only_the_latest_in_the_other_direction() -> None:
    # old readers must read new data: removing b (no default in v2) breaks v2 readers, not v1 readers
    history = [V_A, V_AB]
    assert verdict(L.FORWARD, V_A, history) == (False, 1)
    assert verdict(L.FORWARD, V_AB, [V_AB_DEF, V_A]) == (True, None)
    assert verdict(L.FORWARD_TRANSITIVE, V_A, [V_AB_DEF, V_A]) == (True, None)
    assert verdict(L.FORWARD_TRANSITIVE, V_A, [V_AB, V_A]) == (False, 0)


def test_forward_messages_swap_new_and_old() -> None:
    result = check_levels(L.FORWARD, V_A, [V_AB], AVRO.check)
    [inc] = result.incompatibilities
    assert inc.message == (
        "The field 'b' at path '/fields/1' in the old schema has no default value and is missing in the new schema"
    )


def test_full_needs_both_directions_and_collects_both() -> None:
    assert verdict(L.FULL, V_AB_DEF, [V_A]) == (True, None)
    incompat = schema({"name": "a", "type": "long"}, B)
    result = check_levels(L.FULL, incompat, [V_A], AVRO.check)
    assert [(i.kind, i.path) for i in result.incompatibilities] == [
        ("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1"),  # backward: new reads old
        ("TYPE_MISMATCH", "/fields/0/type"),  # forward: old (int) reads new (long)
    ]


def test_full_transitive_walks_all_versions_newest_first() -> None:
    # v1 [a, b:string] -> v2 [a, b:int default] -> new [a, b:int default, c default]: FULL with v2 holds,
    # but new cannot read v1's string b, which only the transitive level sees
    v1 = schema(A, {"name": "b", "type": "string"})
    history = [v1, V_AB_DEF]
    assert verdict(L.FULL, V_A_BDEF_CDEF, history) == (True, None)
    assert verdict(L.FULL_TRANSITIVE, V_A_BDEF_CDEF, history) == (False, 0)


@pytest.mark.parametrize(
    ("level", "ok"),
    [
        (L.NONE, True),
        (L.BACKWARD, True),
        (L.BACKWARD_TRANSITIVE, False),
        (L.FORWARD, True),
        (L.FORWARD_TRANSITIVE, True),
        (L.FULL, True),
        (L.FULL_TRANSITIVE, False),
    ],
)
def test_every_level_on_one_history(level: CompatibilityLevel, ok: bool) -> None:
    # v1 [a], v2 [a, b default], new [a, b]: new reads v2 data, not v1 data; v1 and v2 read new data
    assert verdict(level, V_AB, [V_A, V_AB_DEF])[0] is ok


def test_levels_parse_case_insensitively() -> None:
    assert L.parse(" full_transitive ") is L.FULL_TRANSITIVE
    with pytest.raises(ValueError):
        L.parse("SIDEWAYS")


@pytest.mark.parametrize(
    ("text", "policy"),
    [
        ("STRICT", CompatibilityPolicy.STRICT),
        ("lenient", CompatibilityPolicy.LENIENT),
        ("Lenient", CompatibilityPolicy.LENIENT),
        (None, None),
        ("", None),
        ("bogus", None),
        ("LOGICAL", None),
    ],  # Confluent's LOGICAL (Flink/Iceberg logical types) is not supported
)
def test_policy_for_name_is_confluents_for_name(text: str | None, policy: CompatibilityPolicy | None) -> None:
    assert CompatibilityPolicy.for_name(text) is policy
