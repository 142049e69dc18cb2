"""Answers where Confluent's server is specific, against the real server: the status, the code and the text
a Confluent client sees (the Java sources named in each test are Confluent Schema Registry's)."""

from __future__ import annotations

import json
from collections.abc import Callable
from urllib.parse import quote

import httpx

from tests.registry.schemas import V1, V2, record
from tests.support.registry_process import RegistryProcess

CT = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


def register(http: httpx.Client, subject: str, schema: str, **extra: object) -> httpx.Response:
    return http.post(f"/subjects/{quote(subject, safe='')}/versions", json={"schema": schema, **extra}, headers=CT)


def error(resp: httpx.Response) -> tuple[int, int, str]:
    body = resp.json()
    assert set(body) == {"error_code", "message"}, body
    return resp.status_code, body["error_code"], body["message"]


def test_lookup_in_a_subject_whose_versions_are_all_soft_deleted_is_40401(http: httpx.Client, subject: str) -> None:
    """SubjectsResource.lookUpSchemaUnderSubject: no match, then ``hasSubjects(subject, deleted)``."""
    sid = register(http, subject, V1).json()["id"]
    register(http, subject, V2)
    assert error(http.post(f"/subjects/{subject}", json={"schema": record("Other", ("x", "int"))}, headers=CT)) == (
        404,
        40403,
        "Schema not found",
    )
    assert http.delete(f"/subjects/{subject}").json() == [1, 2]
    missing = (404, 40401, f"Subject '{subject}' not found.")
    assert error(http.post(f"/subjects/{subject}", json={"schema": V1}, headers=CT)) == missing
    found = http.post(f"/subjects/{subject}", params={"deleted": "true"}, json={"schema": V1}, headers=CT)
    assert (found.status_code, found.json()["id"], found.json()["version"]) == (200, sid, 1)
    # the schema is parsed before the subject is looked at: an invalid one is 42201 even where nothing exists
    r = http.post(f"/subjects/{subject}-none", json={"schema": '{"type":"nope"}'}, headers=CT)
    assert error(r)[:2] == (422, 42201)


def test_compatibility_with_a_version_that_does_not_exist_is_40402(http: httpx.Client, subject: str) -> None:
    """CompatibilityResource: the version is looked up first; only ``latest`` may be missing."""
    url = f"/compatibility/subjects/{subject}/versions"
    assert error(http.post(f"{url}/3", json={"schema": V1}, headers=CT)) == (404, 40402, "Version 3 not found.")
    assert http.post(f"{url}/latest", json={"schema": V1}, headers=CT).json() == {"is_compatible": True}
    assert http.post(url, json={"schema": V1}, headers=CT).json() == {"is_compatible": True}
    register(http, subject, V1)
    assert error(http.post(f"{url}/2", json={"schema": V2}, headers=CT)) == (404, 40402, "Version 2 not found.")
    assert http.post(f"{url}/1", json={"schema": V2}, headers=CT).json() == {"is_compatible": True}


def test_import_mode_stores_the_canonical_form(start_registry: Callable[..., RegistryProcess]) -> None:
    """Confluent canonicalizes imported schemas too; IMPORT only skips the checks for new schemas."""
    with httpx.Client(base_url=start_registry().url, timeout=30) as http:
        subject = "imported"
        assert http.put(f"/mode/{subject}", json={"mode": "IMPORT"}, headers=CT).json() == {"mode": "IMPORT"}
        given = '{ "fields": [ {"type": "long", "name": "id"} ], "name": "Imported", "type": "record" }'
        canonical = '{"type":"record","name":"Imported","fields":[{"name":"id","type":"long"}]}'
        schema_id = 1000
        assert register(http, subject, given, id=schema_id, version=4).json()["id"] == schema_id
        stored = http.get(f"/subjects/{subject}/versions/4").json()
        assert (stored["id"], stored["schema"]) == (schema_id, canonical)
        assert http.get(f"/schemas/ids/{schema_id}").json() == {"guid": stored["guid"], "schema": canonical}
        # a default of the wrong type is refused in a new registration, but imported (validation is skipped)
        bad_default = '{"type":"record","name":"Lax","fields":[{"name":"n","type":"int","default":"x"}]}'
        assert error(register(http, subject + "-rw", bad_default))[:2] == (422, 42201)
        assert register(http, subject, bad_default, id=schema_id + 1, version=5).json()["id"] == schema_id + 1
        assert http.get(f"/schemas/ids/{schema_id + 1}").json()["schema"] == bad_default
        # what does not parse at all is not stored, in IMPORT either
        assert error(register(http, subject, '{"type":"record"', id=schema_id + 2))[:2] == (422, 42201)
        assert http.get(f"/subjects/{subject}/versions").json() == [4, 5]


