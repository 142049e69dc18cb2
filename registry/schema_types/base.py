"""The schema-type plug-in interface: one module per type (``avro.py``, ``json_schema.py``, ``protobuf.py``).

A type parses and validates schema text, renders the canonical string the registry stores (the
string Confluent's Java registry would store, so ids and dedup agree), normalizes, and checks
compatibility through ``compat/``.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any

from compat.levels import CompatibilityPolicy
from compat.result import Incompatibility


class InvalidSchemaError(Exception):
    """The schema text is not a valid schema of its type; ``str()`` is the detail Confluent puts after
    ``Invalid schema of type X, details: ``."""

    def api_message(self, schema_type: str) -> str:
        """The message of Confluent's 42201 answer for this error."""
        return f"Invalid schema of type {schema_type}, details: {self}"


@dataclass(frozen=True, slots=True)
class Reference:
    """A reference as a request carries it: ``name`` is the Avro full name / proto import path / JSON $ref."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True, slots=True, eq=False)
class ResolvedReference:
    """A reference together with the referenced schema, whose own references are resolved too.

    References form a graph in which one schema is often reached along many paths (a diamond of imports), so
    the hash is computed once, from the children's own hashes: hashing or comparing the tree never walks it
    once per path."""

    name: str
    subject: str
    version: int
    schema: str
    schema_type: str
    references: tuple[ResolvedReference, ...] = ()
    _hash: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash(self._fields()))

    def _fields(self) -> tuple[object, ...]:
        return (self.name, self.subject, self.version, self.schema_type, self.schema, self.references)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, ResolvedReference):
            return NotImplemented
        return _same_graph(self, other)


def _same_graph(a: ResolvedReference, b: ResolvedReference) -> bool:
    """Whether two reference graphs are equal, each pair of nodes compared once. Comparing the fields' tuples
    would compare the children again along every path, and a diamond of imports has exponentially many paths (23
    levels of a diamond took 36 s to compare with an equal copy resolved by another request)."""
    compared: set[tuple[int, int]] = set()
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if x is y or (id(x), id(y)) in compared:
            continue
        if x._hash != y._hash or len(x.references) != len(y.references):
            return False
        if (x.name, x.subject, x.version, x.schema_type, x.schema) != (
            y.name,
            y.subject,
            y.version,
            y.schema_type,
            y.schema,
        ):
            return False
        compared.add((id(x), id(y)))  # any difference below returns False before the end
        pending.extend(zip(x.references, y.references, strict=True))
    return True


@dataclass(slots=True)
class ParsedSchema:
    """A schema parsed once; ``canonical`` is the string stored in ``_schemas`` and served back."""

    schema_type: str
    canonical: str
    references: tuple[ResolvedReference, ...] = ()
    #: the type's own parsed form (Avro: JSON with named types; Protobuf: FileDescriptorProto; ...)
    parsed: Any = None
    #: names this schema defines (Avro: full names of named types), for records/subject strategies
    names: tuple[str, ...] = field(default_factory=tuple)

    def normalized(self, canonical: str, parsed: Any) -> ParsedSchema:
        """This schema normalized to ``canonical`` (and ``parsed``): the same names, the references sorted."""
        return ParsedSchema(self.schema_type, canonical, sorted_references(self.references), parsed, self.names)


def sorted_references(references: tuple[ResolvedReference, ...]) -> tuple[ResolvedReference, ...]:
    """References de-duplicated and sorted (by name, subject, version), as a normalized schema has them."""
    return tuple(sorted(set(references), key=lambda r: (r.name, r.subject, r.version)))


class SchemaType(abc.ABC):
    """One schema type. Instances are stateless and shared."""

    name: str  # "AVRO", "JSON", "PROTOBUF"

    @abc.abstractmethod
    def parse(self, schema: str, references: tuple[ResolvedReference, ...] = ()) -> ParsedSchema:
        """Parse and validate; raise InvalidSchemaError with a specific message."""

    def parse_stored(self, schema: str, references: tuple[ResolvedReference, ...] = ()) -> ParsedSchema:
        """Parse a schema already in the log. Checks that apply only to new registrations (Avro defaults)
        are skipped, so schemas another registry accepted stay readable."""
        return self.parse(schema, references)

    @abc.abstractmethod
    def normalize(self, parsed: ParsedSchema) -> ParsedSchema:
        """The normalized form (``normalize=true``): semantically equal schemas get equal canonical strings."""

    @abc.abstractmethod
    def check(
        self, reader: ParsedSchema, writer: ParsedSchema, policy: CompatibilityPolicy = CompatibilityPolicy.STRICT
    ) -> list[Incompatibility]:
        """Can ``reader`` read data written with ``writer`` under the subject's ``compatibilityPolicy``? Empty
        list: yes. Raises ``compat.CheckLimitError`` past a check's bounds (depth, comparisons)."""

    def format(self, parsed: ParsedSchema, fmt: str) -> str | None:
        """The schema rendered in a ``format=`` variant (Avro ``resolved``, Protobuf ``serialized``...);
        None when the type does not know the format (the canonical string is served then)."""
        return None
