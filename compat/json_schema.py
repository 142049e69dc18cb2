"""JSON Schema compatibility: Confluent's structural diff (``json-schema-provider/.../diff``).

Direction. Confluent defines ``SchemaDiff.compare(original, update)`` and calls a change compatible
when every difference is in ``COMPATIBLE_CHANGES`` (:mod:`compat.json_schema_changes`, with the change kinds
and their messages); ``new.isBackwardCompatible(previous)`` diffs
(original=previous, update=new), i.e. "update accepts everything original accepted", i.e. a consumer
using ``update`` can read what a producer using ``original`` wrote. So "reader can read writer's
data" is ``diff(original=writer, update=reader)``, which is what :func:`check` computes; it plugs
into ``compat.levels.check_levels`` unchanged (BACKWARD: reader=new, writer=old; FORWARD: reverse).

Model. :mod:`compat.json_schema_model` builds each schema as a tree of nodes of one kind each, as everit (the
Java validator Confluent diffs over) loads it; the rules here compare two trees node by node (recursion is cut
when a pair is already being compared).

Inputs are duck-typed (this package imports nothing of schemakit): ``root`` (the schema),
``base_uri``, ``draft`` (the ``$schema`` URI of the dialect) and ``resolve(ref, base_uri) ->
(subschema, base_uri)``. Paths are Confluent's (``#/properties/foo/maxLength``).

Policy. Under ``CompatibilityPolicy.LENIENT`` the changes in ``COMPATIBLE_CHANGES_LENIENT`` count as
compatible too; the policy also decides which subschemas match inside combinations and content models.

Hostile input. ``patternProperties`` patterns run on RE2 (:mod:`compat.patterns`, linear time); a pattern
RE2 cannot run is never assumed to cover a property (the change is reported as not covered). Walks deeper
than :data:`compat.limits.MAX_DEPTH` raise :class:`compat.limits.SchemaTooDeepError`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Final, Literal

from compat.json_schema_changes import (
    compatible_changes,
    describe,
)
from compat.json_schema_model import JsonSchemaLike, Node, SchemaWalk, build
from compat.levels import CompatibilityPolicy
from compat.limits import no_recursion_error
from compat.patterns import Patterns
from compat.result import Incompatibility


def check(
    reader: JsonSchemaLike, writer: JsonSchemaLike, policy: CompatibilityPolicy = CompatibilityPolicy.STRICT
) -> list[Incompatibility]:
    """Incompatibilities preventing ``reader`` from reading data written with ``writer`` under ``policy``."""
    allowed = compatible_changes(policy)
    return [d for d in diff(writer, reader, policy) if d.kind not in allowed]


@no_recursion_error
def diff(
    original: JsonSchemaLike, update: JsonSchemaLike, policy: CompatibilityPolicy = CompatibilityPolicy.STRICT
) -> list[Incompatibility]:
    """Every difference (compatible or not) from ``original`` to ``update``. The policy matters here too:
    it decides which subschemas of a combination match and whether a partial content model covers a
    property, and so which differences are found."""
    ctx = _Context(compatible_changes(policy))
    _compare(
        ctx,
        build(original, original.root, original.base_uri, ctx.walk),
        build(update, update.root, update.base_uri, ctx.walk),
    )
    seen: set[tuple[str, str]] = set()
    out: list[Incompatibility] = []
    for d in ctx.diffs:  # metadata can be reached twice when a schema turns into a combination
        if (d.kind, d.path) not in seen:
            seen.add((d.kind, d.path))
            out.append(d)
    return out


# -- context ------------------------------------------------------------------------------------


@dataclass
class _Context:
    """Where a walk is and what it found; a sub-context shares the walk's state but collects its own
    differences (to decide whether a candidate match is compatible before keeping them)."""

    allowed: frozenset[str]  # the compatible change kinds under the check's policy
    path: list[str] = field(default_factory=list)
    diffs: list[Incompatibility] = field(default_factory=list)
    in_progress: set[tuple[int, int, str, str]] = field(default_factory=set)
    walk: SchemaWalk = field(default_factory=SchemaWalk)
    patterns: Patterns = field(default_factory=Patterns)

    def sub(self) -> _Context:
        return _Context(self.allowed, list(self.path), [], self.in_progress, self.walk, self.patterns)

    @contextmanager
    def enter(self, *segments: str) -> Iterator[None]:
        self.path.extend(segments)
        try:
            yield
        finally:
            del self.path[len(self.path) - len(segments) :]

    def add(self, kind: str, attribute: str | None = None) -> None:
        segments = [*self.path, attribute] if attribute is not None else self.path
        path = "#/" + "/".join(segments)
        self.walk.report(path)
        self.diffs.append(
            Incompatibility(
                kind,
                path,
                describe(kind, path),
                forward_message=describe(kind, path, new="old", old="new"),
                style="json",
            )
        )

    def compatible(self) -> bool:
        return all(d.kind in self.allowed for d in self.diffs)

    def where(self) -> str:
        return "#/" + "/".join(self.path)


# -- rules --------------------------------------------------------------------------------------


def _compare(ctx: _Context, original: Node | None, update: Node | None) -> None:
    if original is None and update is None:
        return
    if original is None:
        ctx.add("SCHEMA_ADDED")
        return
    if update is None:
        ctx.add("SCHEMA_REMOVED")
        return
    walk = ctx.walk
    key = (id(original), id(update))
    found = walk.compared.get(key)
    if found is not None:
        walk.count(len(found[2]), ctx.where)
        for kind, below in found[2]:
            ctx.add(kind, below or None)
        return
    cuts, start = walk.cuts, len(ctx.diffs)
    walk.down(ctx.where)
    _compare_nodes(ctx, original, update)
    walk.up()
    if walk.cuts == cuts:
        prefix = len(ctx.where()) + (1 if ctx.path else 0)
        walk.compared[key] = (original, update, [(d.kind, d.path[prefix:]) for d in ctx.diffs[start:]])


def _compare_nodes(ctx: _Context, original: Node, update: Node) -> None:
    if original.kind != "COMBINED" and update.kind == "COMBINED" and _single_into_combined(ctx, original, update):
        return
    if original.kind == "COMBINED" and update.kind != "COMBINED" and _combined_into_single(ctx, original, update):
        return
    if original.kind != update.kind:
        if original.kind == "FALSE" or update.kind == "EMPTY":
            return  # nothing was valid before / everything is valid now
        ctx.add("TYPE_CHANGED")
        return
    pair = (id(original.raw), id(update.raw), original.kind, original.criterion)
    if pair in ctx.in_progress:  # a recursive schema reached the same pair again
        ctx.walk.cuts += 1
        return
    ctx.in_progress.add(pair)
    _compare_meta(ctx, original, update)
    _RULES.get(original.kind, _no_rules)(ctx, original, update)
    ctx.in_progress.discard(pair)


def _single_into_combined(ctx: _Context, original: Node, update: Node) -> bool:
    """A schema turned into a combination: compatible when the combination is a singleton that accepts
    the old schema, or an anyOf/oneOf one of whose branches does. False: not handled (a type change)."""
    _compare_meta(ctx, original, update)
    if len(update.parts) == 1:
        return _first_compatible(ctx, [(original, update.parts[0])], None)
    if update.criterion in ("anyOf", "oneOf"):
        return _first_compatible(ctx, [(original, part) for part in update.parts], "SUM_TYPE_EXTENDED")
    return False  # gaining allOf conditions adds constraints: a type change, as in Confluent


def _combined_into_single(ctx: _Context, original: Node, update: Node) -> bool:
    """A combination turned into one schema: compatible when it was a singleton the schema accepts, or an
    allOf one of whose parts the schema accepts (``allOf[A, B]`` only admits what ``A`` admits)."""
    _compare_meta(ctx, original, update)
    if len(original.parts) == 1:
        return _first_compatible(ctx, [(original.parts[0], update)], None)
    if original.criterion == "allOf":
        return _first_compatible(ctx, [(part, update) for part in original.parts], "PRODUCT_TYPE_NARROWED")
    return False


def _first_compatible(ctx: _Context, pairs: list[tuple[Node, Node]], kind: str | None) -> bool:
    """Keep the differences of the first compatible pair (and add ``kind``); False when none is."""
    for original, update in pairs:
        sub = ctx.sub()
        _compare(sub, original, update)
        if sub.compatible():
            ctx.diffs.extend(sub.diffs)
            if kind is not None:
                ctx.add(kind)
            return True
    return False


def _compare_meta(ctx: _Context, original: Node, update: Node) -> None:
    if original.meta is None or update.meta is None:
        return  # parts of a synthetic allOf or a wrapper: metadata is compared on the owning node
    o_meta, u_meta = original.meta, update.meta
    o_id = o_meta.get("$id", o_meta.get("id"))
    u_id = u_meta.get("$id", u_meta.get("id"))
    if o_id != u_id:
        ctx.add("ID_CHANGED")
    if o_meta.get("title") != u_meta.get("title"):
        ctx.add("TITLE_CHANGED")
    if o_meta.get("description") != u_meta.get("description"):
        ctx.add("DESCRIPTION_CHANGED")
    if o_meta.get("default") != u_meta.get("default"):
        ctx.add("DEFAULT_CHANGED")


def _no_rules(ctx: _Context, original: Node, update: Node) -> None:
    """Empty, false, boolean and null schemas have nothing further to compare."""


def _bound(ctx: _Context, name: str, kind: str, original: Any, update: Any) -> None:
    """``<KIND>_ADDED / _REMOVED / _INCREASED / _DECREASED`` for one numeric keyword."""
    if original == update:
        return
    if original is None:
        ctx.add(f"{kind}_ADDED", name)
    elif update is None:
        ctx.add(f"{kind}_REMOVED", name)
    elif original < update:
        ctx.add(f"{kind}_INCREASED", name)
    else:
        ctx.add(f"{kind}_DECREASED", name)


def _number(value: Any) -> Any:
    return value if isinstance(value, int | float | Decimal) and not isinstance(value, bool) else None


def _compare_string(ctx: _Context, original: Node, update: Node) -> None:
    o, u = original.raw, update.raw
    _bound(ctx, "maxLength", "MAX_LENGTH", _number(o.get("maxLength")), _number(u.get("maxLength")))
    _bound(ctx, "minLength", "MIN_LENGTH", _number(o.get("minLength")), _number(u.get("minLength")))
    o_pattern, u_pattern = o.get("pattern"), u.get("pattern")
    if o_pattern is None and u_pattern is not None:
        ctx.add("PATTERN_ADDED", "pattern")
    elif o_pattern is not None and u_pattern is None:
        ctx.add("PATTERN_REMOVED", "pattern")
    elif o_pattern != u_pattern:
        ctx.add("PATTERN_CHANGED", "pattern")


def _limits(node: Node) -> tuple[Any, Any, Any, Any]:
    """(maximum, minimum, exclusive maximum, exclusive minimum); draft 4's boolean exclusives turn
    the plain bound into an exclusive one."""
    raw = node.raw
    maximum, minimum = _number(raw.get("maximum")), _number(raw.get("minimum"))
    ex_max, ex_min = raw.get("exclusiveMaximum"), raw.get("exclusiveMinimum")
    if isinstance(ex_max, bool):
        ex_max, maximum = (maximum, None) if ex_max else (None, maximum)
    if isinstance(ex_min, bool):
        ex_min, minimum = (minimum, None) if ex_min else (None, minimum)
    return maximum, minimum, _number(ex_max), _number(ex_min)


def _compare_number(ctx: _Context, original: Node, update: Node) -> None:
    o_max, o_min, o_xmax, o_xmin = _limits(original)
    u_max, u_min, u_xmax, u_xmin = _limits(update)
    _bound(ctx, "maximum", "MAXIMUM", o_max, u_max)
    _bound(ctx, "minimum", "MINIMUM", o_min, u_min)
    _bound(ctx, "exclusiveMaximum", "EXCLUSIVE_MAXIMUM", o_xmax, u_xmax)
    _bound(ctx, "exclusiveMinimum", "EXCLUSIVE_MINIMUM", o_xmin, u_xmin)
    _compare_multiple_of(ctx, _number(original.raw.get("multipleOf")), _number(update.raw.get("multipleOf")))
    if original.integer != update.integer:
        ctx.add("TYPE_EXTENDED" if original.integer else "TYPE_NARROWED")


def _compare_multiple_of(ctx: _Context, original: Any, update: Any) -> None:
    if original == update:
        return
    if original is None:
        ctx.add("MULTIPLE_OF_ADDED", "multipleOf")
    elif update is None:
        ctx.add("MULTIPLE_OF_REMOVED", "multipleOf")
    else:
        try:
            o, u = Decimal(str(original)), Decimal(str(update))
            expanded, reduced = u % o == 0, o % u == 0
        except (InvalidOperation, ZeroDivisionError):
            expanded = reduced = False
        if expanded:  # every multiple of the update is a multiple of the original: fewer values
            ctx.add("MULTIPLE_OF_EXPANDED", "multipleOf")
        elif reduced:
            ctx.add("MULTIPLE_OF_REDUCED", "multipleOf")
        else:
            ctx.add("MULTIPLE_OF_CHANGED", "multipleOf")


def _compare_enum(ctx: _Context, original: Node, update: Node) -> None:
    o_values = {ctx.walk.fingerprint(v) for v in original.values}
    u_values = {ctx.walk.fingerprint(v) for v in update.values}
    if o_values == u_values:
        return
    if original.const and update.const:
        ctx.add("ENUM_ARRAY_CHANGED", "const")
    elif u_values >= o_values:
        ctx.add("ENUM_ARRAY_EXTENDED", "enum")
    elif o_values >= u_values:
        ctx.add("ENUM_ARRAY_NARROWED", "enum")
    else:
        ctx.add("ENUM_ARRAY_CHANGED", "enum")


def _compare_not(ctx: _Context, original: Node, update: Node) -> None:
    with ctx.enter("not"):
        sub = ctx.sub()
        # what the update forbids must have been forbidden before: compare the negated schemas reversed
        _compare(sub, update.sub(update.raw["not"]), original.sub(original.raw["not"]))
        ctx.add("NOT_TYPE_NARROWED" if sub.compatible() else "NOT_TYPE_EXTENDED")


def _compare_criteria(ctx: _Context, original: Node, update: Node) -> str | None:
    """``COMBINED_TYPE_EXTENDED`` when the new combiner accepts at least what the old one did: anything
    to anyOf; singleton to singleton; a singleton to oneOf; allOf to a singleton (which admits at
    most what one of the old conditions admitted). Otherwise ``COMBINED_TYPE_CHANGED``."""
    if original.criterion == update.criterion:
        return None
    o_single, u_single = len(original.parts) == 1, len(update.parts) == 1
    if (
        update.criterion == "anyOf"
        or (o_single and (u_single or update.criterion == "oneOf"))
        or (u_single and original.criterion == "allOf")
    ):
        kind = "COMBINED_TYPE_EXTENDED"
    else:
        kind = "COMBINED_TYPE_CHANGED"
    ctx.add(kind)
    return kind


def _compare_combined(ctx: _Context, original: Node, update: Node) -> None:
    if _compare_criteria(ctx, original, update) == "COMBINED_TYPE_CHANGED":
        return
    o_parts = _dedupe(original.parts)
    u_parts = _dedupe(update.parts)
    # more parts: judged by the new combiner (more conditions / more alternatives); fewer parts: by the
    # old one (allOf -> oneOf[A] dropped conditions, a widening; anyOf -> allOf[A] dropped alternatives)
    if len(o_parts) < len(u_parts):
        ctx.add("PRODUCT_TYPE_EXTENDED" if update.criterion == "allOf" else "SUM_TYPE_EXTENDED")
    elif len(o_parts) > len(u_parts):
        ctx.add("PRODUCT_TYPE_NARROWED" if original.criterion == "allOf" else "SUM_TYPE_NARROWED")
    edges: dict[tuple[int, int], list[Incompatibility]] = {}
    for i, o_part in enumerate(o_parts):
        with ctx.enter(f"{original.criterion}/{i}"):
            for j, u_part in enumerate(u_parts):
                sub = ctx.sub()
                _compare(sub, o_part, u_part)
                if sub.compatible():
                    edges[(i, j)] = sub.diffs
    matching = _max_matching(len(o_parts), len(u_parts), edges)
    for edge in sorted(matching):
        ctx.diffs.extend(edges[edge])
    if len(matching) < min(len(o_parts), len(u_parts)):
        ctx.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED")


def _dedupe(parts: list[Node]) -> list[Node]:
    seen: set[tuple[str, bytes]] = set()
    out: list[Node] = []
    for part in parts:
        tag, value = part.key
        key = (tag, part.walk.fingerprint(value))
        if key not in seen:
            seen.add(key)
            out.append(part)
    return out


def _max_matching(left: int, right: int, edges: dict[tuple[int, int], Any]) -> set[tuple[int, int]]:
    """Maximum-cardinality bipartite matching (augmenting paths; subschema lists are short)."""
    adjacency = {i: [j for j in range(right) if (i, j) in edges] for i in range(left)}
    match_right: dict[int, int] = {}

    def augment(i: int, visited: set[int]) -> bool:
        for j in adjacency[i]:
            if j in visited:
                continue
            visited.add(j)
            if j not in match_right or augment(match_right[j], visited):
                match_right[j] = i
                return True
        return False

    for i in range(left):
        augment(i, set())
    return {(i, j) for j, i in match_right.items()}


# objects ----------------------------------------------------------------------------------------


def _props(node: Node) -> dict[str, Any]:
    value = node.raw.get("properties")
    return value if isinstance(value, dict) else {}


def _required(node: Node) -> set[str]:
    value = node.raw.get("required")
    return set(value) if isinstance(value, list) else set()


def _permits_additional(node: Node, keyword: str) -> bool:
    return node.raw.get(keyword, True) is not False


def _additional_schema(node: Node, keyword: str) -> Any:
    value = node.raw.get(keyword)
    return value if isinstance(value, dict) else None


def _open_object(node: Node) -> bool:
    """Open: no patternProperties, additionalProperties absent or true, and (when additionalProperties
    is absent) unevaluatedProperties absent, true or ``{}``."""
    raw = node.raw
    if raw.get("patternProperties") or ("additionalProperties" in raw and raw["additionalProperties"] is not True):
        return False
    if "additionalProperties" in raw:
        return True
    return _unevaluated(node, "unevaluatedProperties") in (None, True, {})


_UNDECIDED: Final = "undecided"


def _partial_schema(ctx: _Context, node: Node, name: str) -> Node | Literal["undecided"] | None:
    """The schema a partially open object applies to an undeclared property ``name``; ``_UNDECIDED``
    when a pattern before the first match cannot be run (RE2 rejects look-around and back-references)."""
    patterns = node.raw.get("patternProperties")
    if isinstance(patterns, dict):
        for pattern, schema in patterns.items():
            found = ctx.patterns.search(pattern, name)
            if found is None:
                return _UNDECIDED
            if found:
                return node.sub(schema)
    if "additionalProperties" in node.raw:
        return node.sub(_additional_schema(node, "additionalProperties"))
    uneval = _unevaluated(node, "unevaluatedProperties")
    return node.sub(uneval) if isinstance(uneval, dict) else None


def _unevaluated(node: Node, keyword: str) -> Any:
    """The unevaluated* keyword's value (drafts 2019-09 and 2020-12 only), or None."""
    if "2019-09" not in node.doc.draft and "2020-12" not in node.doc.draft:
        return None
    return node.raw.get(keyword)


