"""The JSON schema type: JSON Schema drafts 4, 6, 7, 2019-09 and 2020-12 (``$schema``; default draft 7).

Canonical string: the schema re-serialized the way Confluent's registry does (Jackson
``writeValueAsString`` on a tree read with ``USE_BIG_DECIMAL_FOR_FLOATS`` and exact big decimals):
compact, key order kept, duplicate keys collapsed to the last value in the first key's position,
non-ASCII written as is, control characters escaped (``\\n`` style where JSON has one, else
``\\u00XX`` in upper case), integers as written, decimals as ``BigDecimal.toString()`` (``1.0``
stays ``1.0``, ``1e2`` becomes ``1E+2``) - Python's ``Decimal`` implements the same
to-scientific-string rule.

References: each reference's ``name`` is the ``$ref`` URL that the schema uses for it; referenced
schemas (and theirs, recursively) go into a ``referencing.Registry`` under that name, under their
own ``$id``, and under the name resolved against the root ``$id``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin

import jsonschema
import referencing
import referencing.exceptions
import referencing.jsonschema
from jsonschema import validators

from compat import json_schema as json_compat
from compat.levels import CompatibilityPolicy
from compat.result import Incompatibility
from registry.schema_types.base import InvalidSchemaError, ParsedSchema, ResolvedReference, SchemaType
from registry.schema_types.json_strings import jstr

#: dialect URI (without trailing '#', http or https) -> validator class
_DIALECTS: dict[str, type[jsonschema.protocols.Validator]] = {
    "json-schema.org/draft-04/schema": validators.Draft4Validator,
    "json-schema.org/draft-06/schema": validators.Draft6Validator,
    "json-schema.org/draft-07/schema": validators.Draft7Validator,
    "json-schema.org/draft/2019-09/schema": validators.Draft201909Validator,
    "json-schema.org/draft/2020-12/schema": validators.Draft202012Validator,
}
DEFAULT_VALIDATOR = validators.Draft7Validator
#: every dialect referencing knows (a subschema's ``$schema`` may name one we do not validate with)
_SPECIFICATIONS = (
    referencing.jsonschema.DRAFT202012,
    referencing.jsonschema.DRAFT201909,
    referencing.jsonschema.DRAFT7,
    referencing.jsonschema.DRAFT6,
    referencing.jsonschema.DRAFT4,
    referencing.jsonschema.DRAFT3,
)

#: keywords whose values are data, not subschemas: never walked for ``$ref``
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
#: keywords whose value is a map of name -> subschema
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "definitions", "$defs", "dependentSchemas", "dependencies"}
)
#: the base URI of a schema without ``$id``; relative reference names resolve against it unchanged
ROOT_URI = ""


def validator_class(schema: Any) -> type[jsonschema.protocols.Validator]:
    """The validator class chosen by ``$schema`` (draft 7 without one)."""
    if not isinstance(schema, dict) or "$schema" not in schema:
        return DEFAULT_VALIDATOR
    dialect = schema["$schema"]
    if not isinstance(dialect, str):
        raise InvalidSchemaError(f"$schema must be a string URI, got {_type_name(dialect)}")
    key = urldefrag(dialect)[0].removeprefix("https://").removeprefix("http://")
    try:
        return _DIALECTS[key]
    except KeyError:
        known = ", ".join(sorted(_DIALECTS))
        raise InvalidSchemaError(f"Unsupported $schema '{dialect}'; supported dialects: {known}") from None


def loads(text: str) -> Any:
    """Parse JSON text as Confluent's Jackson mapper does (decimals exact; NaN/Infinity tolerated)."""
    try:
        # a key given twice keeps its first position and its last value, like Jackson's ObjectNode (as a dict does)
        return json.loads(text, parse_float=Decimal, parse_constant=Decimal)
    except json.JSONDecodeError as exc:
        raise InvalidSchemaError(f"Invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except ValueError as exc:  # an integer longer than Python converts (sys.get_int_max_str_digits)
        raise InvalidSchemaError(f"Invalid JSON: {exc}") from None


def dumps(value: Any) -> str:
    """Compact JSON exactly as Jackson's ``writeValueAsString`` writes the tree."""
    out: list[str] = []
    _write(value, out)
    return "".join(out)


def _write(value: Any, out: list[str]) -> None:
    if isinstance(value, dict):
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            if i:
                out.append(",")
            out.append(jstr(str(key)) + ":")
            _write(item, out)
        out.append("}")
    elif isinstance(value, list):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out)
        out.append("]")
    elif isinstance(value, str):
        out.append(jstr(value))
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif value is None:
        out.append("null")
    elif isinstance(value, Decimal):
        out.append(_decimal_text(value))
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(_decimal_text(Decimal(repr(value))))
    else:
        raise TypeError(f"not a JSON value: {value!r}")