def test_reference_exists_names_confluents_schema_key(http: httpx.Client, subject: str) -> None:
    """KafkaSchemaRegistry.deleteSchemaVersion / deleteSubject: ``ReferenceExistsException(key.toString())``."""
    addr_subject = subject + "-addr"
    register(http, addr_subject, record("Addr", ("city", "string"), namespace="p"))
    person = record("Person", ("home", "p.Addr"), namespace="p")
    refs = [{"name": "p.Addr", "subject": addr_subject, "version": 1}]
    assert register(http, subject, person, references=refs).status_code == 200
    expected = (
        422,
        42206,
        f"One or more references exist to the schema {{magic=1,keytype=SCHEMA,subject={addr_subject},version=1}}.",
    )
    assert error(http.delete(f"/subjects/{addr_subject}")) == expected
    assert error(http.delete(f"/subjects/{addr_subject}/versions/1")) == expected


def test_an_empty_schema_is_empty_schema(http: httpx.Client, subject: str) -> None:
    """AbstractSchemaRegistry: ``schema == null || schema.trim().isEmpty()`` is "Empty schema" (42201) where a
    schema is needed; registering it again re-registers the latest version; a lookup matches nothing."""
    url = f"/compatibility/subjects/{subject}/versions/latest"
    for empty in ("", "  \n"):
        assert error(http.post(url, json={"schema": empty}, headers=CT)) == (422, 42201, "Empty schema")
        verbose = http.post(url, params={"verbose": "true"}, json={"schema": empty}, headers=CT)
        assert verbose.json() == {"is_compatible": False, "messages": ["Empty schema"]}
        assert error(register(http, subject, empty)) == (422, 42201, "Empty schema")
        assert error(http.post(f"/subjects/{subject}", json={"schema": empty}, headers=CT))[:2] == (404, 40401)
    sid = register(http, subject, V1).json()["id"]
    assert register(http, subject, "").json()["id"] == sid
    assert http.get(f"/subjects/{subject}/versions").json() == [1]
    assert error(http.post(f"/subjects/{subject}", json={"schema": ""}, headers=CT)) == (404, 40403, "Schema not found")


def test_lookup_normalizes_when_the_subject_config_says_so(http: httpx.Client, subject: str) -> None:
    """SubjectsResource.lookUpSchemaUnderSubject: without ``normalize`` the subject's config decides."""
    assert http.put(f"/config/{subject}", json={"normalize": True}, headers=CT).status_code == 200
    unsorted = '{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}}}'
    sid = register(http, subject, unsorted, schemaType="JSON").json()["id"]
    stored = http.get(f"/subjects/{subject}/versions/1").json()["schema"]
    assert stored == '{"properties":{"a":{"type":"integer"},"b":{"type":"string"}},"type":"object"}'
    body = {"schema": unsorted, "schemaType": "JSON"}
    assert http.post(f"/subjects/{subject}", json=body, headers=CT).json()["id"] == sid
    r = http.post(f"/subjects/{subject}", params={"normalize": "false"}, json=body, headers=CT)
    assert error(r)[:2] == (404, 40403)


ACCEPTED = [
    (None, "application/vnd.schemaregistry.v1+json"),
    ("*/*", "application/vnd.schemaregistry.v1+json"),
    ("application/*", "application/vnd.schemaregistry.v1+json"),
    ("application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry.v1+json"),
    ("application/vnd.schemaregistry+json", "application/vnd.schemaregistry+json"),
    ("application/json", "application/json"),
    ("application/json; charset=utf-8", "application/json"),
    # what confluent-kafka's client sends
    (
        "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json",
        "application/vnd.schemaregistry.v1+json",
    ),
    ("text/html, application/json;q=0.9, */*;q=0.8", "application/json"),
    ("application/json, application/vnd.schemaregistry.v1+json;q=0.5", "application/json"),
    ("text/html, */*;q=0.1", "application/vnd.schemaregistry.v1+json"),
]
NOT_ACCEPTABLE = ["text/html", "text/plain", "application/xml", "application/json;q=0, text/*", "image/png"]


