"""Confluent 8's ``/associations`` against a live registry: every endpoint with its answers and error codes, as
confluent-kafka's own client calls them too, and associations kept across a restart (replayed from
``_schemas``)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.common.schema_registry_client import (
    AssociationCreateOrUpdateInfo,
    AssociationCreateOrUpdateRequest,
)
from confluent_kafka.schema_registry.error import SchemaRegistryError

from tests.support.credentials import UsersFile
from tests.support.registry_process import RegistryProcess

STRING = '"string"'
RECORD = '{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}'


@pytest.fixture(scope="module")
def url(module_registry: RegistryProcess) -> str:
    return module_registry.url


@pytest.fixture
def http(url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url, timeout=30) as client:
        yield client


@pytest.fixture
def names() -> Callable[[str], str]:
    tag = uuid.uuid4().hex[:8]
    return lambda name: f"{name}-{tag}"


def err(response: httpx.Response) -> tuple[int, int]:
    return response.status_code, response.json()["error_code"]


def request(topic: str, resource_id: str, *associations: dict[str, Any], namespace: str = "lkc-1") -> dict[str, Any]:
    return {
        "resourceName": topic,
        "resourceNamespace": namespace,
        "resourceId": resource_id,
        "resourceType": "topic",
        "associations": list(associations),
    }


def register(http: httpx.Client, subject: str, schema: str = STRING) -> int:
    r = http.post(f"/subjects/{subject}/versions", json={"schema": schema})
    assert r.status_code == 200, r.text
    return int(r.json()["id"])


def test_create_then_find_by_name_id_and_subject(http: httpx.Client, names: Callable[[str], str]) -> None:
    topic, rid, key_subject = names("orders"), names("rid"), names("orders-key")
    register(http, key_subject)
    body = request(
        topic,
        rid,
        {"subject": key_subject, "associationType": "key"},
        {"subject": names("orders-value"), "lifecycle": "STRONG", "schema": {"schema": RECORD}},
    )
    r = http.post("/associations", json=body)
    assert r.status_code == 200, r.text
    answer = r.json()
    assert {k: answer[k] for k in ("resourceName", "resourceNamespace", "resourceId", "resourceType")} == {
        "resourceName": topic,
        "resourceNamespace": "lkc-1",
        "resourceId": rid,
        "resourceType": "topic",
    }
    key_info, value_info = answer["associations"]
    assert key_info == {"subject": key_subject, "associationType": "key", "lifecycle": "WEAK", "frozen": False}
    # the value's schema was registered under its subject, and the answer shows the version it is
    assert value_info["associationType"] == "value" and value_info["lifecycle"] == "STRONG"
    assert value_info["schema"]["subject"] == names("orders-value") and value_info["schema"]["version"] == 1
    assert http.get(f"/subjects/{names('orders-value')}/versions").json() == [1]

    by_name = http.get(f"/associations/resources/lkc-1/{topic}").json()
    assert [(a["associationType"], a["subject"]) for a in by_name] == [
        ("key", key_subject),
        ("value", names("orders-value")),
    ]
    assert set(by_name[0]) == {
        "subject",
        "guid",
        "resourceName",
        "resourceNamespace",
        "resourceId",
        "resourceType",
        "associationType",
        "lifecycle",
        "frozen",
    }
    assert by_name[0]["guid"] != by_name[1]["guid"]
    assert http.get(f"/associations/resources/-/{topic}").json() == by_name  # the wildcard namespace
    assert http.get(f"/associations/resources/lkc-2/{topic}").json() == []  # another namespace: none
    only_values = http.get(f"/associations/resources/-/{topic}", params={"associationType": "value"}).json()
    assert only_values == by_name[1:]
    both = http.get(
        f"/associations/resources/-/{topic}", params=[("associationType", "key"), ("associationType", "value")]
    )
    assert both.json() == by_name
    assert http.get(f"/associations/resources/-/{topic}", params={"lifecycle": "STRONG"}).json() == by_name[1:]
    assert http.get(f"/associations/resources/-/{topic}", params={"offset": 1, "limit": 1}).json() == by_name[1:]
    assert http.get(f"/associations/resources/{rid}").json() == by_name
    assert http.get(f"/associations/subjects/{key_subject}").json() == by_name[:1]
    assert http.get("/associations/resources/-/no-such-topic").json() == []
    assert err(http.get(f"/associations/resources/-/{topic}", params={"lifecycle": "SOMETIMES"})) == (422, 42212)


def test_invalid_requests_answer_42212_or_42208(http: httpx.Client, names: Callable[[str], str]) -> None:
    subject = names("s")
    register(http, subject)
    ok = {"subject": subject}
    for broken in [
        {**request(names("t"), names("r"), ok), "resourceName": None},
        {**request(names("t"), names("r"), ok), "resourceNamespace": ""},
        {**request(names("t"), names("r"), ok), "resourceId": None},
        {**request(names("t"), names("r"), ok), "resourceType": "table"},
        request(names("t"), names("r")),  # no associations
        request(names("t"), names("r"), {"subject": subject, "associationType": "header"}),
        request(names("t"), names("r"), {"subject": subject, "lifecycle": "FOREVER"}),
        request(names("t"), names("r"), ok, {"subject": subject}),  # two value associations
        request(names("t"), names("r"), {"associationType": "key"}),  # no subject
        request(names("t"), names("r"), {"subject": subject, "frozen": True, "lifecycle": "STRONG"}),  # no schema
    ]:
        assert err(http.post("/associations", json=broken)) == (422, 42212), broken
    assert err(http.post("/associations", json=request(names("t"), names("r"), {"subject": "__GLOBAL"}))) == (
        422,
        42208,
    )
    assert err(http.post("/associations", json={"resourceName": 5})) == (422, 422)
    assert http.post("/associations", content=b"{", headers={"Content-Type": "application/json"}).status_code == 400


def test_conflicts(http: httpx.Client, names: Callable[[str], str]) -> None:
    subject, strong = names("s"), names("strong")
    register(http, subject)
    # a subject without a live version needs a schema in the request
    missing = request(names("t"), names("r"), {"subject": names("nothing")})
    assert err(http.post("/associations", json=missing)) == (409, 40907)

    topic, rid = names("t"), names("r")
    assert http.post("/associations", json=request(topic, rid, {"subject": subject})).status_code == 200
    # the same association again is no change; another subject for the same resource and type is refused
    again = http.post("/associations", json=request(topic, rid, {"subject": subject}))
    assert again.status_code == 200 and again.json()["associations"][0]["subject"] == subject
    other = names("other")
    register(http, other)
    assert err(http.post("/associations", json=request(topic, rid, {"subject": other}))) == (422, 42212)
    # create-or-update changes the lifecycle, never the subject
    updated = http.put("/associations", json=request(topic, rid, {"subject": subject, "lifecycle": "STRONG"}))
    assert updated.status_code == 200 and updated.json()["associations"][0]["lifecycle"] == "STRONG"
    assert http.get(f"/associations/resources/{rid}").json()[0]["lifecycle"] == "STRONG"
    assert err(http.put("/associations", json=request(topic, rid, {"subject": other}))) == (422, 42212)
    # a strong association owns its subject: nothing may join it, and it may not join others
    assert err(http.post("/associations", json=request(names("t2"), names("r2"), {"subject": subject}))) == (
        409,
        40905,
    )
    register(http, strong)
    weak_topic = names("t3")
    assert http.post("/associations", json=request(weak_topic, names("r3"), {"subject": strong})).status_code == 200
    strong_again = request(names("t4"), names("r4"), {"subject": strong, "lifecycle": "STRONG"})
    assert err(http.post("/associations", json=strong_again)) == (409, 40904)


def test_frozen_association(http: httpx.Client, names: Callable[[str], str]) -> None:
    topic, rid, subject = names("t"), names("r"), names("frozen")
    frozen = {"subject": subject, "lifecycle": "STRONG", "frozen": True, "schema": {"schema": STRING}}
    r = http.post("/associations", json=request(topic, rid, frozen))
    assert r.status_code == 200, r.text
    assert r.json()["associations"][0]["frozen"] is True
    # frozen: no change, no delete unless cascading
    assert err(http.put("/associations", json=request(topic, rid, {**frozen, "frozen": False}))) == (422, 42212)
    assert err(http.put("/associations", json=request(topic, rid, {"subject": subject, "lifecycle": "WEAK"}))) == (
        409,
        40908,
    )
    assert err(http.delete(f"/associations/resources/{rid}")) == (409, 40908)
    # a frozen association is created with its subject's one schema
    taken = names("taken")
    register(http, taken)
    late = {"subject": taken, "lifecycle": "STRONG", "frozen": True, "schema": {"schema": STRING}}
    assert err(http.post("/associations", json=request(names("t"), names("r"), late))) == (422, 42212)
    assert http.delete(f"/associations/resources/{rid}", params={"cascadeLifecycle": "true"}).status_code == 204
    assert http.get(f"/associations/resources/{rid}").json() == []
    assert err(http.get(f"/subjects/{subject}/versions", params={"deleted": "true"})) == (404, 40401)


def test_delete(http: httpx.Client, names: Callable[[str], str]) -> None:
    topic, rid, weak, strong = names("t"), names("r"), names("weak"), names("strong")
    register(http, weak)
    both = request(
        topic,
        rid,
        {"subject": weak, "associationType": "key"},
        {"subject": strong, "lifecycle": "STRONG", "schema": {"schema": STRING}},
    )
    assert http.post("/associations", json=both).status_code == 200
    assert err(http.delete(f"/associations/resources/{names('nothing')}")) == (404, 40410)
    assert err(http.delete(f"/associations/resources/{rid}", params={"resourceType": "table"})) == (404, 40410)
    # by type; the other stays
    r = http.delete(f"/associations/resources/{rid}", params={"associationType": "key"})
    assert r.status_code == 204 and r.content == b""
    assert [a["associationType"] for a in http.get(f"/associations/resources/{rid}").json()] == ["value"]
    assert http.get(f"/subjects/{weak}/versions").json() == [1]  # a weak association's subject is never deleted
    # without cascadeLifecycle a strong association's subject stays; with it, it goes (soft, then permanently)
    assert http.post("/associations", json=both).status_code == 200
    assert http.delete(f"/associations/resources/{rid}").status_code == 204
    assert http.get(f"/associations/resources/{rid}").json() == []
    assert http.get(f"/subjects/{strong}/versions").json() == [1]
    assert http.post("/associations", json=both).status_code == 200
    assert http.delete(f"/associations/resources/{rid}", params={"cascadeLifecycle": "true"}).status_code == 204
    assert err(http.get(f"/subjects/{strong}/versions", params={"deleted": "true"})) == (404, 40401)
    assert http.get(f"/subjects/{weak}/versions").json() == [1]


def test_confluent_kafka_client_calls(url: str, names: Callable[[str], str]) -> None:
    client = SchemaRegistryClient({"url": url})
    topic, rid, subject = names("orders"), names("rid"), names("custom")
    created = client.create_association(
        AssociationCreateOrUpdateRequest(
            resource_name=topic,
            resource_namespace="lkc-9",
            resource_id=rid,
            resource_type="topic",
            associations=[
                AssociationCreateOrUpdateInfo(
                    subject=subject, association_type="value", lifecycle="STRONG", schema=Schema(RECORD, "AVRO")
                )
            ],
        )
    )
    assert created.resource_id == rid and created.associations is not None
    info = created.associations[0]
    assert (info.subject, info.association_type, info.lifecycle, info.frozen) == (subject, "value", "STRONG", False)
    assert info.schema is not None and info.schema.schema_str is not None
    found = client.get_associations_by_resource_name(topic, "-", "topic", ["value"])
    assert [(a.subject, a.resource_id, a.resource_namespace, a.association_type) for a in found] == [
        (subject, rid, "lkc-9", "value")
    ]
    assert client.get_associations_by_resource_name(topic, "lkc-9", association_types=["key"]) == []
    assert len(client.get_associations_by_resource_name(topic, "-", offset=0, limit=1)) == 1
    with pytest.raises(SchemaRegistryError) as e:
        client.delete_associations(names("nothing"))
    assert (e.value.http_status_code, e.value.error_code) == (404, 40410)
    client.delete_associations(rid, "topic", ["value"], cascade_lifecycle=True)
    assert client.get_associations_by_resource_name(topic, "-") == []
    assert subject not in client.get_subjects()


def test_associations_survive_a_restart(start_registry: Callable[..., RegistryProcess]) -> None:
    rp = start_registry()
    with httpx.Client(base_url=rp.url, timeout=30) as http:
        register(http, "kept-key")
        body = request(
            "kept",
            "kept-id",
            {"subject": "kept-key", "associationType": "key"},
            {"subject": "kept-value", "lifecycle": "STRONG", "schema": {"schema": STRING}},
        )
        assert http.post("/associations", json=body).status_code == 200
        assert http.post("/associations", json=request("gone", "gone-id", {"subject": "kept-key"})).status_code == 200
        assert http.delete("/associations/resources/gone-id").status_code == 204
        before = http.get("/associations/resources/-/kept").json()
        assert len(before) == 2
    rp.restart()
    with httpx.Client(base_url=rp.url, timeout=30) as http:
        assert http.get("/associations/resources/-/kept").json() == before  # same GUIDs, lifecycles, order
        assert http.get("/associations/resources/gone-id").json() == []
        # the replayed state enforces its rules as before
        assert err(http.post("/associations", json=request("x", "x-id", {"subject": "kept-value"}))) == (409, 40905)


def test_permissions(start_registry: Callable[..., RegistryProcess], users_file: UsersFile) -> None:
    """Writes need ``Write`` on every subject they name; lookups list only the subjects the caller may read."""
    admin_auth, team_auth = ("admin", "admin-pw"), ("team", "team-pw")
    users_file.user(*admin_auth).user(*team_auth)
    users_file.allow("admin", "Write", ".*").allow("team", "Write", "Subject:team-")
    rp = start_registry(None, "--auth", "basic", "--users-file", users_file.save(), probe={"auth": admin_auth})
    with (
        httpx.Client(base_url=rp.url, auth=admin_auth, timeout=30) as admin,
        httpx.Client(base_url=rp.url, auth=team_auth, timeout=30) as team,
        httpx.Client(base_url=rp.url, timeout=30) as stranger,
    ):
        ops = {"subject": "ops-value", "schema": {"schema": STRING}}
        assert admin.post("/associations", json=request("ops", "ops-id", ops)).status_code == 200
        mine = {"subject": "team-value", "schema": {"schema": STRING}}
        assert team.post("/associations", json=request("shared", "shared-id", mine)).status_code == 200
        denied = team.post("/associations", json=request("ops2", "ops2-id", {**ops, "associationType": "key"}))
        assert denied.status_code == 403
        assert denied.json() == {"error_code": 40301, "message": "User is denied operation Write on Subject: ops-value"}
        assert err(team.delete("/associations/resources/ops-id")) == (403, 40301)
        assert admin.get("/associations/resources/ops-id").json() != []  # still there
        # lookups: the caller's subjects only; a stranger is not authenticated
        assert [a["subject"] for a in team.get("/associations/resources/-/ops").json()] == []
        assert [a["subject"] for a in admin.get("/associations/resources/-/ops").json()] == ["ops-value"]
        assert [a["subject"] for a in team.get("/associations/resources/shared-id").json()] == ["team-value"]
        assert stranger.get("/associations/resources/shared-id").status_code == 401
        assert team.delete("/associations/resources/shared-id").status_code == 204
    log = rp.log_file.read_text()
    assert "outcome=denied principal=team mechanism=basic operation=Write resource=Subject:ops-value" in log
