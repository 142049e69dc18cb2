"""The registry's limits on what one request may make it do, and the checks of a schema against them.

Every limit has a command-line option (``schemakit serve --help``, the README's table); a request past one
gets a specific answer naming it: 413 for the body, 42201 for a schema (size, nesting, references), 408 for a
client too slow to send its request, 503 with ``Retry-After`` when too much schema work is queued.

The schema checks run before any parser sees the text: the size on the event loop (it is a length), the
nesting in the worker that then parses (one linear scan), the references while they are resolved.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import accumulate
from json.decoder import scanstring  # type: ignore[attr-defined]

from registry import errors

MiB = 2**20


@dataclass(frozen=True, slots=True)
class Limits:
    #: bytes of one request body (``--max-request-bytes``)
    max_request_bytes: int = 16 * MiB
    #: bytes (UTF-8) of one schema text (``--max-schema-bytes``); Kafka's default record limit is 1 MB, so
    #: Confluent's registry on a default topic cannot store more either
    max_schema_bytes: int = 1 * MiB
    #: nesting of a schema: JSON arrays/objects (Avro, JSON Schema), braces (Protobuf) (``--max-schema-depth``)
    max_schema_depth: int = 128
    #: distinct subject-versions a new schema references, directly or through its references
    #: (``--max-schema-references``)
    max_references: int = 1000
    #: threads that parse schemas and check compatibility (``--schema-workers``)
    schema_workers: int = 2
    #: schema work items that may wait for a thread before requests get 503 (``--schema-queue``)
    schema_queue: int = 64
    #: seconds a client may take to send a request's headers (``--header-timeout-ms``)
    header_timeout: float = 10.0
    #: seconds a client may take to send a request's body (``--body-timeout-ms``)
    body_timeout: float = 30.0
    #: bytes of cached read answers (``--response-cache-bytes``)
    response_cache_bytes: int = 64 * MiB
    #: bytes of parsed schemas (estimated from their text) in each parse cache (``--parse-cache-bytes``): ~800
    #: Avro records of 400 characters. Parsed schemas serve registrations, lookups and compatibility checks of the
    #: schemas in use (a miss parses again); the read answers do not need them
    parse_cache_bytes: int = 8 * MiB


#: seconds one protoc run (compiling a Protobuf schema) may take before it is killed and the schema refused
#: (``--protoc-timeout-ms``): the default of ``RegistryConfig.protoc_timeout``, kept here because the schema
#: types use it without a config (``schemakit compat check``) and sit below ``config.py``
DEFAULT_PROTOC_TIMEOUT = 10.0
#: JSON nesting of a request body itself (the schema is a string inside it; metadata and rule sets nest a
#: few levels): deeper bodies are refused before anything walks them (rendering stops at 255 levels)
MAX_BODY_DEPTH = 64
#: characters of a reference name (an Avro full name, a .proto import path, a JSON Schema ``$ref`` URL)
MAX_REFERENCE_NAME = 4096


def check_schema_size(schema: str, limits: Limits) -> None:
    """42201 when the schema's UTF-8 form is longer than ``max_schema_bytes``; no copy for the usual sizes."""
    limit = limits.max_schema_bytes
    n = len(schema)
    if n > limit or (4 * n > limit and len(schema.encode("utf-8", "surrogatepass")) > limit):
        raise errors.limit_exceeded("the schema's size in bytes", limit, "--max-schema-bytes")


def check_schema_depth(schema_type: str, schema: str, limits: Limits) -> None:
    """42201 when the schema nests deeper than ``max_schema_depth`` (counted outside strings and comments)."""
    limit = limits.max_schema_depth
    if nesting_depth(schema, braces_only=schema_type == "PROTOBUF", limit=limit) > limit:
        raise errors.limit_exceeded("the schema's nesting depth", limit, "--max-schema-depth")


def nesting_depth(text: str, *, braces_only: bool = False, limit: int | None = None) -> int:
    """The deepest nesting of ``[]``/``{}`` in JSON text outside strings, or (``braces_only``) of ``{}`` in a
    .proto file outside strings and comments. With ``limit``, the scan stops once the depth passes it.

    Linear, and made of short steps: this runs in a worker thread beside the event loop, and one long call
    into C (a regular expression over a megabyte of escapes takes 0.4 s) would hold the GIL that long."""
    if braces_only:
        return _proto_depth(text, limit)
    return _json_depth(text, limit)


#: characters one C-level step of the JSON scan looks at
_WINDOW = 1 << 16
_NOT_JSON_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _json_depth(text: str, limit: int | None) -> int:
    depth = peak = 0
    pos, n = 0, len(text)
    while pos < n:
        quote = text.find('"', pos)
        end = n if quote < 0 else quote
        for start in range(pos, end, _WINDOW):
            brackets = _NOT_JSON_BRACKET.sub("", text[start : min(end, start + _WINDOW)])
            if brackets:
                running = list(accumulate(map(_STEP.__getitem__, brackets), initial=depth))
                peak, depth = max(peak, max(running)), running[-1]
                if limit is not None and peak > limit:
                    return peak
        if quote < 0:
            break
        try:
            pos = scanstring(text, quote + 1, False)[1]  # C, and fast on escapes
        except ValueError:  # an unterminated or invalid string: the parser reports it
            break
    return peak


_PROTO_SPECIAL = re.compile(r"[\"'/{}]")


def _proto_depth(text: str, limit: int | None) -> int:
    depth = peak = 0
    pos, n = 0, len(text)
    search = _PROTO_SPECIAL.search
    while (m := search(text, pos)) is not None:
        c, i = m.group(), m.start()
        pos = i + 1
        if c == "{":
            depth += 1
            if depth > peak:
                peak = depth
                if limit is not None and peak > limit:
                    return peak
        elif c == "}":
            depth -= 1
        elif c == "/" and text.startswith("//", i):
            newline = text.find("\n", i)
            pos = n if newline < 0 else newline + 1
        elif c == "/" and text.startswith("/*", i):
            close = text.find("*/", i + 2)
            pos = n if close < 0 else close + 2
        elif c in "\"'":
            pos = _proto_string_end(text, i + 1, c)
    return peak


def _proto_string_end(text: str, pos: int, quote: str) -> int:
    """Where a .proto string literal that opened before ``pos`` ends (after its line when unterminated)."""
    while True:
        close = text.find(quote, pos)
        newline = text.find("\n", pos, len(text) if close < 0 else close)
        if newline >= 0:
            return newline + 1
        if close < 0:
            return len(text)
        if (close - pos - len(text[pos:close].rstrip("\\"))) % 2 == 0:  # the quote is not escaped
            return close + 1
        pos = close + 1


def json_depth_exceeds(value: object, limit: int) -> bool:
    """Does a decoded JSON value nest more than ``limit`` arrays/objects deep? Iterative, level by level, and
    stops at the first level past the limit."""
    level: list[object] = [value]
    depth = 0
    while level:
        containers = [v for v in level if isinstance(v, dict | list)]
        if not containers:
            return False
        depth += 1
        if depth > limit:
            return True
        level = [c for v in containers for c in (v.values() if isinstance(v, dict) else v)]
    return False