def test_accept_negotiation_and_406(http: httpx.Client, subject: str) -> None:
    """Confluent's resources produce the v1 type (qs 1), the vendor type (qs 0.9) and JSON (qs 0.5); an
    ``Accept`` that allows none of them is Jersey's 406, reads served from the cache included."""
    sid = register(http, subject, V1).json()["id"]
    reads = [
        lambda h: http.get(f"/schemas/ids/{sid}", headers=h),
        lambda h: http.get(f"/subjects/{subject}/versions/latest", headers=h),
        lambda h: http.get(f"/schemas/ids/{sid}/schema", headers=h),
        lambda h: http.post(f"/subjects/{subject}", json={"schema": V1}, headers={**CT, **h}),
    ]
    for read in reads:
        body = read({}).content  # the first answer fills the cache; the next ones are hits
        for accept, content_type in ACCEPTED:
            r = read({"Accept": accept} if accept is not None else {})
            assert (r.status_code, r.headers["content-type"], r.content) == (200, content_type, body), accept
        for accept in NOT_ACCEPTABLE:
            r = read({"Accept": accept})
            assert (r.status_code, r.headers["content-type"]) == (406, "application/vnd.schemaregistry.v1+json")
            assert r.json() == {"error_code": 406, "message": "HTTP 406 Not Acceptable"}, accept
    # writes negotiate too (nothing is written), after the body type (415) and the path (404)
    r = http.post(f"/subjects/{subject}/versions", json={"schema": V2}, headers={**CT, "Accept": "text/html"})
    assert error(r) == (406, 406, "HTTP 406 Not Acceptable")
    assert http.get(f"/subjects/{subject}/versions").json() == [1]
    bad_types = {"Content-Type": "text/plain", "Accept": "x/y"}
    r = http.post(f"/subjects/{subject}/versions", content=b"x", headers=bad_types)
    assert error(r)[:2] == (415, 415)
    assert error(http.get("/no/such/path", headers={"Accept": "text/html"}))[:2] == (404, 404)


def test_subjects_with_slashes_and_percents_stay_one_path_segment(http: httpx.Client, subject: str) -> None:
    """``%2F`` inside a segment is part of the subject (Protobuf imports); ``%25`` is a literal percent."""
    names = [f"{subject}/a/b.proto", f"{subject}%2Fliteral", f"{subject} 50%", f"{subject}/ü"]
    for name in names:
        assert register(http, name, V1).status_code == 200, name
        encoded = quote(name, safe="")
        assert http.get(f"/subjects/{encoded}/versions").json() == [1], name
        assert http.get(f"/subjects/{encoded}/versions/1").json()["subject"] == name
        assert http.post(f"/subjects/{encoded}", json={"schema": V1}, headers=CT).json()["subject"] == name
    listed = http.get("/subjects", params={"subjectPrefix": subject}).json()
    assert sorted(listed) == sorted(names)
    assert error(http.get(f"/subjects/{subject}/a/b.proto/versions"))[:2] == (404, 404)  # unencoded: other path
    assert json.loads(http.get(f"/subjects/{quote(names[0], safe='')}/versions/").text) == [1]  # trailing "/"


def test_paging_parameters(http: httpx.Client, subject: str) -> None:
    """``offset``/``limit`` page every list; blank means the default; a non-integer is 400 naming it."""
    for i in range(3):
        register(http, f"{subject}-{i}", V1)
    listed = http.get("/subjects", params={"subjectPrefix": subject, "offset": "", "limit": ""}).json()
    assert listed == [f"{subject}-{i}" for i in range(3)]
    assert http.get("/subjects", params={"subjectPrefix": subject, "offset": 1, "limit": 1}).json() == [f"{subject}-1"]
    assert http.get("/subjects", params={"subjectPrefix": subject, "offset": -5}).json() == listed
    r = http.get("/subjects", params={"limit": "ten"})
    assert error(r) == (400, 400, "Query parameter 'limit' must be an integer, got 'ten'")
