"""Hostile input against a running registry: each request gets Confluent's envelope with a specific status
and code, and ``GET /subjects`` stays fast while the hostile request is in flight (``hostile.py`` proves the
overlap: the hostile request was sent, at least partly, and still had no answer when each GET's answer
came).

Most tests share one server started with small limits, so that the hostile inputs stay small:
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from registry.http.protocol import MAX_HEADER_BYTES
from registry.limits import MAX_BODY_DEPTH, MAX_REFERENCE_NAME
from tests.registry.hostile import (
    AllOf,
    RawRequest,
    assert_gets_fast,
    finish,
    gets_while_in_flight,
    request,
)
from tests.support.ports import free_port
from tests.support.registry_process import RegistryProcess

REQUEST_LIMIT = 1024 * 1024
SCHEMA_LIMIT = 256 * 1024
DEPTH_LIMIT = 32
REFERENCE_LIMIT = 64
LIMITS = [
    *("--max-request-bytes", str(REQUEST_LIMIT)),
    *("--max-schema-bytes", str(SCHEMA_LIMIT)),
    *("--max-schema-depth", str(DEPTH_LIMIT)),
    *("--max-schema-references", str(REFERENCE_LIMIT)),
    *("--header-timeout-ms", "1000"),
    *("--body-timeout-ms", "1000"),
    *("--schema-workers", "1"),
    *("--schema-queue", "1"),
]
JSON_TYPE = {"schemaType": "JSON"}


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    d = tmp_path_factory.mktemp("hardening")
    server = RegistryProcess(f"sqlite:///{d / 'data'}", free_port(), d / "server.log", LIMITS).start()
    yield server.url
    server.stop()


@pytest.fixture
def http(url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url, timeout=60) as client:
        yield client


def body(schema: object, **fields: Any) -> bytes:
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return json.dumps({"schema": text, **fields}).encode()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def held(url: str, method: str, path: str, data: bytes) -> tuple[int, Any]:
    """Send ``data`` with its last byte held back, time GETs while it is in flight, then complete it: GETs
    that overlap the work on the complete request (if it takes long enough for any) count as well."""
    r = request(url, method, path, data)
    latencies = gets_while_in_flight(url, r)
    finish(r)
    assert_gets_fast(latencies + gets_while_in_flight(url, r))
    answer = r.answer()
    r.close()
    return answer.status, answer.json()


def objects(count: int, props: int, suffix: str = "") -> dict[str, Any]:
    """A JSON Schema whose FULL compatibility check against a variant takes about a second (bounded by
    compat's limits, but far too long for the event loop)."""
    return {
        "oneOf": [
            {"type": "object", "properties": {f"p{i}_{j}{suffix}": {"type": "string"} for j in range(props)}}
            for i in range(count)
        ]
    }


def slow_check_subject(http: httpx.Client) -> str:
    subject = unique("slow")
    assert http.put(f"/config/{subject}", json={"compatibility": "FULL"}).status_code == 200
    assert http.post(f"/subjects/{subject}/versions", content=body(objects(30, 20), **JSON_TYPE)).status_code == 200
    return subject


# -- request size ---------------------------------------------------------------------------------------


def test_a_chunked_body_past_the_limit_is_413_while_it_arrives(url: str) -> None:
    r = RawRequest(url, "POST", f"/subjects/{unique('big')}/versions", chunked=True).send_head()
    chunk = b" " * 65536
    for _ in range(REQUEST_LIMIT // len(chunk) - 1):  # just under the limit: the server keeps reading
        r.send(chunk)
    assert_gets_fast(gets_while_in_flight(url, r))
    try:
        for _ in range(4):
            r.send(chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass  # refused as soon as the limit passed
    answer = r.answer()
    assert (answer.status, answer.headers["connection"]) == (413, "close")
    assert answer.json() == {
        "error_code": 413,
        "message": f"Request body is larger than the limit of {REQUEST_LIMIT} bytes (--max-request-bytes)",
    }


@pytest.mark.parametrize(("method", "path"), [("POST", "/subjects/s/versions"), ("PUT", "/config")])
def test_a_declared_length_past_the_limit_is_413_before_the_body(url: str, method: str, path: str) -> None:
    r = RawRequest(url, method, path, content_length=REQUEST_LIMIT + 1).send_head()
    answer = r.answer(timeout=10)  # nothing of the body was sent
    assert (answer.status, answer.json()["error_code"]) == (413, 413)


# -- schema limits, checked before parsing --------------------------------------------------------------


def nested_json_schema(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


@pytest.fixture(scope="module")
def many_subjects(url: str) -> list[str]:
    """REFERENCE_LIMIT + 1 subjects a schema can reference."""
    names = [f"leaf-{i}" for i in range(REFERENCE_LIMIT + 1)]
    with httpx.Client(base_url=url, timeout=60) as client:
        for name in names:
            assert client.post(f"/subjects/{name}/versions", content=body({"type": "string"}, **JSON_TYPE)).is_success
    return names


LIMIT_CASES = {
    "size": (
        body({"type": "string", "description": "x" * SCHEMA_LIMIT}, **JSON_TYPE),
        f"Invalid schema: the schema's size in bytes exceeds the limit of {SCHEMA_LIMIT} (--max-schema-bytes)",
    ),
    "depth": (
        body(nested_json_schema(DEPTH_LIMIT // 2 + 1), **JSON_TYPE),
        f"Invalid schema: the schema's nesting depth exceeds the limit of {DEPTH_LIMIT} (--max-schema-depth)",
    ),
    # past Python's recursion limit: refused by the scan before a recursive parser could fail with a 500
    "recursion": (
        body("[" * 100_000 + "]" * 100_000, **JSON_TYPE),
        f"Invalid schema: the schema's nesting depth exceeds the limit of {DEPTH_LIMIT} (--max-schema-depth)",
    ),
    "avro depth": (
        body({"type": "array", "items": json.loads('{"type": "array", "items": ' * 40 + '"int"' + "}" * 40)}),
        f"Invalid schema: the schema's nesting depth exceeds the limit of {DEPTH_LIMIT} (--max-schema-depth)",
    ),
}


@pytest.mark.parametrize("case", LIMIT_CASES)
def test_a_schema_past_a_limit_is_42201_naming_it(url: str, case: str) -> None:
    data, message = LIMIT_CASES[case]
    assert held(url, "POST", f"/subjects/{unique('limit')}/versions", data) == (
        422,
        {"error_code": 42201, "message": message},
    )


def test_too_many_references_is_42201_naming_the_limit(url: str, many_subjects: list[str]) -> None:
    references = [{"name": f"{s}.json", "subject": s, "version": 1} for s in many_subjects]
    data = body({"type": "object"}, references=references, **JSON_TYPE)
    assert held(url, "POST", f"/subjects/{unique('refs')}/versions", data) == (
        422,
        {
            "error_code": 42201,
            "message": "Invalid schema: the number of referenced schemas (directly or through references) exceeds "
            f"the limit of {REFERENCE_LIMIT} (--max-schema-references)",
        },
    )


def test_a_deeply_nested_body_is_400_not_a_recursion_error(url: str) -> None:
    deep: Any = {}
    for _ in range(200):
        deep = {"x": deep}
    data = body({"type": "string"}, **JSON_TYPE, metadata={"properties": {}, "extra": deep})
    assert held(url, "POST", f"/subjects/{unique('meta')}/versions", data) == (
        400,
        {"error_code": 400, "message": f"Request body nests deeper than {MAX_BODY_DEPTH} levels"},
    )


def ref_chain(length: int, leaf: object) -> dict[str, Any]:
    """$ref after $ref: shallow text, but a check follows ``length`` levels."""
    defs: dict[str, Any] = {
        f"d{i}": {"type": "object", "properties": {"next": {"$ref": f"#/$defs/d{i + 1}"}}} for i in range(length)
    }
    defs[f"d{length}"] = leaf
    return {"$defs": defs, "$ref": "#/$defs/d0"}


@pytest.mark.parametrize("path", ["/subjects/{s}/versions", "/compatibility/subjects/{s}/versions/latest"])
def test_a_compatibility_check_past_its_bounds_is_42201(http: httpx.Client, url: str, path: str) -> None:
    subject = unique("chain")
    assert (
        http.post(
            f"/subjects/{subject}/versions", content=body(ref_chain(300, {"type": "string"}), **JSON_TYPE)
        ).status_code
        == 200
    )
    status, answer = held(url, "POST", path.format(s=subject), body(ref_chain(300, {"type": "number"}), **JSON_TYPE))
    assert (status, answer["error_code"]) == (422, 42201)
    assert answer["message"].startswith(
        "Schema too deeply nested: a compatibility check follows at most 128 levels (at '#/$defs/d"
    )


# -- schema work off the event loop, in a bounded pool --------------------------------------------------


def test_a_slow_compatibility_check_leaves_reads_fast(http: httpx.Client, url: str) -> None:
    subject = slow_check_subject(http)
    r = request(url, "POST", f"/subjects/{subject}/versions", body(objects(30, 20, "x"), **JSON_TYPE), hold=False)
    assert_gets_fast(gets_while_in_flight(url, r))  # the whole check: about a second
    answer = r.answer()
    assert (answer.status, answer.json()["error_code"]) == (409, 409)
    assert answer.json()["message"].startswith(
        f'Schema being registered is incompatible with an earlier schema for subject "{subject}"'
    )


def test_a_full_pool_answers_503_with_retry_after(http: httpx.Client, url: str) -> None:
    """One worker and a queue of one: of four slow checks sent at once, some are refused at once."""
    data = body(objects(30, 20, "y"), **JSON_TYPE)
    slow = [
        request(url, "POST", f"/subjects/{s}/versions", data, hold=False)
        for s in [slow_check_subject(http) for _ in range(4)]
    ]
    assert_gets_fast(gets_while_in_flight(url, AllOf(slow)))
    answers = [r.answer() for r in slow]
    refused = [a for a in answers if a.status == 503]
    assert refused and len(refused) < 4 and {a.status for a in answers} == {409, 503}
    for answer in refused:
        assert (answer.headers["retry-after"], answer.json()["error_code"]) == ("1", 503)
        assert answer.json()["message"].startswith("Too much schema work in progress")
    schema = body({"type": "object", "title": unique("later")}, **JSON_TYPE)  # once the pool has room again
    assert http.post(f"/compatibility/subjects/{unique('later')}/versions", content=schema).json() == {
        "is_compatible": True
    }


# -- references -----------------------------------------------------------------------------------------


def test_a_diamond_of_references_resolves_once_per_subject_version(http: httpx.Client, url: str) -> None:
    """Each level references both subjects of the next: 2**23 paths to the bottom, 46 subject-versions."""
    levels, prefix = 23, unique("dia")
    for i in range(levels - 1, -1, -1):
        for side in "ab":
            if i == levels - 1:
                schema, refs = {"type": "string"}, []
            else:
                schema = {"type": "object", "properties": {s: {"$ref": f"{prefix}-{i + 1}-{s}.json"} for s in "ab"}}
                refs = [
                    {"name": f"{prefix}-{i + 1}-{s}.json", "subject": f"{prefix}-{i + 1}-{s}", "version": 1}
                    for s in "ab"
                ]
            answer = http.post(
                f"/subjects/{prefix}-{i}-{side}/versions", content=body(schema, references=refs, **JSON_TYPE)
            )
            assert answer.status_code == 200, answer.text
    top = {"type": "object", "properties": {s: {"$ref": f"{prefix}-0-{s}.json"} for s in "ab"}}
    refs = [{"name": f"{prefix}-0-{s}.json", "subject": f"{prefix}-0-{s}", "version": 1} for s in "ab"]
    status, answer = held(url, "POST", f"/subjects/{prefix}-top/versions", body(top, references=refs, **JSON_TYPE))
    assert (status, answer["version"]) == (200, 1) and isinstance(answer["id"], int)


def test_latest_references_are_stored_as_the_version_they_name(http: httpx.Client, url: str) -> None:
    base, user = unique("base"), unique("user")
    for title in ("v1", "v2"):
        assert (
            http.post(
                f"/subjects/{base}/versions", content=body({"type": "object", "title": title}, **JSON_TYPE)
            ).status_code
            == 200
        )
    data = body({"$ref": "base.json"}, references=[{"name": "base.json", "subject": base, "version": -1}], **JSON_TYPE)
    status, answer = held(url, "POST", f"/subjects/{user}/versions", data)
    assert status == 200
    stored = http.get(f"/subjects/{user}/versions/1").json()
    assert stored["references"] == [{"name": "base.json", "subject": base, "version": 2}]
    # the delete guard sees the concrete version; a lookup with -1 finds the schema
    assert http.delete(f"/subjects/{base}/versions/2").json()["error_code"] == 42206
    assert http.post(f"/subjects/{user}", content=data).json()["id"] == answer["id"]
    assert http.get(f"/subjects/{base}/versions/2/referencedby").json() == [answer["id"]]


def test_a_latest_reference_in_a_context_names_the_contexts_subject(http: httpx.Client) -> None:
    ctx, base = f".{unique('ctx')}", unique("base")
    assert http.post(f"/subjects/{base}/versions", content=body({"type": "object"}, **JSON_TYPE)).is_success
    for title in ("v1", "v2"):  # the context's own subject of that name has two versions
        assert http.post(
            f"/subjects/:{ctx}:{base}/versions", content=body({"type": "object", "title": title}, **JSON_TYPE)
        ).is_success
    data = body({"$ref": "base.json"}, references=[{"name": "base.json", "subject": base, "version": -1}], **JSON_TYPE)
    assert http.post(f"/subjects/:{ctx}:user/versions", content=data).is_success
    assert http.get(f"/subjects/:{ctx}:user/versions/1").json()["references"] == [
        {"name": "base.json", "subject": base, "version": 2}
    ]


def test_latest_references_both_ways_never_make_a_cycle(http: httpx.Client, url: str) -> None:
    """B v2 references A (-1: A v1), which references B (-1 when A was registered: B v1): a chain, not a loop."""
    a, b = unique("cyc-a"), unique("cyc-b")
    for subject in (a, b):
        assert http.put(f"/config/{subject}", json={"compatibility": "NONE"}).status_code == 200
    assert http.post(f"/subjects/{b}/versions", content=body({"type": "object"}, **JSON_TYPE)).is_success

    def register(subject: str, other: str, *, hold: bool = False) -> Any:
        schema = {"type": "object", "properties": {"other": {"$ref": "other.json"}}}
        data = body(schema, references=[{"name": "other.json", "subject": other, "version": -1}], **JSON_TYPE)
        if hold:
            status, answer = held(url, "POST", f"/subjects/{subject}/versions", data)
            assert status == 200, answer
            return answer
        return http.post(f"/subjects/{subject}/versions", content=data).json()

    register(a, b)
    register(b, a)
    assert http.get(f"/subjects/{b}/versions/2").json()["references"] == [
        {"name": "other.json", "subject": a, "version": 1}
    ]
    top = register(a, b, hold=True)  # A v2 -> B v2 -> A v1 -> B v1
    assert http.get(f"/subjects/{a}/versions/2").json()["id"] == top["id"]
    assert http.delete(f"/subjects/{b}/versions/1").json()["error_code"] == 42206  # A v1 still uses it


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "Invalid schema: a reference has an empty name"),
        ("n" * (MAX_REFERENCE_NAME + 1), f"exceeds the limit of {MAX_REFERENCE_NAME}"),
    ],
)
def test_bad_reference_names_are_42201(url: str, many_subjects: list[str], name: str, message: str) -> None:
    data = body({"type": "object"}, references=[{"name": name, "subject": many_subjects[0], "version": 1}], **JSON_TYPE)
    status, answer = held(url, "POST", f"/subjects/{unique('badref')}/versions", data)
    assert (status, answer["error_code"]) == (422, 42201)
    assert message in answer["message"] and len(answer["message"]) < 500


# -- input the API never accepts ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b'{"schema": "{\\"type\\": \\"string\\", \\"doc\\": \\"\\ud800\\"}"}',
        b'{"schema": "\\"string\\"", "references": [{"name": "a", "subject": "\\udfff", "version": 1}]}',
    ],
    ids=["in the schema", "in a reference"],
)
def test_lone_surrogates_in_a_body_are_400(url: str, data: bytes) -> None:
    status, answer = held(url, "POST", f"/subjects/{unique('sur')}/versions", data)
    assert (status, answer["error_code"]) == (400, 400)
    assert "surrogate" in answer["message"]


def test_surrogates_and_raw_bytes_in_a_path_are_answered_in_the_envelope(url: str) -> None:
    r = request(url, "GET", "/subjects/%ED%A0%80/versions")  # a UTF-8-encoded lone surrogate
    assert_gets_fast(gets_while_in_flight(url, r))
    finish(r)
    answer = r.answer()
    assert (answer.status, answer.json()["error_code"]) == (404, 40401)
    raw = RawRequest(url, "GET", "/subjects/X/versions")  # a raw byte that is not ASCII: uvicorn refuses it
    raw.sock.sendall(raw.head_bytes().replace(b"/X/", b"/\xff/"))
    answer = raw.answer()
    assert (answer.status, answer.json()["error_code"]) == (400, 400)


NOT_ASCII_DIGITS = ["%D9%A3", "+1", "%201", "1_000"]  # Arabic-Indic three, sign, space, underscore


@pytest.mark.parametrize("text", [*NOT_ASCII_DIGITS, "2147483648", "99999999999999999999999"])
def test_ids_and_versions_are_ascii_digits_within_32_bits(http: httpx.Client, url: str, text: str) -> None:
    status, answer = held(url, "GET", f"/schemas/ids/{text}", b"")
    assert (status, answer) == (404, {"error_code": 404, "message": "HTTP 404 Not Found"})
    subject = unique("ver")
    assert http.post(f"/subjects/{subject}/versions", content=body({"type": "string"}, **JSON_TYPE)).is_success
    status, answer = held(url, "GET", f"/subjects/{subject}/versions/{text}", b"")
    assert (status, answer["error_code"]) == (422, 42202)
    if text in NOT_ASCII_DIGITS:
        assert http.get(f"/subjects?limit={text}").json()["error_code"] == 400
    assert http.get("/schemas/ids/2147483647").json()["error_code"] == 40403  # the largest id is a valid one


def test_the_largest_id_is_the_last_one_allocated(start_registry: Any) -> None:
    server = start_registry()
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert http.put("/mode/imported", json={"mode": "IMPORT"}).status_code == 200
        top = {"type": "string", "title": "top"}
        assert (
            http.post("/subjects/imported/versions", content=body(top, id=2**31 - 1, version=1, **JSON_TYPE)).json()[
                "id"
            ]
            == 2**31 - 1
        )
        assert (
            http.post("/subjects/imported/versions", content=body(top, id=2**31, version=2, **JSON_TYPE)).json()[
                "error_code"
            ]
            == 422
        )  # not a 32-bit id
        status, answer = held(server.url, "POST", "/subjects/new/versions", body({"type": "number"}, **JSON_TYPE))
    assert (status, answer["error_code"]) == (500, 50001)
    assert answer["message"] == "Register schema operation failed: no schema id is left (ids end at 2147483647)"


# -- slow clients ---------------------------------------------------------------------------------------


def test_headers_sent_too_slowly_are_408(url: str) -> None:
    r = RawRequest(url, "GET", "/subjects")
    r.sock.sendall(r.head_bytes()[:-4])  # never the blank line that ends the headers
    start = time.monotonic()
    assert_gets_fast(gets_while_in_flight(url, r, samples=5))
    answer = r.answer(timeout=10)
    assert (answer.status, answer.json()) == (
        408,
        {"error_code": 408, "message": "Request headers not received within 1 s (--header-timeout-ms)"},
    )
    assert time.monotonic() - start < 5 and r.closed_by_server()


def test_headers_past_their_size_limit_are_431(url: str) -> None:
    r = RawRequest(url, "GET", "/subjects")
    r.sock.sendall(r.head_bytes()[:-2])  # the headers go on...
    try:
        for i in range(MAX_HEADER_BYTES // 1000 + 2):
            r.sock.sendall(f"x-filler-{i}: {'y' * 1000}\r\n".encode())
    except (BrokenPipeError, ConnectionResetError):
        pass  # refused as soon as the limit passed
    answer = r.answer(timeout=10)
    assert (answer.status, answer.json()) == (
        431,
        {"error_code": 431, "message": f"Request headers are larger than the limit of {MAX_HEADER_BYTES} bytes"},
    )
    assert r.closed_by_server()
    assert httpx.get(f"{url}/subjects", timeout=10).status_code == 200


def test_a_body_sent_too_slowly_is_408(url: str) -> None:
    r = RawRequest(url, "POST", f"/subjects/{unique('slowbody')}/versions", content_length=100).send_head()
    r.send(b'{"schema": ')
    assert_gets_fast(gets_while_in_flight(url, r, samples=5))
    answer = r.answer(timeout=10)
    assert (answer.status, answer.json()) == (
        408,
        {"error_code": 408, "message": "Request body not received within 1 s (--body-timeout-ms)"},
    )
    assert r.closed_by_server()


# -- echoed input ---------------------------------------------------------------------------------------


def test_error_messages_do_not_echo_a_megabyte_back(registry_url: str) -> None:
    """On the default limits (1 MiB schemas): a 1 MB bad default comes back clipped."""
    schema = {"type": "record", "name": "r", "fields": [{"name": "f", "type": "int", "default": "x" * 1_000_000}]}
    status, answer = held(registry_url, "POST", f"/subjects/{unique('echo')}/versions", body(schema))
    assert (status, answer["error_code"]) == (422, 42201)
    message = answer["message"]
    assert message.startswith("Invalid schema of type AVRO, details: ") and len(message) < 2100
    assert "characters omitted" in message


# -- compatibilityPolicy (Confluent 8) ------------------------------------------------------------------


def test_compatibility_policy_on_config_decides_json_schema_verdicts(http: httpx.Client) -> None:
    subject = unique("policy")
    old = {"type": "object", "properties": {"a": {"type": "string"}}}  # an open content model
    new = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}
    assert http.post(f"/subjects/{subject}/versions", content=body(old, **JSON_TYPE)).status_code == 200

    def verdict() -> Any:
        return http.post(
            f"/compatibility/subjects/{subject}/versions/latest?verbose=true", content=body(new, **JSON_TYPE)
        ).json()

    strict = verdict()
    assert strict["is_compatible"] is False
    assert "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL" in strict["messages"][0]
    assert http.put(f"/config/{subject}", json={"compatibilityPolicy": "lenient"}).json() == {
        "compatibilityPolicy": "LENIENT"
    }
    assert http.get(f"/config/{subject}").json() == {"compatibilityLevel": "BACKWARD", "compatibilityPolicy": "LENIENT"}
    assert verdict() == {"is_compatible": True, "messages": []}
    assert http.post(f"/subjects/{subject}/versions", content=body(new, **JSON_TYPE)).status_code == 200
    assert http.put(f"/config/{subject}", json={"compatibilityPolicy": "STRICT"}).status_code == 200
    newer = {**new, "properties": {**new["properties"], "c": {"type": "boolean"}}}
    assert http.post(f"/subjects/{subject}/versions", content=body(newer, **JSON_TYPE)).json()["error_code"] == 409
    refused = http.put(f"/config/{subject}", json={"compatibilityPolicy": "LOGICAL"}).json()
    assert refused == {
        "error_code": 42203,
        "message": "Invalid compatibility policy 'LOGICAL'. Valid values are STRICT and LENIENT "
        "(Confluent's LOGICAL is not supported)",
    }


def test_limits_default_to_their_documented_values_and_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from registry.cli import _limits, build_parser

    limits = _limits(build_parser().parse_args(["serve"]))
    assert (limits.max_request_bytes, limits.max_schema_bytes, limits.max_schema_depth) == (16 * 2**20, 2**20, 128)
    assert (limits.header_timeout, limits.body_timeout) == (10.0, 30.0)
    monkeypatch.setenv("SCHEMAKIT_MAX_REQUEST_BYTES", "4096")
    monkeypatch.setenv("SCHEMAKIT_BODY_TIMEOUT_MS", "2500")
    limits = _limits(build_parser().parse_args(["serve", "--max-schema-depth", "64"]))
    assert (limits.max_request_bytes, limits.body_timeout, limits.max_schema_depth) == (4096, 2.5, 64)


# -- super-linear inputs, sent to the server (the engines are unit-tested in tests/compat) ---------------

EVIL_PATTERN = "^(a+)+$"  # exponential for a backtracking engine on "aaa...a!"


def closed_object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "patternProperties": {EVIL_PATTERN: {"type": "string"}},
        "additionalProperties": False,
    }


