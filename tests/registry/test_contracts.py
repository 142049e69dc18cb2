"""Data contracts on the server, as Confluent applies them: the config's default/override metadata and rule sets
at registration, compatibility groups, GUIDs (``/schemas/guids``), and lookups that treat a missing
``metadata.sensitive`` like an empty one."""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

import httpx
from confluent_kafka.schema_registry import Schema as CkSchema
from confluent_kafka.schema_registry import SchemaRegistryClient

CT = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
V1 = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
V2 = json.dumps({"type": "record", "name": "R", "fields": [{"name": "b", "type": "string"}]})  # incompatible
RULE = {"name": "positive", "kind": "CONDITION", "mode": "WRITE", "type": "CEL", "expr": "message.a > 0"}
OVERRIDE_RULE = {"name": "audit", "kind": "CONDITION", "mode": "WRITE", "type": "CEL", "expr": "true"}


def post(http: httpx.Client, path: str, body: dict[str, Any]) -> httpx.Response:
    return http.post(path, json=body, headers=CT)


def test_default_and_override_metadata_and_rule_sets_are_applied_at_registration(
    http: httpx.Client, subject: str
) -> None:
    config = {
        "defaultMetadata": {"properties": {"owner": "team-a", "tier": "gold"}},
        "overrideMetadata": {"properties": {"tier": "platinum"}},
        "defaultRuleSet": {"domainRules": [RULE]},
        "overrideRuleSet": {"domainRules": [OVERRIDE_RULE]},
    }
    assert http.put(f"/config/{subject}", json=config, headers=CT).status_code == 200
    r = post(http, f"/subjects/{subject}/versions", {"schema": V1, "metadata": {"properties": {"owner": "me"}}})
    assert r.status_code == 200, r.text
    body = r.json()
    # the answer shows what was stored: default under the request, override over it
    assert body["metadata"] == {"properties": {"owner": "me", "tier": "platinum"}}
    assert [rule["name"] for rule in body["ruleSet"]["domainRules"]] == ["positive", "audit"]
    stored = http.get(f"/subjects/{subject}/versions/1").json()
    assert stored["metadata"] == body["metadata"] and stored["ruleSet"] == body["ruleSet"]
    assert stored["guid"] == body["guid"]
    # the same request again finds that version (lookup and register both complete the request first)
    again = post(http, f"/subjects/{subject}/versions", {"schema": V1, "metadata": {"properties": {"owner": "me"}}})
    assert (again.json()["id"], again.json()["version"]) == (body["id"], 1)
    found = post(http, f"/subjects/{subject}", {"schema": V1, "metadata": {"properties": {"owner": "me"}}})
    assert found.status_code == 200 and found.json()["version"] == 1


def test_compatibility_group_checks_only_the_same_major_version(http: httpx.Client, subject: str) -> None:
    post(http, f"/subjects/{subject}/versions", {"schema": V1, "metadata": {"properties": {"major": "1"}}})
    incompatible = post(
        http, f"/subjects/{subject}/versions", {"schema": V2, "metadata": {"properties": {"major": "2"}}}
    )
    assert incompatible.status_code == 409 and incompatible.json()["error_code"] == 409
    assert http.put(f"/config/{subject}", json={"compatibilityGroup": "major"}, headers=CT).status_code == 200
    new_major = post(http, f"/subjects/{subject}/versions", {"schema": V2, "metadata": {"properties": {"major": "2"}}})
    assert new_major.status_code == 200 and new_major.json()["version"] == 2
    # within a group the level still applies: back to major 1 with v2's fields is checked against v1 only
    same_group = post(
        http,
        f"/compatibility/subjects/{subject}/versions/1",
        {"schema": V2, "metadata": {"properties": {"major": "1"}}},
    )
    assert same_group.json()["is_compatible"] is False


def test_guid_lookup(http: httpx.Client, sr: SchemaRegistryClient, subject: str) -> None:
    r = post(http, f"/subjects/{subject}/versions", {"schema": V1})
    guid, schema_id = r.json()["guid"], r.json()["id"]
    stored = http.get(f"/subjects/{subject}/versions/1").json()["schema"]
    assert guid == str(uuid.UUID(bytes=hashlib.md5(stored.encode()).digest()))
    assert http.get(f"/schemas/guids/{guid}").json() == {"guid": guid, "schema": stored}
    assert http.get(f"/schemas/guids/{guid}/ids").json() == [{"context": ".", "id": schema_id}]
    missing = http.get(f"/schemas/guids/{uuid.uuid4()}")
    assert (missing.status_code, missing.json()["error_code"]) == (404, 40403)
    bad = http.get("/schemas/guids/not-a-guid")
    assert (bad.status_code, bad.json()["error_code"]) == (404, 40403)
    if hasattr(sr, "get_schema_by_guid"):  # confluent-kafka >= 2.11
        assert sr.get_schema_by_guid(guid).schema_str == stored


def test_missing_sensitive_is_the_same_as_empty(http: httpx.Client, sr: SchemaRegistryClient, subject: str) -> None:
    with_props = {"properties": {"owner": "team-a"}}
    first = post(http, f"/subjects/{subject}/versions", {"schema": V1, "metadata": with_props}).json()
    # confluent-kafka sends "sensitive": [] (and empty tags); the registry finds the same schema
    explicit = {**with_props, "tags": {}, "sensitive": []}
    found = post(http, f"/subjects/{subject}", {"schema": V1, "metadata": explicit})
    assert found.status_code == 200 and found.json()["id"] == first["id"]
    again = post(http, f"/subjects/{subject}/versions", {"schema": V1, "metadata": explicit}).json()
    assert (again["id"], again["version"], again["guid"]) == (first["id"], 1, first["guid"])
    from confluent_kafka.schema_registry import Metadata

    ck_schema = CkSchema(V1, "AVRO", metadata=Metadata.from_dict(explicit))
    assert sr.lookup_schema(subject, ck_schema).version == 1
    assert http.get(f"/subjects/{subject}/versions").json() == [1]