def _decimal_text(value: Decimal) -> str:
    if value.is_nan():
        return "NaN"
    if value.is_infinite():
        return "-Infinity" if value < 0 else "Infinity"
    return str(value)  # same to-scientific-string rule as java.math.BigDecimal.toString()


def sort_keys(value: Any) -> Any:
    """Keys sorted recursively by UTF-16 code units (Java ``TreeMap<String, ...>`` order)."""
    if isinstance(value, dict):
        return {k: sort_keys(value[k]) for k in sorted(value, key=lambda k: k.encode("utf-16-be", "surrogatepass"))}
    if isinstance(value, list):
        return [sort_keys(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class JsonSchemaDocument:
    """What ``ParsedSchema.parsed`` holds for JSON (and what ``compat.json_schema`` reads)."""

    root: Any  # the schema (dict or bool), numbers as int / Decimal
    base_uri: str
    registry: referencing.Registry
    validator_cls: type[jsonschema.protocols.Validator]

    @property
    def draft(self) -> str:
        return self.validator_cls.META_SCHEMA.get("$schema", "")

    def resolve(self, ref: str, base_uri: str) -> tuple[Any, str]:
        """The subschema ``ref`` points to from ``base_uri``, and the base URI that applies inside it."""
        resolved = self.registry.resolver(base_uri=base_uri).lookup(ref)
        return resolved.contents, _base_uri_inside(self.registry, ref, base_uri)

    def validator(self) -> jsonschema.protocols.Validator:
        """A validator for instances, with references resolvable."""
        return self.validator_cls(self.root, registry=self.registry)


class JsonSchemaType(SchemaType):
    name = "JSON"

    def parse(self, schema: str, references: tuple[ResolvedReference, ...] = ()) -> ParsedSchema:
        root = loads(schema)
        if not isinstance(root, dict | bool):
            raise InvalidSchemaError(f"A JSON schema must be an object or a boolean, got {_type_name(root)}")
        cls = validator_class(root)
        _check_against_metaschema(cls, root, "schema")
        spec = referencing.jsonschema.specification_with(cls.META_SCHEMA["$schema"])
        root_resource = spec.create_resource(root)
        base_uri = root_resource.id() or ROOT_URI
        registry = _reference_registry(references, spec, base_uri).with_resource(base_uri, root_resource)
        registry = registry.crawl()
        document = JsonSchemaDocument(root, base_uri, registry, cls)
        _check_refs(document)
        title = root.get("title") if isinstance(root, dict) else None
        return ParsedSchema(
            schema_type=self.name,
            canonical=dumps(root),
            references=references,
            parsed=document,
            names=(title,) if isinstance(title, str) else (),
        )

    def normalize(self, parsed: ParsedSchema) -> ParsedSchema:
        """Keys sorted recursively (in Java ``TreeMap`` order, as Confluent's sorting Jackson mapper
        writes them) and references sorted and de-duplicated. Array order is kept: ``items`` and
        ``allOf`` positions are meaningful, and ``enum``/``required`` order is the user's choice."""
        document: JsonSchemaDocument = parsed.parsed
        root = sort_keys(document.root)
        normalized = JsonSchemaDocument(root, document.base_uri, document.registry, document.validator_cls)
        return parsed.normalized(dumps(root), normalized)

    def check(
        self, reader: ParsedSchema, writer: ParsedSchema, policy: CompatibilityPolicy = CompatibilityPolicy.STRICT
    ) -> list[Incompatibility]:
        return json_compat.check(reader.parsed, writer.parsed, policy)


def _check_against_metaschema(cls: type[jsonschema.protocols.Validator], root: Any, where: str) -> None:
    error = jsonschema.exceptions.best_match(cls(cls.META_SCHEMA).iter_errors(root))
    if error is not None:
        location = "/".join(str(p) for p in error.absolute_path)
        at = f" at '#/{location}'" if location else ""
        raise InvalidSchemaError(f"Invalid {where}{at}: {error.message}")


def _reference_registry(
    references: tuple[ResolvedReference, ...], default_spec: referencing.Specification, base_uri: str
) -> referencing.Registry:
    registry: referencing.Registry = referencing.Registry()
    seen: set[str] = set()
    stack = list(references)
    while stack:
        ref = stack.pop(0)
        if ref.name in seen:
            continue
        seen.add(ref.name)
        contents = loads(ref.schema)
        if not isinstance(contents, dict | bool):
            raise InvalidSchemaError(f"Referenced schema '{ref.name}' must be an object or a boolean")
        cls = validator_class(contents) if isinstance(contents, dict) and "$schema" in contents else None
        if cls is not None:
            _check_against_metaschema(cls, contents, f"referenced schema '{ref.name}'")
        spec = default_spec if cls is None else referencing.jsonschema.specification_with(cls.META_SCHEMA["$schema"])
        resource = spec.create_resource(contents)
        uris = {ref.name, urljoin(base_uri, ref.name)}
        own_id = resource.id()
        if own_id:
            uris.add(own_id)
        for uri in uris:
            registry = registry.with_resource(uri, resource)
        stack.extend(ref.references)
    return registry


def _base_uri_inside(registry: referencing.Registry, ref: str, base_uri: str) -> str:
    """The base URI inside the subschema that ``ref`` (resolvable) points to from ``base_uri``, as referencing's
    resolver tracks it without showing it: the URI of the document looked up, then, along a JSON-pointer
    fragment, joined with the ``$id`` of every subschema (per the document's dialect) the pointer enters."""
    uri, fragment = (base_uri, ref[1:]) if ref.startswith("#") else urldefrag(urljoin(base_uri, ref))
    if not fragment.startswith("/"):
        return uri  # the whole document, or an anchor in it
    resource = registry[uri]
    spec = _specification_of(resource)
    resolver = registry.resolver(base_uri=uri)
    base, contents, segments = uri, resource.contents, []
    for part in unquote(fragment[1:]).split("/"):
        segment: int | str = int(part) if isinstance(contents, Sequence) else part.replace("~1", "/").replace("~0", "~")
        contents = contents[segment]
        segments.append(segment)
        subresource = spec.create_resource(contents)
        entered = spec.maybe_in_subresource(segments=segments, resolver=resolver, subresource=subresource)
        if entered is not resolver:  # a subschema with an id (else it is the same resolver): the base from here on
            base, resolver, segments = urljoin(base, subresource.id() or ""), entered, []
    return base


def _specification_of(resource: referencing.Resource) -> referencing.Specification:
    """The dialect a resource was created with (``Resource`` keeps it private, but compares it for equality)."""
    return next(s for s in _SPECIFICATIONS if s.create_resource(resource.contents) == resource)


def _check_refs(document: JsonSchemaDocument) -> None:
    """Every ``$ref`` in the schema resolves (Confluent loads them eagerly and rejects the schema)."""
    for ref, base, path in _iter_refs(document.root, document.base_uri, "#"):
        try:
            document.resolve(ref, base)
        except referencing.exceptions.Unresolvable:
            raise InvalidSchemaError(
                f"$ref '{ref}' at '{path}' cannot be resolved: register the referenced schema and "
                f"pass it in 'references' with name '{urldefrag(ref)[0] or ref}'"
            ) from None


def _iter_refs(node: Any, base: str, path: str) -> Iterator[tuple[str, str, str]]:
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from _iter_refs(item, base, f"{path}/{i}")
        return
    if not isinstance(node, dict):
        return
    for key in ("$id", "id"):
        if isinstance(node.get(key), str) and not node[key].startswith("#"):
            base = urljoin(base, node[key])
            break
    for key, value in node.items():
        if key in _DATA_KEYWORDS:
            continue
        if key in ("$ref", "$dynamicRef", "$recursiveRef") and isinstance(value, str):
            if key == "$ref":
                yield value, base, f"{path}/$ref"
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            for name, sub in value.items():
                yield from _iter_refs(sub, base, f"{path}/{key}/{name}")
        else:
            yield from _iter_refs(value, base, f"{path}/{key}")


def _type_name(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(type(value), type(value).__name__)
