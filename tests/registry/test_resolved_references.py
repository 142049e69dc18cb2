"""``ResolvedReference`` equality and hashing on reference graphs: a diamond of imports is reached along
exponentially many paths, so both must visit each pair of nodes once, and still tell any difference deep down."""

from __future__ import annotations

from registry.schema_types.base import ResolvedReference

LEVELS = 60  # 2**60 paths from the top to the bottom


def diamond(bottom_schema: str = '{"type": "string"}') -> tuple[ResolvedReference, ...]:
    """Each level references both nodes of the level below; built afresh, so two calls share no node."""
    level: tuple[ResolvedReference, ...] = ()
    for i in range(LEVELS - 1, -1, -1):
        schema = bottom_schema if i == LEVELS - 1 else '{"type": "object"}'
        level = tuple(ResolvedReference(f"d-{i}-{s}.json", f"d-{i}-{s}", 1, schema, "JSON", level) for s in "ab")
    return level


def test_equal_diamonds_built_apart_compare_equal() -> None:
    """Compared along every path, this would not end (2**60 paths; the suite's timeout stops it)."""
    one, other = diamond(), diamond()
    assert one[0] is not other[0]
    assert one == other and hash(one) == hash(other)
    assert {one: "parsed"}.get(other) == "parsed"  # the parse cache's lookup


def test_a_difference_at_the_bottom_of_a_diamond_is_seen() -> None:
    one, other = diamond(), diamond('{"type": "integer"}')
    assert one != other
    assert one[0] != other[0]


def test_a_different_name_or_version_is_a_different_reference() -> None:
    node = diamond()[0]
    renamed = ResolvedReference("other.json", node.subject, node.version, node.schema, "JSON", node.references)
    bumped = ResolvedReference(node.name, node.subject, 2, node.schema, "JSON", node.references)
    assert node != renamed and node != bumped
    assert node == ResolvedReference(node.name, node.subject, 1, node.schema, "JSON", diamond()[0].references)
