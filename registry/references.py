"""Schema references resolved against the state: each referenced subject-version to its schema, recursively.

Resolution is memoized per (subject, version) until the state changes, so a graph of references in which
one schema is reached along many paths (a diamond of imports, repeated level after level) costs one step
per distinct subject-version instead of one per path, which is exponential. It reads the state, which
lives on the event loop, so it runs there; it is a handful of dictionary lookups per reference, and a new
schema may reach at most ``Limits.max_references`` of them. Parsing the referenced schemas, the costly
part, happens in the schema workers with the parse.

``latest`` (version ``-1``) in a request is made concrete before anything else, as Confluent's registry does
since 7.8 (its PRs #3380/#3382): a schema is stored with the version it was checked against, so the
delete guard (42206) and the reverse index see that version, and a lookup with ``-1`` finds the schema
registered with the then-latest version.
"""

from __future__ import annotations

from collections.abc import Sequence

from registry import contexts, errors
from registry.limits import MAX_REFERENCE_NAME
from registry.schema_types import Reference, ResolvedReference
from registry.state import State, Version

LATEST = -1
#: references followed from one schema to the deepest of its references' references
MAX_REFERENCE_DEPTH = 64


class ReferenceResolver:
    def __init__(self, state: State) -> None:
        self.state = state
        self._memo: dict[tuple[str, int], ResolvedReference | None] = {}  # None: being resolved (a cycle)
        self._generation = -1

    def find(self, subject: str, version: int, parent: str = "") -> Version | None:
        """The live latest version for ``LATEST``, else that version (soft-deleted ones too). ``parent``: the
        referring subject; an unqualified reference names a subject of its context."""
        subject = contexts.qualify_reference(parent, subject)
        if version == LATEST:
            return self.state.latest(subject)
        return self.state.subjects.get(subject, {}).get(version)

    def concrete(self, refs: Sequence[Reference], *, parent: str = "") -> tuple[Reference, ...]:
        """``refs`` with every ``-1`` replaced by the subject's latest live version; bad names and missing
        subject-versions are 42201, named as the request gave them."""
        out = []
        for r in refs:
            if not r.name:
                raise errors.invalid_schema("Invalid schema: a reference has an empty name")
            if len(r.name) > MAX_REFERENCE_NAME:
                raise errors.limit_exceeded(
                    f"the length of reference name '{errors.clip(r.name, 100)}'", MAX_REFERENCE_NAME
                )
            v = self.find(r.subject, r.version, parent)
            if v is None:
                raise self._not_found(r)
            out.append(r if r.version == v.version else Reference(r.name, r.subject, v.version))
        return tuple(out)

    def resolve(
        self, refs: Sequence[Reference], *, parent: str = "", max_references: int | None = None
    ) -> tuple[ResolvedReference, ...]:
        """Each reference (of ``parent``, the referring subject) with its schema and, recursively, that schema's
        references. ``max_references`` bounds the distinct subject-versions reached (new schemas; stored ones
        were accepted already)."""
        if self._generation != self.state.generation:
            self._memo.clear()
            self._generation = self.state.generation
        reached: set[tuple[str, int]] = set()
        resolved = tuple(self._resolve(r, parent, 0, reached, max_references) for r in refs)
        return resolved

    def _resolve(
        self, r: Reference, parent: str, depth: int, reached: set[tuple[str, int]], max_references: int | None
    ) -> ResolvedReference:
        if depth >= MAX_REFERENCE_DEPTH:
            raise errors.invalid_schema(
                f"Invalid schema: references nest deeper than {MAX_REFERENCE_DEPTH} levels "
                f"(at '{errors.clip(r.name, 200)}')"
            )
        v = self.find(r.subject, r.version, parent)
        if v is None:
            raise self._not_found(r)
        key = (v.subject, v.version)
        if key not in reached:
            reached.add(key)
            if max_references is not None and len(reached) > max_references:
                raise errors.limit_exceeded(
                    "the number of referenced schemas (directly or through references)",
                    max_references,
                    "--max-schema-references",
                )
        if key in self._memo:
            node = self._memo[key]
            if node is None:
                raise errors.invalid_schema(
                    f"Invalid schema: reference cycle through subject '{errors.clip(v.subject, 200)}' "
                    f"version {v.version}"
                )
            if max_references is not None:
                self._count_below(node, v.subject, reached, max_references)
        else:
            self._memo[key] = None
            try:
                children = tuple(
                    self._resolve(c, v.subject, depth + 1, reached, max_references) for c in v.content.references
                )
            except BaseException:
                del self._memo[key]
                raise
            node = ResolvedReference(r.name, r.subject, v.version, v.content.schema, v.content.schema_type, children)
            self._memo[key] = node
        # the memo is per subject-version: a node reached under another name (or spelling) is re-wrapped
        if node.name != r.name or node.subject != r.subject:
            node = ResolvedReference(r.name, r.subject, node.version, node.schema, node.schema_type, node.references)
        return node

    def _count_below(self, node: ResolvedReference, subject: str, reached: set[tuple[str, int]], limit: int) -> None:
        """A memoized node's references count toward this request's bound too (each distinct one once).
        ``subject``: the node's qualified subject, the context its references' subjects are named in."""
        stack = [(child, subject) for child in node.references]
        while stack:
            child, parent = stack.pop()
            key = (contexts.qualify_reference(parent, child.subject), child.version)
            if key in reached:
                continue
            reached.add(key)
            if len(reached) > limit:
                raise errors.limit_exceeded(
                    "the number of referenced schemas (directly or through references)",
                    limit,
                    "--max-schema-references",
                )
            stack.extend((grandchild, key[0]) for grandchild in child.references)

    @staticmethod
    def _not_found(r: Reference) -> errors.ApiError:
        return errors.invalid_schema(
            f"Invalid schema: reference '{errors.clip(r.name, 200)}' to subject '{errors.clip(r.subject, 200)}' "
            f"version {r.version} not found"
        )