def _compare_unevaluated(ctx: _Context, original: Node, update: Node, keyword: str, kind: str) -> None:
    """``unevaluatedProperties`` / ``unevaluatedItems``: absent, false, true/{} or a schema."""
    o_value, u_value = _unevaluated(original, keyword), _unevaluated(update, keyword)
    if o_value is None and u_value is None:
        return
    with ctx.enter(keyword):
        o_empty, u_empty = o_value in (True, {}), u_value in (True, {})
        if o_value is None:
            ctx.add(f"{kind}_REMOVED" if u_value is False else f"{kind}_NARROWED")
        elif u_value is None:
            ctx.add(f"{kind}_ADDED" if o_value is False else f"{kind}_EXTENDED")
        elif o_value is False and u_value is not False:
            ctx.add(f"{kind}_ADDED")
        elif o_value is not False and u_value is False:
            ctx.add(f"{kind}_REMOVED")
        elif o_empty and not u_empty:
            ctx.add(f"{kind}_NARROWED")
        elif not o_empty and u_empty:
            ctx.add(f"{kind}_EXTENDED")
        elif not o_empty:
            _compare(ctx, original.sub(o_value), update.sub(u_value))


def _has_default(node: Node, name: str) -> bool:
    schema = _props(node).get(name)
    return isinstance(schema, dict) and "default" in schema


