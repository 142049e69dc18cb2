"""The schema model of the JSON Schema diff (:mod:`compat.json_schema`): a schema as a tree of nodes of one kind
each, as everit (the Java validator Confluent diffs over) loads it.

A node is one kind: empty (``true``/``{}``), false, string, number (integer flag), boolean, null, object, array,
enum (``const`` counts as a one-value enum), not, or combined (``allOf``/``anyOf``/``oneOf``). A node mixing kinds
(``{"type": "string", "enum": [...]}``) is a synthetic ``allOf`` of its parts; a type array is an ``anyOf``;
``$ref`` is followed. Nodes are built lazily (:meth:`Node.sub`) and memoized per check in its
:class:`SchemaWalk`, so a subschema reached along many paths is resolved and built once.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urljoin

from compat.limits import Walk

__all__ = ["JsonSchemaLike", "Node", "SchemaWalk", "build"]


class JsonSchemaLike(Protocol):
    root: Any
    base_uri: str

    @property
    def draft(self) -> str: ...

    def resolve(self, ref: str, base_uri: str) -> tuple[Any, str]: ...


_OBJECT_KEYWORDS = frozenset(
    {
        "properties",
        "required",
        "additionalProperties",
        "patternProperties",
        "dependencies",
        "dependentRequired",
        "dependentSchemas",
        "minProperties",
        "maxProperties",
        "propertyNames",
        "unevaluatedProperties",
    }
)
_ARRAY_KEYWORDS = frozenset(
    {
        "items",
        "prefixItems",
        "additionalItems",
        "minItems",
        "maxItems",
        "uniqueItems",
        "contains",
        "minContains",
        "maxContains",
        "unevaluatedItems",
    }
)
_STRING_KEYWORDS = frozenset({"minLength", "maxLength", "pattern"})
_NUMBER_KEYWORDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
_TYPE_KINDS = {
    "string": "STRING",
    "integer": "NUMBER",
    "number": "NUMBER",
    "boolean": "BOOLEAN",
    "null": "NULL",
    "object": "OBJECT",
    "array": "ARRAY",
}
_IMPLICIT = (
    ("OBJECT", _OBJECT_KEYWORDS),
    ("ARRAY", _ARRAY_KEYWORDS),
    ("STRING", _STRING_KEYWORDS),
    ("NUMBER", _NUMBER_KEYWORDS),
)
_CRITERIA = ("allOf", "anyOf", "oneOf")


class SchemaWalk(Walk):
    """A check's walk and what it memoizes, so that a subschema reached along many paths (a diamond of
    references) is resolved, built and compared once: ``$ref`` targets, nodes by (document, schema object,
    base URI), and comparisons by node pair with their differences relative to where they were found.
    A result that relied on a recursion being cut (``cuts`` moved meanwhile) is not memoized: it assumed
    the pair in progress further up to be compatible."""

    __slots__ = ("compared", "cuts", "fingerprints", "nodes", "resolved")

    def __init__(self) -> None:
        super().__init__()
        self.resolved: dict[tuple[int, str, str], tuple[Any, str]] = {}
        self.nodes: dict[tuple[int, int, str], Node] = {}
        # (id(original), id(update)) -> (original, update, [(kind, path below the pair)]); keeping the
        # nodes keeps their ids unique
        self.compared: dict[tuple[int, int], tuple[Node, Node, list[tuple[str, str]]]] = {}
        self.cuts = 0
        self.fingerprints: dict[int, bytes] = {}

    def fingerprint(self, value: Any) -> bytes:
        """A digest identifying a JSON value by content (object key order aside). Each object and array is
        digested once per check, from its members' digests: identifying nested subschemas at every level
        costs linear time in all, where ``repr`` at each level would cost depth x size."""
        if isinstance(value, dict):
            found = self.fingerprints.get(id(value))
            if found is None:
                members = sorted((self.fingerprint(k), self.fingerprint(v)) for k, v in value.items())
                found = self.fingerprints[id(value)] = _digest(b"{", *(d for pair in members for d in pair))
            return found
        if isinstance(value, list):
            found = self.fingerprints.get(id(value))
            if found is None:
                found = self.fingerprints[id(value)] = _digest(b"[", *(self.fingerprint(v) for v in value))
            return found
        return _digest(type(value).__name__.encode(), repr(value).encode("utf-8", "surrogatepass"))

    def resolve(self, doc: JsonSchemaLike, ref: str, base: str) -> tuple[Any, str]:
        key = (id(doc), ref, base)
        found = self.resolved.get(key)
        if found is None:
            found = self.resolved[key] = doc.resolve(ref, base)
        return found


def _digest(*parts: bytes) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.digest()


@dataclass(eq=False)
class Node:
    kind: str
    raw: Any  # the schema object the node was built from (its keywords are read from here)
    base: str
    doc: JsonSchemaLike
    integer: bool = False
    const: bool = False  # an ENUM node made from ``const``
    criterion: str = ""
    parts: list[Node] = field(default_factory=list)  # combined subschemas
    values: list[Any] = field(default_factory=list)  # enum values
    meta: dict[str, Any] | None = None  # id/title/description/default owner
    #: what identifies the node among combined subschemas: a tag and the JSON value it was made from
    key: tuple[str, Any] = ("", None)
    #: the check's walk (depth and comparisons), shared by all its nodes
    walk: SchemaWalk = field(default_factory=SchemaWalk)

    def sub(self, value: Any) -> Node | None:
        return None if value is None else build(self.doc, value, self.base, self.walk)

    @property
    def draft2020(self) -> bool:
        return "2020-12" in self.doc.draft

    @property
    def draft4(self) -> bool:
        return "draft-04" in self.doc.draft


def build(doc: JsonSchemaLike, raw: Any, base: str, walk: SchemaWalk, refs: tuple[int, ...] = ()) -> Node:
    """The node for ``raw``; combined subschemas and ``$ref`` targets are built now, everything else
    (properties, items, ...) when a rule reaches it through :meth:`Node.sub`."""
    key = (id(doc), id(raw), base)
    node = walk.nodes.get(key)
    if node is None:
        cuts = walk.cuts
        node = _build_node(doc, raw, base, walk, refs)
        if walk.cuts == cuts:
            walk.nodes[key] = node
    return node


def _build_node(doc: JsonSchemaLike, raw: Any, base: str, walk: SchemaWalk, refs: tuple[int, ...]) -> Node:
    if raw is True or (isinstance(raw, dict) and not _has_assertions(raw)):
        meta = raw if isinstance(raw, dict) else None
        return Node("EMPTY", raw, base, doc, meta=meta, key=("", raw), walk=walk)
    if raw is False or not isinstance(raw, dict):
        return Node("FALSE", raw, base, doc, key=("false", None), walk=walk)
    id_key = "id" if "draft-04" in doc.draft else "$id"
    if isinstance(raw.get(id_key), str) and not raw[id_key].startswith("#"):
        base = urljoin(base, raw[id_key])
    if isinstance(raw.get("$ref"), str):
        if id(raw) in refs:  # a $ref chain that loops without any schema in between accepts anything
            walk.cuts += 1
            return Node("EMPTY", True, base, doc, key=("True", None), walk=walk)
        target, target_base = walk.resolve(doc, raw["$ref"], base)
        walk.down(lambda: raw["$ref"])
        node = build(doc, target, target_base, walk, (*refs, id(raw)))
        walk.up()
        return node
    parts: list[Node] = []
    typed = _typed_part(doc, raw, base, walk)
    if typed is not None:
        parts.append(typed)
    if "enum" in raw and isinstance(raw["enum"], list):
        parts.append(Node("ENUM", raw, base, doc, values=list(raw["enum"]), key=("enum", raw["enum"]), walk=walk))
    if "const" in raw:
        parts.append(
            Node("ENUM", raw, base, doc, values=[raw["const"]], key=("const", raw["const"]), const=True, walk=walk)
        )
    if "not" in raw:
        parts.append(Node("NOT", raw, base, doc, key=("not", raw["not"]), walk=walk))
    for criterion in _CRITERIA:
        if isinstance(raw.get(criterion), list):
            walk.down(lambda: criterion)  # noqa: B023 (called at once)
            subs = [build(doc, s, base, walk, refs) for s in raw[criterion]]
            walk.up()
            parts.append(
                Node(
                    "COMBINED",
                    raw,
                    base,
                    doc,
                    criterion=criterion,
                    parts=subs,
                    key=(criterion, raw[criterion]),
                    walk=walk,
                )
            )
    if not parts:
        return Node("EMPTY", raw, base, doc, meta=raw, key=("", raw), walk=walk)
    # the parts of a synthetic allOf share the node's keywords; only the node itself owns metadata
    node = parts[0] if len(parts) == 1 else Node("COMBINED", raw, base, doc, criterion="allOf", parts=parts, walk=walk)
    node.meta = raw
    node.key = ("", raw)
    return node


def _has_assertions(raw: dict[str, Any]) -> bool:
    annotations = {
        "$schema",
        "$id",
        "id",
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "definitions",
        "$defs",
        "format",
        "readOnly",
        "writeOnly",
        "deprecated",
    }
    return any(k not in annotations for k in raw)


def _typed_part(doc: JsonSchemaLike, raw: dict[str, Any], base: str, walk: SchemaWalk) -> Node | None:
    declared = raw.get("type")
    if isinstance(declared, str):
        return _typed(doc, raw, base, declared, walk)
    if isinstance(declared, list):
        # a type array is an anyOf even with one member (as everit loads it)
        subs = [_typed(doc, raw, base, t, walk) for t in declared if isinstance(t, str)]
        return Node("COMBINED", raw, base, doc, criterion="anyOf", parts=subs, key=("type", declared), walk=walk)
    implicit = [kind for kind, keywords in _IMPLICIT if keywords & raw.keys()]
    if not implicit:
        return None
    if len(implicit) == 1:
        return Node(implicit[0], raw, base, doc, key=(implicit[0], None), walk=walk)
    subs = [Node(kind, raw, base, doc, key=(kind, None), walk=walk) for kind in implicit]
    return Node("COMBINED", raw, base, doc, criterion="anyOf", parts=subs, key=("implicit", None), walk=walk)


def _typed(doc: JsonSchemaLike, raw: dict[str, Any], base: str, type_name: str, walk: SchemaWalk) -> Node:
    kind = _TYPE_KINDS.get(type_name, "EMPTY")
    return Node(kind, raw, base, doc, integer=type_name == "integer", key=(type_name, None), walk=walk)
