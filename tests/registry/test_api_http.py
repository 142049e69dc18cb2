"""Status codes, error codes, messages and shapes over raw HTTP, against the real server."""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from unittest.mock import ANY
from urllib.parse import quote

import httpx
import pytest

from tests.registry.schemas import V1, V2, V3_BAD, record

CT = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


def register(http: httpx.Client, subject: str, schema: str, **extra: object) -> httpx.Response:
    return http.post(f"/subjects/{quote(subject, safe='')}/versions", json={"schema": schema, **extra}, headers=CT)


def err(resp: httpx.Response) -> tuple[int, int]:
    body = resp.json()
    assert set(body) == {"error_code", "message"}, body
    return resp.status_code, body["error_code"]


def test_register_answers_id_version_and_guid(http: httpx.Client, subject: str) -> None:
    r = register(http, subject, V1)
    assert r.status_code == 200
    assert list(r.json()) == ["id", "version", "guid"]  # Confluent 8.x (7.x: the id alone)
    assert r.json()["version"] == 1
    # the GUID is Confluent's identity hash as a UUID: MD5 of the stored text (no references, metadata or rules)
    stored = http.get(f"/subjects/{subject}/versions/1").json()["schema"]
    assert r.json()["guid"] == str(uuid.UUID(bytes=hashlib.md5(stored.encode()).digest()))
    assert r.headers["content-type"] == "application/vnd.schemaregistry.v1+json"


def test_version_shape_and_raw_schema(http: httpx.Client, subject: str) -> None:
    sid = register(http, subject, V1).json()["id"]
    body = http.get(f"/subjects/{subject}/versions/1").json()
    assert body == {"subject": subject, "version": 1, "id": sid, "guid": body["guid"], "schema": body["schema"]}
    assert json.loads(body["schema"]) == json.loads(V1)
    assert http.get(f"/subjects/{subject}/versions/latest").json() == body
    assert http.get(f"/subjects/{subject}/versions/-1").json() == body
    raw = http.get(f"/subjects/{subject}/versions/1/schema")
    assert raw.text == body["schema"]
    assert http.get(f"/schemas/ids/{sid}").json() == {"guid": body["guid"], "schema": body["schema"]}
    assert http.get(f"/schemas/ids/{sid}/schema").text == body["schema"]
    with_max = http.get(f"/schemas/ids/{sid}", params={"fetchMaxId": "true"}).json()
    assert with_max["maxId"] >= sid


def test_subject_with_slash_is_percent_encoded(http: httpx.Client, subject: str) -> None:
    name = f"{subject}/google/protobuf/x.proto"
    assert register(http, name, V1).status_code == 200
    assert http.get(f"/subjects/{quote(name, safe='')}/versions").json() == [1]
    assert name in http.get("/subjects").json()


def test_version_errors(http: httpx.Client, subject: str) -> None:
    register(http, subject, V1)
    for bad in ("0", "-2", "abc", "2147483648"):
        r = http.get(f"/subjects/{subject}/versions/{bad}")
        assert err(r) == (422, 42202), bad
        assert f"The specified version '{bad}' is not a valid version id" in r.json()["message"]
    assert err(http.get(f"/subjects/{subject}/versions/5")) == (404, 40402)
    assert http.get(f"/subjects/{subject}/versions/5").json()["message"] == "Version 5 not found."
    r = http.get(f"/subjects/{subject}-none/versions/1")
    assert err(r) == (404, 40401)
    assert r.json()["message"] == f"Subject '{subject}-none' not found."


