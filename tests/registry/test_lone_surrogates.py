"""A lone UTF-16 surrogate escaped inside schema text (``"doc": "\\ud800"``), which Confluent's Java parser
accepts: the schema is stored, served back with the surrogate as an escape that parses to the same string,
found again by content (same id, also after a restart replays the log), and never confused with the schema
whose doc is ``?`` (which Java's hash would give it). Error and compatibility messages that echo such a value
are answered, in Confluent's envelope. A lone surrogate escaped in the JSON body itself stays a ``400``
(``test_hardening.py``)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.registry_process import RegistryProcess

V1 = "application/vnd.schemaregistry.v1+json"
AVRO_DOC = '{"type":"record","name":"R","doc":"\\ud800","fields":[{"name":"f","type":"string","doc":"x\\udfffy"}]}'
AVRO_QUESTION_MARK = '{"type":"record","name":"R","doc":"?","fields":[{"name":"f","type":"string","doc":"x?y"}]}'
JSON_KEY = '{"type":"object","properties":{"\\udc00":{"type":"string","description":"\\ud800"}}}'


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def http(module_registry: RegistryProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=module_registry.url, timeout=30, headers={"content-type": V1}) as client:
        yield client


def post(http: httpx.Client, path: str, schema: str, **fields: Any) -> httpx.Response:
    return http.post(path, content=json.dumps({"schema": schema, **fields}))


def test_an_avro_doc_with_a_lone_surrogate_is_stored_and_found_again(
    http: httpx.Client, module_registry: RegistryProcess
) -> None:
    subject = unique("avro-surrogate")
    first = post(http, f"/subjects/{subject}/versions", AVRO_DOC)
    assert first.status_code == 200, first.text
    schema_id = first.json()["id"]
    assert post(http, f"/subjects/{subject}/versions", AVRO_DOC).json()["id"] == schema_id
    found = post(http, f"/subjects/{subject}", AVRO_DOC)
    assert (found.status_code, found.json()["version"]) == (200, 1)
    assert post(http, f"/compatibility/subjects/{subject}/versions/latest", AVRO_DOC).json() == {"is_compatible": True}

    served = http.get(f"/schemas/ids/{schema_id}")
    served.content.decode("utf-8")  # the answer is UTF-8 throughout
    parsed = json.loads(served.json()["schema"])
    assert (parsed["doc"], parsed["fields"][0]["doc"]) == ("\ud800", "x\udfffy")
    assert "\\uD800" in served.json()["schema"]  # written as an escape (Jackson's upper-case hex)

    other = post(http, f"/subjects/{subject}-q/versions", AVRO_QUESTION_MARK)
    assert other.status_code == 200 and other.json()["id"] != schema_id

    module_registry.restart()  # the log replays into the same state
    assert http.get(f"/schemas/ids/{schema_id}").json()["schema"] == served.json()["schema"]
    assert post(http, f"/subjects/{subject}", AVRO_DOC).json()["id"] == schema_id


@pytest.mark.parametrize("normalize", ["false", "true"])
def test_a_json_schema_with_lone_surrogates_is_stored(http: httpx.Client, normalize: str) -> None:
    subject = unique("json-surrogate")
    path = f"/subjects/{subject}/versions?normalize={normalize}"
    first = post(http, path, JSON_KEY, schemaType="JSON")
    assert first.status_code == 200, first.text
    assert post(http, path, JSON_KEY, schemaType="JSON").json()["id"] == first.json()["id"]
    served = json.loads(http.get(f"/schemas/ids/{first.json()['id']}").json()["schema"])
    assert served["properties"]["\udc00"]["description"] == "\ud800"


def test_a_protobuf_string_with_an_escaped_surrogate_is_stored_as_protoc_reads_it(http: httpx.Client) -> None:
    """protoc turns ``\\ud800`` in a string literal into the bytes ED A0 80; the printer writes them back as
    octal escapes, so the text is stored as protoc understood it."""
    text = 'syntax = "proto3";\nmessage M {\n  string a = 1 [json_name = "\\ud800"];\n}\n'
    r = post(http, f"/subjects/{unique('proto-surrogate')}/versions", text, schemaType="PROTOBUF")
    assert r.status_code == 200, r.text
    assert "\\355\\240\\200" in http.get(f"/schemas/ids/{r.json()['id']}").json()["schema"]


@pytest.mark.parametrize(
    ("schema", "schema_type", "detail"),
    [
        ('{"type":"\\ud800"}', "AVRO", "\ud800"),
        ('{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":"\\ud800"}]}', "AVRO", "\\uD800"),
        ('{"type":"enum","name":"E","symbols":["\\ud800"]}', "AVRO", "\ud800"),
        ('syntax = "\\ud800"; message M { string a = 1; }', "PROTOBUF", "\\xed"),
        ('syntax = "proto3"; import "\\ud800"; message M { string a = 1; }', "PROTOBUF", "\\xed"),
    ],
    ids=["avro type name", "avro default", "avro enum symbol", "proto syntax", "proto import"],
)
def test_errors_that_echo_a_lone_surrogate_are_42201(
    http: httpx.Client, schema: str, schema_type: str, detail: str
) -> None:
    r = post(http, f"/subjects/{unique('bad-surrogate')}/versions", schema, schemaType=schema_type)
    assert (r.status_code, r.json()["error_code"]) == (422, 42201), r.text
    assert detail in r.json()["message"]


def test_compatibility_messages_that_echo_a_lone_surrogate_are_answered(http: httpx.Client) -> None:
    subject = unique("compat-surrogate")
    assert post(http, f"/subjects/{subject}/versions", '{"format":"\\ud800"}', schemaType="JSON").status_code == 200
    r = post(
        http, f"/compatibility/subjects/{subject}/versions/latest?verbose=true", '{"type":"integer"}', schemaType="JSON"
    )
    assert r.status_code == 200, r.text
    assert r.json()["is_compatible"] is False
    assert any("\\uD800" in m for m in r.json()["messages"])