def _compare_object(ctx: _Context, original: Node, update: Node) -> None:
    _compare_required(ctx, original, update)
    _compare_properties(ctx, original, update)
    _compare_dependencies(ctx, original, update)
    _compare_additional_properties(ctx, original, update)
    _compare_unevaluated(ctx, original, update, "unevaluatedProperties", "UNEVALUATED_PROPERTIES")
    o, u = original.raw, update.raw
    _bound(ctx, "maxProperties", "MAX_PROPERTIES", _number(o.get("maxProperties")), _number(u.get("maxProperties")))
    _bound(ctx, "minProperties", "MIN_PROPERTIES", _number(o.get("minProperties")), _number(u.get("minProperties")))


def _compare_required(ctx: _Context, original: Node, update: Node) -> None:
    o_required, u_required = _required(original), _required(update)
    u_props = _props(update)
    with ctx.enter("required"):
        for name in _props(original):
            if name not in u_props:
                continue
            if name in o_required and name not in u_required:
                ctx.add("REQUIRED_ATTRIBUTE_REMOVED", name)
            elif name not in o_required and name in u_required:
                with_default = _has_default(update, name)
                ctx.add("REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED" if with_default else "REQUIRED_ATTRIBUTE_ADDED", name)


def _compare_properties(ctx: _Context, original: Node, update: Node) -> None:
    o_props, u_props = _props(original), _props(update)
    names = list(o_props) + [n for n in u_props if n not in o_props]
    with ctx.enter("properties"):
        for name in names:
            with ctx.enter(name):
                if name not in u_props:
                    _property_removed(ctx, original.sub(o_props[name]), update, name)
                elif name not in o_props:
                    _property_added(ctx, original, update, name)
                else:
                    _compare(ctx, original.sub(o_props[name]), update.sub(u_props[name]))