def test_a_catastrophic_pattern_is_checked_in_linear_time(http: httpx.Client, url: str) -> None:
    subject = unique("regex")
    assert http.post(f"/subjects/{subject}/versions", content=body(closed_object({}), **JSON_TYPE)).is_success
    path = f"/compatibility/subjects/{subject}/versions/latest?verbose=true"
    # the pattern does not match: a backtracking engine never ends; the old schema cannot write the name
    data = body(closed_object({"a" * 100_000 + "!": {"type": "number"}}), **JSON_TYPE)
    assert held(url, "POST", path, data) == (200, {"is_compatible": True, "messages": []})
    # it matches: the old schema writes the name as a string, the new one reads a number
    data = body(closed_object({"a" * 100_000: {"type": "number"}}), **JSON_TYPE)
    status, answer = held(url, "POST", path, data)
    assert status == 200 and answer["is_compatible"] is False
    assert any("TYPE_CHANGED" in message for message in answer["messages"])


def test_a_long_number_in_an_avro_default_is_42201_in_linear_time(url: str) -> None:
    field = {"name": "f", "type": "double", "default": "1" * 200_000 + "x"}
    data = body({"type": "record", "name": "R", "fields": [field]})
    status, answer = held(url, "POST", f"/subjects/{unique('num')}/versions", data)
    assert (status, answer["error_code"]) == (422, 42201)
    assert answer["message"].startswith('Invalid schema of type AVRO, details: Invalid default for field f: "1111')
    assert len(answer["message"]) < 2100


