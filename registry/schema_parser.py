"""From a request's schema to a parsed schema: ``SchemaRequest`` and the ``SchemaParser`` that parses it.

The parser checks a schema against the limits before any parser runs (size on the event loop, nesting in the
worker), resolves its references in the subject's context on the loop (where state lives), and parses,
normalizes and formats in the bounded pool (``work_pool.py``), so one costly schema stalls no other request.
Parsed schemas are cached, bounded by the bytes they hold and keyed by a digest of the text (never the text a
client sent): new schemas by their text and references, stored ones by their id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from compat import CheckLimitError
from registry import contexts, errors
from registry.byte_lru import ByteLru
from registry.limits import Limits, check_schema_depth, check_schema_size
from registry.references import ReferenceResolver
from registry.schema_types import InvalidSchemaError, ParsedSchema, Reference, SchemaType, get_schema_type
from registry.state import SchemaContent, State
from registry.work_pool import WorkPool

#: characters of a parser's or check's detail in a 42201 (it may quote the schema: a 1 MB bad default)
MAX_DETAIL = 2000
#: bytes a parsed schema holds per character of its text (Python objects of a parsed JSON tree): an Avro record
#: of 140 to 700 characters parses into 19 to 22 bytes per character (tracemalloc); the parse caches are
#: bounded by this estimate
PARSED_BYTES_PER_CHAR = 24
T = TypeVar("T")


def is_empty_schema(schema: str | None) -> bool:
    """Confluent's test for "no schema given": null, empty or whitespace only."""
    return schema is None or not schema.strip()


@dataclass(frozen=True, slots=True)
class SchemaRequest:
    """What register, lookup and the compatibility check are given (the HTTP layer builds it from the body)."""

    schema: str | None
    schema_type: str = "AVRO"
    references: tuple[Reference, ...] = ()
    version: int | None = None
    id: int | None = None  # only in IMPORT mode; None: let the registry choose
    metadata: dict[str, Any] | None = None
    rule_set: dict[str, Any] | None = None


class SchemaParser:
    """``limits`` bound what one schema may cost; ``pool`` runs the schema work (parsing, normalizing, formats,
    and the service's compatibility checks)."""

    def __init__(self, state: State, limits: Limits, pool: WorkPool) -> None:
        self.limits = limits
        self.pool = pool
        self.references = ReferenceResolver(state)
        # Parsed schemas are only needed to register, look up and check compatibility.
        self._parsed: ByteLru[tuple[Any, ...], ParsedSchema] = ByteLru(limits.parse_cache_bytes)
        self._parsed_by_id: ByteLru[tuple[str, int], ParsedSchema] = ByteLru(limits.parse_cache_bytes)

    def schema_type(self, name: str) -> SchemaType:
        """The type named ``name``; 42201 when the registry has none of that name."""
        t = get_schema_type(name)
        if t is None:
            raise errors.invalid_schema(f"Invalid schema type {name}")
        return t

    async def schema_work(self, fn: Callable[..., T], *args: Any) -> T:
        """Schema work in the bounded pool (``work_pool.py``). A check's bound is 42201 with its text, and a
        RecursionError a parser or check still runs into is 42201 too, never a 500."""
        try:
            return await self.pool.run(fn, *args)
        except CheckLimitError as e:
            raise errors.invalid_schema(errors.clip(str(e), MAX_DETAIL)) from e
        except RecursionError as e:
            raise errors.invalid_schema(
                "Invalid schema: nested too deeply to process (lower the nesting, or see --max-schema-depth)"
            ) from e

    def with_concrete_references(self, req: SchemaRequest, subject: str) -> SchemaRequest:
        """References to ``latest`` (-1) become the version they name now in ``subject``'s context
        (``references.py``)."""
        if not req.references:
            return req
        return replace(req, references=self.references.concrete(req.references, parent=subject))

    async def parse(
        self,
        schema_type: str,
        schema: str,
        refs: tuple[Reference, ...],
        *,
        normalize: bool,
        validate: bool = True,
        subject: str = "",
    ) -> ParsedSchema:
        """Parse (cached) and optionally normalize; 42201 with the parser's detail. ``validate=False`` skips the
        checks that apply only to new schemas (IMPORT, as Confluent does).

        The size, nesting and references of the schema are checked against ``limits`` before any parser runs;
        a cache miss parses in the pool. References are resolved here, on the loop, where state lives, in
        ``subject``'s context."""
        t = self.schema_type(schema_type)
        limits = self.limits
        check_schema_size(schema, limits)
        resolved = self.references.resolve(refs, parent=subject, max_references=limits.max_references)
        digest = hashlib.sha256(schema.encode("utf-8", "surrogatepass")).digest()
        cache_key = (schema_type, digest, resolved, normalize, validate)
        hit = self._parsed.get(cache_key)
        if hit is not None:
            return hit

        def work() -> ParsedSchema:
            check_schema_depth(schema_type, schema, limits)
            parsed = t.parse(schema, resolved) if validate else t.parse_stored(schema, resolved)
            return t.normalize(parsed) if normalize else parsed

        try:
            parsed = await self.schema_work(work)
        except InvalidSchemaError as e:
            raise errors.invalid_schema(errors.clip(e.api_message(schema_type), MAX_DETAIL)) from e
        self._parsed.put(cache_key, parsed, PARSED_BYTES_PER_CHAR * len(schema))
        return parsed

    async def parsed_content(
        self, content: SchemaContent, schema_id: int | None = None, context: str = contexts.DEFAULT_CONTEXT
    ) -> ParsedSchema:
        """The stored schema of ``context``, parsed (for compatibility checks and formats); cached per id.
        Stored schemas were accepted already: only the pool's bounds apply."""
        if schema_id is not None:
            hit = self._parsed_by_id.get((context, schema_id))
            if hit is not None:
                return hit
        t = self.schema_type(content.schema_type)
        resolved = self.references.resolve(content.references, parent=contexts.qualify(context, ""))
        try:
            parsed = await self.schema_work(t.parse_stored, content.schema, resolved)
        except InvalidSchemaError as e:
            message = f"Stored schema {schema_id} no longer parses: {e}"
            raise errors.invalid_schema(errors.clip(message, MAX_DETAIL)) from e
        if schema_id is not None:
            self._parsed_by_id.put((context, schema_id), parsed, PARSED_BYTES_PER_CHAR * len(content.schema))
        return parsed

    def remember(self, content: SchemaContent, schema_id: int, context: str, parsed: ParsedSchema) -> None:
        """Keep ``parsed`` as the parse of the stored schema ``schema_id`` of ``context`` (``parsed_content``): a
        registration parsed the new schema already, and its canonical text is what was stored."""
        if parsed.canonical == content.schema and parsed.schema_type == content.schema_type:
            self._parsed_by_id.put((context, schema_id), parsed, PARSED_BYTES_PER_CHAR * len(content.schema))

    async def formatted(
        self, content: SchemaContent, schema_id: int, fmt: str | None, context: str = contexts.DEFAULT_CONTEXT
    ) -> str:
        """The stored schema in the format ``fmt`` names (``?format=``); its stored text for none or an unknown
        one."""
        if not fmt:
            return content.schema
        t = self.schema_type(content.schema_type)
        text = await self.schema_work(t.format, await self.parsed_content(content, schema_id, context), fmt)
        return content.schema if text is None else text