def _property_removed(ctx: _Context, removed: Node | None, update: Node, name: str) -> None:
    # a property may only disappear if the update still accepts whatever values it had
    if _open_object(update):
        ctx.add("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL")
        return
    partial = _partial_schema(ctx, update, name)
    if partial == _UNDECIDED:
        ctx.add("PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
    elif isinstance(partial, Node):
        _add_coverage(ctx, "PROPERTY_REMOVED", removed, partial)
    elif removed is not None and removed.kind == "FALSE":
        ctx.add("PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
    else:
        ctx.add("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL")


def _property_added(ctx: _Context, original: Node, update: Node, name: str) -> None:
    added = update.sub(_props(update)[name])
    # old data may already carry a property of that name if the original was open
    if _open_object(original):
        if added is not None and added.kind == "EMPTY":
            ctx.add("PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL")
            return
        model = "OPEN"
    else:
        partial = _partial_schema(ctx, original, name)
        if partial == _UNDECIDED:
            ctx.add("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
        elif isinstance(partial, Node):
            _add_coverage(ctx, "PROPERTY_ADDED", partial, added)
        model = "UNOPEN"
    if name not in _required(update):
        ctx.add(f"OPTIONAL_PROPERTY_ADDED_TO_{model}_CONTENT_MODEL")
    elif _has_default(update, name):
        ctx.add(f"REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_{model}_CONTENT_MODEL")
    else:
        ctx.add(f"REQUIRED_PROPERTY_ADDED_TO_{model}_CONTENT_MODEL")


def _add_coverage(ctx: _Context, change: str, original: Node | None, update: Node | None) -> None:
    """A property or tuple item (``change``: ``PROPERTY_ADDED``, ``ITEM_REMOVED``...) that a partially open content
    model gives a schema: covered when the item's schema and that one are compatible (their differences kept)."""
    sub = ctx.sub()
    _compare(sub, original, update)
    ctx.diffs.extend(sub.diffs)
    coverage = "IS_COVERED" if sub.compatible() else "NOT_COVERED"
    ctx.add(f"{change}_{coverage}_BY_PARTIALLY_OPEN_CONTENT_MODEL")


def _dependencies(node: Node) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    arrays: dict[str, list[Any]] = {}
    schemas: dict[str, Any] = {}
    for keyword in ("dependencies", "dependentRequired", "dependentSchemas"):
        value = node.raw.get(keyword)
        if not isinstance(value, dict):
            continue
        for name, dep in value.items():
            if isinstance(dep, list):
                arrays[name] = dep
            else:
                schemas[name] = dep
    return arrays, schemas


def _compare_dependencies(ctx: _Context, original: Node, update: Node) -> None:
    o_arrays, o_schemas = _dependencies(original)
    u_arrays, u_schemas = _dependencies(update)
    with ctx.enter("dependencies"):
        for name in list(o_arrays) + [n for n in u_arrays if n not in o_arrays]:
            if name not in u_arrays:
                ctx.add("DEPENDENCY_ARRAY_REMOVED", name)
            elif name not in o_arrays:
                ctx.add("DEPENDENCY_ARRAY_ADDED", name)
            else:
                o_set, u_set = (
                    {ctx.walk.fingerprint(v) for v in o_arrays[name]},
                    {ctx.walk.fingerprint(v) for v in u_arrays[name]},
                )
                if o_set != u_set:
                    kind = (
                        "DEPENDENCY_ARRAY_EXTENDED"
                        if u_set >= o_set
                        else "DEPENDENCY_ARRAY_NARROWED"
                        if o_set >= u_set
                        else "DEPENDENCY_ARRAY_CHANGED"
                    )
                    ctx.add(kind, name)
        for name in list(o_schemas) + [n for n in u_schemas if n not in o_schemas]:
            with ctx.enter(name):
                if name not in u_schemas:
                    ctx.add("DEPENDENCY_SCHEMA_REMOVED")
                elif name not in o_schemas:
                    ctx.add("DEPENDENCY_SCHEMA_ADDED")
                else:
                    _compare(ctx, original.sub(o_schemas[name]), update.sub(u_schemas[name]))


def _compare_additional(ctx: _Context, original: Node, update: Node, keyword: str, kind: str) -> None:
    """``additionalProperties`` / ``additionalItems``: false, absent/true, or a schema."""
    with ctx.enter(keyword):
        o_permits, u_permits = _permits_additional(original, keyword), _permits_additional(update, keyword)
        o_schema, u_schema = _additional_schema(original, keyword), _additional_schema(update, keyword)
        if o_permits != u_permits:
            ctx.add(f"{kind}_ADDED" if u_permits else f"{kind}_REMOVED")
        elif o_schema is None and u_schema is not None:
            ctx.add(f"{kind}_NARROWED")
        elif o_schema is not None and u_schema is None:
            ctx.add(f"{kind}_EXTENDED")
        elif o_schema is not None:
            _compare(ctx, original.sub(o_schema), update.sub(u_schema))


def _compare_additional_properties(ctx: _Context, original: Node, update: Node) -> None:
    _compare_additional(ctx, original, update, "additionalProperties", "ADDITIONAL_PROPERTIES")


# arrays -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _ArrayShape:
    all_items: Any  # one schema for every item, or None
    tuple_items: list[Any]  # positional schemas
    additional_keyword: str  # where the schema for items past the tuple lives


def _array_shape(node: Node) -> _ArrayShape:
    raw = node.raw
    items = raw.get("items")
    if node.draft2020 and isinstance(raw.get("prefixItems"), list):
        return _ArrayShape(None, list(raw["prefixItems"]), "items")
    if isinstance(items, list):
        return _ArrayShape(None, items, "additionalItems")
    return _ArrayShape(items, [], "additionalItems")


def _open_array(node: Node, shape: _ArrayShape) -> bool:
    if not shape.tuple_items:
        return True
    if shape.additional_keyword in node.raw:
        return node.raw[shape.additional_keyword] is True
    return _unevaluated(node, "unevaluatedItems") in (None, True, {})


def _partial_items(node: Node, shape: _ArrayShape) -> Node | None:
    if not shape.tuple_items:
        return None
    value = (
        node.raw[shape.additional_keyword]
        if shape.additional_keyword in node.raw
        else _unevaluated(node, "unevaluatedItems")
    )
    return node.sub(value) if isinstance(value, dict) else None


def _compare_array(ctx: _Context, original: Node, update: Node) -> None:
    o_shape, u_shape = _array_shape(original), _array_shape(update)
    with ctx.enter("items"):
        _compare(ctx, original.sub(o_shape.all_items), update.sub(u_shape.all_items))
    _compare_tuple_items(ctx, original, o_shape, update, u_shape)
    if o_shape.additional_keyword == u_shape.additional_keyword == "additionalItems":
        _compare_additional(ctx, original, update, "additionalItems", "ADDITIONAL_ITEMS")
    _compare_unevaluated(ctx, original, update, "unevaluatedItems", "UNEVALUATED_ITEMS")
    o, u = original.raw, update.raw
    _bound(ctx, "maxItems", "MAX_ITEMS", _number(o.get("maxItems")), _number(u.get("maxItems")))
    _bound(ctx, "minItems", "MIN_ITEMS", _number(o.get("minItems")), _number(u.get("minItems")))
    o_unique, u_unique = o.get("uniqueItems") is True, u.get("uniqueItems") is True
    if o_unique != u_unique:
        ctx.add("UNIQUE_ITEMS_REMOVED" if o_unique else "UNIQUE_ITEMS_ADDED", "uniqueItems")
    _bound(ctx, "maxContains", "MAX_CONTAINS", _number(o.get("maxContains")), _number(u.get("maxContains")))
    _bound(ctx, "minContains", "MIN_CONTAINS", _number(o.get("minContains")), _number(u.get("minContains")))


def _compare_tuple_items(
    ctx: _Context, original: Node, o_shape: _ArrayShape, update: Node, u_shape: _ArrayShape
) -> None:
    o_items, u_items = o_shape.tuple_items, u_shape.tuple_items
    for index in range(max(len(o_items), len(u_items))):
        with ctx.enter(f"items/{index}"):
            if index < len(o_items) and index < len(u_items):
                _compare(ctx, original.sub(o_items[index]), update.sub(u_items[index]))
            elif index < len(o_items):
                _item_removed(ctx, original.sub(o_items[index]), update, u_shape)
            else:
                _item_added(ctx, original, o_shape, update.sub(u_items[index]))


def _item_removed(ctx: _Context, removed: Node | None, update: Node, u_shape: _ArrayShape) -> None:
    if _open_array(update, u_shape):
        ctx.add("ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL")
        return
    partial = _partial_items(update, u_shape)
    if partial is not None:
        _add_coverage(ctx, "ITEM_REMOVED", removed, partial)
    elif removed is not None and removed.kind == "FALSE":
        ctx.add("ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
    else:
        ctx.add("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL")


def _item_added(ctx: _Context, original: Node, o_shape: _ArrayShape, added: Node | None) -> None:
    if _open_array(original, o_shape):
        if added is not None and added.kind == "EMPTY":
            ctx.add("ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL")
        else:
            ctx.add("ITEM_ADDED_TO_OPEN_CONTENT_MODEL")
        return
    partial = _partial_items(original, o_shape)
    if partial is not None:
        _add_coverage(ctx, "ITEM_ADDED", partial, added)
    else:
        ctx.add("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL")


_RULES = {
    "STRING": _compare_string,
    "NUMBER": _compare_number,
    "ENUM": _compare_enum,
    "NOT": _compare_not,
    "COMBINED": _compare_combined,
    "OBJECT": _compare_object,
    "ARRAY": _compare_array,
}