def test_http_level_errors(http: httpx.Client, subject: str) -> None:
    assert err(http.get("/no/such/route")) == (404, 404)
    assert err(http.put("/subjects")) == (405, 405)
    r = http.post(f"/subjects/{subject}/versions", content=b"{not json", headers=CT)
    assert err(r) == (400, 400)
    r = http.post(
        f"/subjects/{subject}/versions",
        content=b"schema=x",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert err(r) == (415, 415)
    r = http.post(f"/subjects/{subject}/versions", json={"schema": 5}, headers=CT)
    assert err(r) == (422, 422)
    assert err(http.get("/schemas/ids/notanumber")) == (404, 404)


def test_invalid_schema_and_subject(http: httpx.Client, subject: str) -> None:
    r = register(http, subject, '{"type":"record","name":"X","fields":[{"name":"a","type":"Nope"}]}')
    assert err(r) == (422, 42201)
    assert r.json()["message"].startswith("Invalid schema of type AVRO, details: ")
    assert err(register(http, subject, V1, schemaType="XML")) == (422, 42201)
    assert register(http, subject, V1, schemaType="XML").json()["message"] == "Invalid schema type XML"
    assert err(register(http, "__GLOBAL", V1)) == (422, 42208)
    assert err(register(http, "bad\u0001subject", V1)) == (422, 42208)
    assert err(http.post(f"/subjects/{subject}/versions", json={}, headers=CT)) == (422, 42201)


def test_python_style_booleans_and_deleted_listing(http: httpx.Client, subject: str) -> None:
    register(http, subject, V1)
    register(http, subject, V2)
    assert http.delete(f"/subjects/{subject}/versions/1").json() == 1
    assert http.get(f"/subjects/{subject}/versions").json() == [2]
    assert http.get(f"/subjects/{subject}/versions", params={"deleted": "True"}).json() == [1, 2]
    assert http.get(f"/subjects/{subject}/versions", params={"deletedOnly": "true"}).json() == [1]
    assert http.get(f"/subjects/{subject}/versions", params={"deletedAsNegative": "true"}).json() == [-1, 2]
    assert err(http.delete(f"/subjects/{subject}/versions/1")) == (404, 40406)
    assert err(http.delete(f"/subjects/{subject}/versions/2", params={"permanent": "true"})) == (404, 40407)
    assert http.delete(f"/subjects/{subject}").json() == [2]
    assert subject not in http.get("/subjects").json()
    assert subject in http.get("/subjects", params={"deleted": "True"}).json()
    assert subject in http.get("/subjects", params={"deletedOnly": "true"}).json()
    r = http.delete(f"/subjects/{subject}")
    assert err(r) == (404, 40404)
    assert r.json()["message"] == f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently"
    assert http.get(f"/subjects/{subject}/versions/1", params={"deleted": "true"}).status_code == 200
    assert http.delete(f"/subjects/{subject}", params={"permanent": "true"}).json() == [1, 2]
    assert err(http.get(f"/subjects/{subject}/versions", params={"deleted": "true"})) == (404, 40401)


def test_hard_delete_requires_soft_delete(http: httpx.Client, subject: str) -> None:
    register(http, subject, V1)
    r = http.delete(f"/subjects/{subject}", params={"permanent": "true"})
    assert err(r) == (404, 40405)
    assert r.json()["message"] == f"Subject '{subject}' was not deleted first before being permanently deleted"


def test_reregister_after_soft_delete_gets_new_version_same_id(http: httpx.Client, subject: str) -> None:
    sid = register(http, subject, V1).json()["id"]
    http.delete(f"/subjects/{subject}/versions/1")
    assert register(http, subject, V1).json()["id"] == sid
    assert http.get(f"/subjects/{subject}/versions").json() == [2]
    # the superseded soft-deleted version was tombstoned
    assert http.get(f"/subjects/{subject}/versions", params={"deleted": "true"}).json() == [2]


def test_pagination(http: httpx.Client, subject: str) -> None:
    for i in range(5):
        http.put(f"/config/{subject}", json={"compatibility": "NONE"}, headers=CT)
        register(http, subject, record("P", (f"f{i}", "int")))
    assert http.get(f"/subjects/{subject}/versions", params={"offset": 1, "limit": 2}).json() == [2, 3]
    assert http.get(f"/subjects/{subject}/versions", params={"offset": 3}).json() == [4, 5]
    listed = http.get("/schemas", params={"subjectPrefix": subject}).json()
    assert [s["version"] for s in listed] == [1, 2, 3, 4, 5]
    assert [
        s["version"] for s in http.get("/schemas", params={"subjectPrefix": subject, "latestOnly": "true"}).json()
    ] == [5]


def test_compatibility_endpoint(http: httpx.Client, subject: str) -> None:
    # a subject that does not exist is compatible with anything at "latest"
    r = http.post(f"/compatibility/subjects/{subject}/versions/latest", json={"schema": V1}, headers=CT)
    assert r.json() == {"is_compatible": True}
    register(http, subject, V1)
    ok = http.post(f"/compatibility/subjects/{subject}/versions/latest", json={"schema": V2}, headers=CT)
    assert ok.json() == {"is_compatible": True}
    bad = http.post(
        f"/compatibility/subjects/{subject}/versions", params={"verbose": "true"}, json={"schema": V3_BAD}, headers=CT
    ).json()
    assert bad["is_compatible"] is False
    assert any("READER_FIELD_MISSING_DEFAULT_VALUE" in m for m in bad["messages"])
    assert "{validateFields: 'false', compatibility: 'BACKWARD'}" in bad["messages"]
    r = http.post(f"/compatibility/subjects/{subject}/versions/9", json={"schema": V2}, headers=CT)
    assert err(r) == (404, 40402)
    r = http.post(
        f"/compatibility/subjects/{subject}/versions/latest",
        params={"verbose": "true"},
        json={"schema": "{bad"},
        headers=CT,
    )
    assert r.json()["is_compatible"] is False


def test_lookup(http: httpx.Client, subject: str) -> None:
    sid = register(http, subject, V1).json()["id"]
    r = http.post(f"/subjects/{subject}", json={"schema": V1}, headers=CT)
    assert r.json() == {
        "subject": subject,
        "version": 1,
        "id": sid,
        "guid": r.json()["guid"],
        "schema": r.json()["schema"],
    }
    assert err(http.post(f"/subjects/{subject}", json={"schema": V2}, headers=CT)) == (404, 40403)
    assert err(http.post(f"/subjects/{subject}-x", json={"schema": V1}, headers=CT)) == (404, 40401)
    http.delete(f"/subjects/{subject}/versions/1")
    # every version soft-deleted: the subject is not found, as Confluent's hasSubjects(subject, deleted) says
    assert err(http.post(f"/subjects/{subject}", json={"schema": V1}, headers=CT)) == (404, 40401)
    found = http.post(f"/subjects/{subject}", params={"deleted": "true"}, json={"schema": V1}, headers=CT)
    assert found.json()["id"] == sid


def test_metadata_and_ruleset_stored(http: httpx.Client, subject: str) -> None:
    md = {"properties": {"owner": "team-a", "app.major": "1"}}
    rs = {"domainRules": [{"name": "check", "kind": "CONDITION", "mode": "WRITE", "type": "CEL", "expr": "true"}]}
    sid = register(http, subject, V1, metadata=md, ruleSet=rs).json()["id"]
    body = http.get(f"/subjects/{subject}/versions/1").json()
    assert body["metadata"] == md and body["ruleSet"] == rs
    plain = register(http, subject + "-plain", V1).json()["id"]
    assert plain != sid  # metadata is part of the schema's identity
    found = http.get(f"/subjects/{subject}/metadata", params={"key": "owner", "value": "team-a"})
    assert found.json()["id"] == sid
    assert err(http.get(f"/subjects/{subject}/metadata", params={"key": "owner", "value": "b"})) == (404, 40403)
    bad = {"domainRules": [{"name": "x", "mode": "UPGRADE"}]}
    assert err(register(http, subject, V2, ruleSet=bad)) == (422, 42210)
    unknown_kind = {"domainRules": [{"name": "x", "kind": "AAA", "mode": "WRITE"}]}
    assert err(register(http, subject, V2, ruleSet=unknown_kind)) == (422, 42210)
    assert err(http.put(f"/config/{subject}", json={"defaultRuleSet": unknown_kind})) == (422, 42210)


def test_misc_endpoints(http: httpx.Client) -> None:
    assert http.get("/").json() == {}
    assert http.get("/contexts").json() == ["."]
    assert "AVRO" in http.get("/schemas/types").json()
    md = http.get("/v1/metadata/id").json()
    assert set(md["scope"]["clusters"]) == {"kafka-cluster", "schema-registry-cluster"}
    assert set(http.get("/v1/metadata/version").json()) == {"version", "commitId"}
    r = http.get("/associations/resources/-/orders", params={"resourceType": "topic"})
    assert (r.status_code, r.json()) == (200, [])  # no association: an empty list, as Confluent 8 answers


@pytest.fixture
def own(start_registry):  # type: ignore[no-untyped-def]
    rp = start_registry()
    with httpx.Client(base_url=rp.url, timeout=30) as c:
        yield c


def test_global_config_and_modes(own: httpx.Client) -> None:
    assert own.get("/config").json() == {"compatibilityLevel": "BACKWARD"}
    assert own.put("/config", json={"compatibility": "FULL"}, headers=CT).json() == {"compatibility": "FULL"}
    assert own.get("/config").json()["compatibilityLevel"] == "FULL"
    assert own.get("/config/anything", params={"defaultToGlobal": "true"}).json()["compatibilityLevel"] == "FULL"
    assert own.delete("/config").json()["compatibilityLevel"] == "FULL"
    assert own.get("/config").json() == {"compatibilityLevel": "BACKWARD"}

    assert own.get("/mode").json() == {"mode": "READWRITE"}
    assert err(own.get("/mode/x")) == (404, 40409)
    assert err(own.put("/mode", json={"mode": "SIDEWAYS"}, headers=CT)) == (422, 42204)
    assert own.put("/mode", json={"mode": "READONLY"}, headers=CT).json() == {"mode": "READONLY"}
    r = register(own, "ro", V1)
    assert err(r) == (422, 42205)
    own.put("/mode", json={"mode": "READWRITE"}, headers=CT)
    assert register(own, "ro", V1).status_code == 200
    # switching to IMPORT needs an empty registry unless forced
    r = own.put("/mode", json={"mode": "IMPORT"}, headers=CT)
    assert err(r) == (422, 42205)
    assert r.json()["message"] == "Cannot import since found existing subjects"
    assert own.put("/mode", params={"force": "true"}, json={"mode": "IMPORT"}, headers=CT).json() == {"mode": "IMPORT"}


def log_offset(client: httpx.Client) -> float:
    """The offset of the last ``_schemas`` record the registry applied (its metric)."""
    found = re.search(r"^schemakit_registry_log_offset (\S+)$", client.get("/metrics").text, re.M)
    assert found is not None
    return float(found.group(1))


def test_import_mode_keeps_ids_and_versions(own: httpx.Client) -> None:
    assert own.put("/mode", json={"mode": "IMPORT"}, headers=CT).status_code == 200
    assert err(register(own, "imp", V1)) == (422, 42205)  # IMPORT needs an explicit id
    assert register(own, "imp", V1, id=100, version=7).json()["id"] == 100
    # the same import again (an exporter's retry, a failover) is answered and writes no second record
    offset = log_offset(own)
    assert register(own, "imp", V1, id=100, version=7).json() == {"id": 100, "version": 7, "guid": ANY}
    assert log_offset(own) == offset
    assert register(own, "imp", V3_BAD, id=101, version=9).json()["id"] == 101  # no compatibility check
    assert own.get("/subjects/imp/versions").json() == [7, 9]
    r = register(own, "imp2", V2, id=100)
    assert err(r) == (422, 42205)
    assert r.json()["message"] == "Overwrite new schema with id 100 in context . is not permitted."
    own.put("/mode", json={"mode": "READWRITE"}, headers=CT)
    # new ids continue after the highest imported one
    assert register(own, "after", record("Z", ("z", "int"))).json()["id"] == 102
    assert err(register(own, "after", V1, id=5)) == (422, 42205)


def test_references_resolved_format_and_referencedby(http: httpx.Client, subject: str) -> None:
    addr = json.dumps(
        {"type": "record", "name": "Addr", "namespace": "refs", "fields": [{"name": "city", "type": "string"}]}
    )
    ref_subject = subject + "-addr"
    addr_id = register(http, ref_subject, addr).json()["id"]
    main = json.dumps(
        {"type": "record", "name": "Person", "namespace": "refs", "fields": [{"name": "home", "type": "refs.Addr"}]}
    )
    refs = [{"name": "refs.Addr", "subject": ref_subject, "version": 1}]
    sid = register(http, subject, main, references=refs).json()["id"]
    body = http.get(f"/subjects/{subject}/versions/1").json()
    assert body["references"] == refs
    expected = '{"type":"record","name":"Person","namespace":"refs","fields":[{"name":"home","type":"Addr"}]}'
    assert body["schema"] == expected
    resolved = http.get(f"/schemas/ids/{sid}", params={"format": "resolved"}).json()["schema"]
    assert json.loads(resolved)["fields"][0]["type"] == {
        "type": "record",
        "name": "Addr",
        "fields": [{"name": "city", "type": "string"}],
    }
    assert http.get(f"/subjects/{ref_subject}/versions/1/referencedby").json() == [sid]
    # an unresolvable reference is an invalid schema
    bad = [{"name": "refs.Addr", "subject": ref_subject, "version": 9}]
    assert err(register(http, subject + "-b", main, references=bad)) == (422, 42201)
    # the referenced subject cannot be deleted while referenced from another subject
    assert err(http.delete(f"/subjects/{ref_subject}")) == (422, 42206)
    assert http.get(f"/schemas/ids/{addr_id}").status_code == 200


def test_normalize(http: httpx.Client, subject: str) -> None:
    plain = '{"type":"record","name":"N","namespace":"n.s","fields":[{"name":"a","type":"int"}]}'
    reordered = '{"fields":[{"type":"int","name":"a"}],"namespace":"n.s","name":"N","type":"record"}'
    sid = register(http, subject, plain).json()["id"]
    # without normalize the attribute order in the canonical form is Java's, so both texts are one schema
    assert register(http, subject, reordered).json()["id"] == sid
    with_doc_order = '{"type":"record","name":"n.s.N","fields":[{"name":"a","type":"int"}]}'
    r = http.post(f"/subjects/{subject}", params={"normalize": "true"}, json={"schema": with_doc_order}, headers=CT)
    assert r.status_code == 200 and r.json()["id"] == sid
    assert http.get(f"/subjects/{subject}/versions").json() == [1]
