"""Path and query parameters as Confluent reads them, and the JSON request body, as typed route arguments.

- Subject names arrive percent-encoded; ``%2F`` stays inside the name (``KeepEncodedSlashes`` in
  ``api.py`` routes on the raw path), and ``:.:name`` is the default context's ``name``.
- Versions are ``latest`` (any case), ``-1`` or 1..2^31-1; ids 0..2^31-1 (else 404, an unknown path). Numbers
  are ASCII digits only: Python's ``int()`` would also take ``٣``, ``+1``, `` 1`` and ``1_000``.
- Query booleans are true for ``true`` in any case (Python clients send ``True``) and false for anything
  else, never an error; integer query parameters that are not integers are 400.
- A body is read by ``JsonBody``: empty, not JSON or nested deeper than ``MAX_BODY_DEPTH`` is 400, a field of
  the wrong type 422 (code 422).

Path parameters are named for their segment with ``Path`` (``SubjectPath``, ``VersionPath``, ``SchemaIdPath``,
``ContextPath``), so that ``Version`` means one thing in the registry: a stored version (``state.Version``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar
from urllib.parse import unquote

import orjson
from fastapi import Depends, Path, Query, Request
from pydantic import BaseModel, BeforeValidator, ValidationError, WithJsonSchema
from pydantic_core import PydanticCustomError

from registry import contexts, errors
from registry.http import render
from registry.limits import MAX_BODY_DEPTH, json_depth_exceeds
from registry.references import LATEST
from registry.service import MAX_ID, MAX_VERSION, Service

T = TypeVar("T")

BOOL_PATTERN = "^([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])$"


def parse_bool(value: object) -> bool:
    """``true``/``True``/``TRUE`` are true; anything else is false."""
    return isinstance(value, str) and value.strip().lower() == "true"


def _optional_bool(value: object) -> bool | None:
    return None if value is None else parse_bool(value)


_BOOL_DOC = {"type": "string", "pattern": BOOL_PATTERN, "description": "`true` in any case is true."}
#: a query flag; documented as the strings clients send
QueryBool = Annotated[bool, BeforeValidator(parse_bool), WithJsonSchema(_BOOL_DOC)]
#: a query flag whose absence means "the config decides" (``normalize``)
OptionalQueryBool = Annotated[bool | None, BeforeValidator(_optional_bool), WithJsonSchema(_BOOL_DOC)]


_INTEGER = re.compile(r"-?[0-9]+")


def parse_int(text: str) -> int | None:
    """``text`` as an integer when it is one in ASCII digits (with an optional minus), else None."""
    return int(text) if _INTEGER.fullmatch(text) and len(text) <= 20 else None


def parse_version(text: str) -> int:
    """Confluent's ``VersionId``: ``latest`` (any case, trimmed) and ``-1`` are ``LATEST``; else 1..2^31-1."""
    if text.strip().lower() == "latest":
        return LATEST
    n = parse_int(text)
    if n is None or (n != LATEST and not 1 <= n <= MAX_VERSION):
        raise errors.invalid_version(text)
    return n


async def _subject(
    subject: Annotated[
        str,
        Path(
            min_length=1,
            description="Subject name, percent-encoded (`%2F` stays part of the name); `:.:name` is the same as "
            "`name`.",
            examples=["orders-value"],
        ),
    ],
) -> str:
    return contexts.normalize(unquote(subject))


async def _version(
    version: Annotated[
        str,
        Path(
            min_length=1,
            description="A version number in [1, 2^31-1], or `latest` (any case) / `-1`; anything else is 42202.",
            examples=["latest"],
        ),
    ],
) -> int:
    return parse_version(unquote(version))


#: the ``{subject}`` path segment, decoded
SubjectPath = Annotated[str, Depends(_subject)]
#: the ``{context}`` path segment of ``/contexts/{context}`` (as sent; ``contexts.parse_context`` reads it)
ContextPath = Annotated[
    str, Path(description="The context: `.ctx`, `:.ctx:` or `ctx` all name `.ctx`.", examples=[".staging"])
]
#: the ``{version}`` path segment: a number or ``LATEST`` (``state.Version`` is a stored version)
VersionPath = Annotated[int, Depends(_version)]


async def _schema_id(
    id: Annotated[
        str,
        Path(
            pattern="^[0-9]+$",
            description="A schema id, 0..2^31-1 in ASCII digits; anything else is an unknown path (404).",
            examples=["1"],
        ),
    ],
) -> int:
    n = parse_int(id)
    if n is None or not 0 <= n <= MAX_ID:
        raise errors.not_found_route()
    return n