def test_protobuf_text_that_looks_like_base64_is_42201_in_linear_time(url: str) -> None:
    data = body("A" + "\n" * 200_000 + "!", schemaType="PROTOBUF")
    status, answer = held(url, "POST", f"/subjects/{unique('b64')}/versions", data)
    assert (status, answer["error_code"]) == (422, 42201)
    assert answer["message"].startswith("Invalid schema of type PROTOBUF")


# -- the read cache against a running server ------------------------------------------------------------


def cache_samples(http: httpx.Client) -> tuple[float, float, float]:
    """(entries, bytes, hits) of the read cache, from ``/metrics``."""
    from prometheus_client.parser import text_string_to_metric_families

    values = {
        s.name: s.value for family in text_string_to_metric_families(http.get("/metrics").text) for s in family.samples
    }
    return tuple(values[f"schemakit_registry_read_cache_{n}"] for n in ("entries", "bytes", "hits_total"))


def test_the_read_cache_ignores_unknown_parameters_and_stays_within_its_bytes(start_registry: Any) -> None:
    budget = 20_000
    server = start_registry(None, "--response-cache-bytes", str(budget))
    with httpx.Client(base_url=server.url, timeout=30) as http:
        schemas = [
            body({"type": "string", "title": f"t{i}", "description": "d" * 1000}, **JSON_TYPE) for i in range(40)
        ]
        ids = [http.post("/subjects/cached/versions", content=schema).json()["id"] for schema in schemas]
        first = http.get(f"/schemas/ids/{ids[0]}").json()
        entries, size, hits = cache_samples(http)
        for i in range(50):  # a random parameter no route reads, long ones too: the same entry answers
            junk = uuid.uuid4().hex * (1 if i % 2 else 300)
            assert http.get(f"/schemas/ids/{ids[0]}?junk={junk}").json() == first
        assert cache_samples(http) == (entries, size, hits + 50)
        for schema_id in ids:  # 40 answers of over 1 kB: twice what the budget holds
            assert http.get(f"/schemas/ids/{schema_id}?subject=cached").status_code == 200
        entries, size, _ = cache_samples(http)
        assert 0 < size <= budget and entries < 20
