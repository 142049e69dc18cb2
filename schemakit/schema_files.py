"""Schema files on disk, parsed with the registry's own schema types (``registry/schema_types``).

The type of a file comes from ``--type`` or its extension. References come from ``--reference NAME=FILE``
(an Avro full name, a JSON Schema ``$ref``, a Protobuf import path) and, for Protobuf, from the files the
schema imports that exist under the search roots (the directory tree being checked, or the file's own
directory): what ``protoc -I ROOT`` would find.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from schemakit.connection import UsageError

if TYPE_CHECKING:
    from registry.schema_types import ParsedSchema, ResolvedReference

#: file extension -> schema type; ``.json`` is JSON Schema unless told otherwise (Avro is often saved as .json)
EXTENSION_TYPES = {".avsc": "AVRO", ".proto": "PROTOBUF", ".json": "JSON"}
#: schema type -> the extension its exported files get
TYPE_EXTENSIONS = {"AVRO": ".avsc", "PROTOBUF": ".proto", "JSON": ".json"}
SCHEMA_TYPES = tuple(TYPE_EXTENSIONS)

_PROTO_IMPORT = re.compile(r'^\s*import\s+(?:public\s+|weak\s+)?"([^"]+)"\s*;', re.MULTILINE)


class SchemaFileError(Exception):
    """A file that cannot be read, or an old schema that does not parse; the message names the file."""


def type_of(path: Path, given: str | None, json_type: str = "JSON") -> str:
    """``given`` if set, else the type the extension names (``.json`` files are ``json_type``)."""
    if given:
        return given
    suffix = path.suffix.lower()
    if suffix == ".json":
        return json_type
    found = EXTENSION_TYPES.get(suffix)
    if found is None:
        raise UsageError(
            f"{path}: cannot tell the schema type from the extension {suffix or '(none)'}; "
            f"pass --type {'|'.join(SCHEMA_TYPES)}"
        )
    return found


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SchemaFileError(f"{path}: cannot read: {e}") from None


def parse_reference_files(specs: Sequence[str], default_type: str | None) -> tuple[ResolvedReference, ...]:
    """``NAME=FILE`` options as resolved references (subject = NAME, version 1: files have no versions)."""
    from registry.schema_types import ResolvedReference

    refs = []
    for spec in specs:
        name, sep, file = spec.partition("=")
        if not sep or not name or not file:
            raise UsageError(f"--reference takes NAME=FILE, got {spec!r}")
        path = Path(file)
        refs.append(ResolvedReference(name, name, 1, read_text(path), type_of(path, None, default_type or "JSON")))
    return tuple(refs)


class SchemaLoader:
    """Parses schema files as the registry parses a new schema (``parse``) or a stored one (``parse_stored``).

    Args:
        references: given to every parse (``--reference``).
        proto_roots: where Protobuf imports are looked for, first match wins; imports found nowhere are left
            to the schema type (well-known types are built in).
    """

    def __init__(self, references: tuple[ResolvedReference, ...] = (), proto_roots: Sequence[Path] = ()) -> None:
        self.references = references
        self.proto_roots = list(proto_roots)

    def parse(self, path: Path, schema_type: str, *, stored: bool = False) -> ParsedSchema:
        """Parse ``path``; ``InvalidSchemaError`` when it is not a valid schema, ``SchemaFileError`` when
        it cannot be read."""
        from registry.schema_types import get_schema_type

        t = get_schema_type(schema_type)
        if t is None:
            raise UsageError(f"schema type {schema_type} is not available")
        text = read_text(path)
        refs = self.references
        if schema_type == "PROTOBUF":
            roots = self.proto_roots or [path.parent]
            refs = (*refs, *self._proto_imports(text, roots, frozenset({path.resolve()})))
        return t.parse_stored(text, refs) if stored else t.parse(text, refs)

    def _proto_imports(self, text: str, roots: list[Path], seen: frozenset[Path]) -> list[ResolvedReference]:
        from registry.schema_types import ResolvedReference

        given = {r.name for r in self.references}
        out = []
        for name in _PROTO_IMPORT.findall(text):
            if name in given:
                continue
            for root in roots:
                candidate = (root / name).resolve()
                if candidate.is_file() and candidate not in seen:
                    imported = read_text(candidate)
                    nested = tuple(self._proto_imports(imported, roots, seen | {candidate}))
                    out.append(ResolvedReference(name, name, 1, imported, "PROTOBUF", nested))
                    break
        return out