#: the ``{id}`` path segment
SchemaIdPath = Annotated[int, Depends(_schema_id)]


def _blank_is(default: int) -> BeforeValidator:
    """``?offset=`` (no value) is the default, not an error; otherwise ASCII digits (with a minus) only."""

    def convert(value: object) -> object:
        if value == "":
            return default
        if isinstance(value, str):
            n = parse_int(value)
            if n is None:
                raise PydanticCustomError("int_parsing", "not an integer in ASCII digits")
            return n
        return value

    return BeforeValidator(convert)


Offset = Annotated[
    int,
    _blank_is(0),
    Query(description="Skip this many items (negative counts as 0); a non-integer is 400."),
]
Limit = Annotated[
    int,
    _blank_is(-1),
    Query(description="At most this many items; negative (the default) means all; a non-integer is 400."),
]


@dataclass(frozen=True, slots=True)
class Page:
    """The part of a listing a route answers, from ``?offset=`` and ``?limit=``."""

    offset: int
    limit: int

    def of(self, items: Sequence[T]) -> list[T]:
        """Confluent's paging (``render.page``)."""
        return render.page(items, self.offset, self.limit)


async def _page(offset: Offset = 0, limit: Limit = -1) -> Page:
    return Page(offset, limit)


#: ``?offset=`` and ``?limit=`` of a listing
PageQuery = Annotated[Page, Depends(_page)]
Format = Annotated[
    str,
    Query(
        alias="format",
        description="Schema rendering: Avro `resolved`; Protobuf `serialized` (base64 FileDescriptorProto) or "
        "`ignore_extensions`. Empty or unknown: the stored canonical string.",
    ),
]
Deleted = Annotated[QueryBool, Query(description="Include soft-deleted versions.")]
#: ``?normalize=`` of a request carrying a schema
Normalize = Annotated[
    OptionalQueryBool, Query(description="Normalize the schema first; when absent, the subject's config decides.")
]
DefaultToGlobal = Annotated[
    QueryBool, Query(alias="defaultToGlobal", description="Answer with the global value when the subject has none.")
]


async def _service(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


#: the registry's operations
ServiceDep = Annotated[Service, Depends(_service)]


M = TypeVar("M", bound=BaseModel)


class JsonBody(Generic[M]):
    """A dependency that reads the request body as ``model``; the route documents it as its request body."""

    def __init__(self, model: type[M]) -> None:
        self.model = model

    async def __call__(self, request: Request) -> M:
        raw = await request.body()
        if not raw.strip():
            raise errors.bad_request("Request body is empty; a JSON object is required")
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            raise errors.bad_request(f"Unexpected character in JSON body: {e}") from None
        if json_depth_exceeds(data, MAX_BODY_DEPTH):
            raise errors.bad_request(f"Request body nests deeper than {MAX_BODY_DEPTH} levels")
        try:
            return self.model.model_validate(data)
        except ValidationError as e:
            raise body_error(e) from None


def body_error(e: ValidationError) -> errors.ApiError:
    """The first problem, named by its field path (``references[0].version``)."""
    err = e.errors()[0]
    loc = err["loc"]
    if not loc:
        return errors.unprocessable_entity("Request body must be a JSON object")
    field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
    kind = err["type"]
    if kind in ("greater_than_equal", "less_than_equal"):
        return errors.unprocessable_entity(f"Field '{field}' is out of the 32-bit integer range: {err['input']}")
    if kind == "missing":
        return errors.unprocessable_entity(f"Field '{field}' is required")
    expected = _EXPECTED.get(kind)
    if expected is not None:
        return errors.unprocessable_entity(f"Field '{field}' must be {expected}")
    return errors.unprocessable_entity(f"Field '{field}' is invalid: {err['msg']}")


_EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "bool_type": "a boolean",
    "list_type": "an array",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "string_too_short": "a non-empty string",
    "string_too_long": "at most 256 characters",
}


def query_error(loc: tuple[Any, ...], kind: str, value: Any) -> errors.ApiError:
    """A path or query parameter FastAPI could not convert: an unknown path (404) or a bad parameter (400)."""
    where, name = (*loc, "", "")[:2]
    if where == "path":
        return errors.not_found_route()
    if kind == "missing":
        return errors.bad_request(f"Query parameter '{name}' is required")
    if kind.startswith("int"):
        return errors.bad_request(f"Query parameter '{name}' must be an integer, got '{errors.clip(value)}'")
    if kind == "greater_than_equal":
        return errors.bad_request(f"Query parameter '{name}' is out of range: '{errors.clip(value)}'")
    return errors.bad_request(f"Query parameter '{name}' is invalid: '{errors.clip(value)}'")
