"""Contexts (Confluent 7.x): ``:.ctx:subject`` names, an id space per context, ``/contexts``, the ``subject``
parameter on ``/schemas/ids/{id}``, listings, config and mode per context, the ``_schemas`` records Confluent
writes for them, and replay after a restart."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from registry import schemas_topic
from registry.schemas_topic import Key
from registry.state import State
from streams.log import OFFSET_BEGINNING, TopicPartition, open_log
from tests.registry.schemas import record
from tests.support.registry_process import RegistryProcess

CT = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


def compact(schema: str) -> str:
    """The canonical (stored) form of the simple records used here."""
    return json.dumps(json.loads(schema), separators=(",", ":"))


A = compact(record("A", ("a", "string")))
B = compact(record("B", ("b", "long")))
C = compact(record("C", ("c", "int")))


@pytest.fixture(scope="module")
def own(module_registry: RegistryProcess) -> RegistryProcess:
    """A registry of this module's own: the id spaces and the context list start empty."""
    return module_registry


def register(c: httpx.Client, subject: str, schema: str) -> int:
    r = c.post(f"/subjects/{subject}/versions", json={"schema": schema}, headers=CT)
    assert r.status_code == 200, r.text
    return int(r.json()["id"])


def test_ids_listings_and_contexts(own: RegistryProcess) -> None:
    with httpx.Client(base_url=own.url, timeout=30) as c:
        assert c.get("/contexts").json() == ["."]
        # every context numbers its schemas from 1
        assert register(c, ":.ctx1:t1", A) == 1
        assert register(c, ":.ctx2:t2", B) == 1
        assert register(c, "t3", C) == 1
        assert register(c, ":.:t4", C) == 1  # `:.:` is the default context
        assert register(c, ":.ctx1:other", A) == 1  # the same schema in the same context: the same id
        assert register(c, ":.ctx2:x", A) == 2  # ... in another context: that context's next id

        # the id in the context the `subject` parameter selects
        def schema_of(params: dict[str, str]) -> str:
            r = c.get("/schemas/ids/1", params=params)
            assert r.status_code == 200, r.text
            return str(r.json()["schema"])

        assert schema_of({}) == C
        assert schema_of({"subject": ":.ctx1:t1"}) == A
        assert schema_of({"subject": ":.ctx1:"}) == A  # a context alone
        assert schema_of({"subject": "t2"}) == B  # unqualified and not here: found in the context holding it
        assert schema_of({"subject": "t3"}) == C
        assert schema_of({"subject": "nowhere"}) == C  # else the default context
        assert c.get("/schemas/ids/1/schema", params={"subject": ":.ctx2:t2"}).text == B
        r = c.get("/schemas/ids/2", params={"subject": ":.ctx1:t1"})  # qualified and not holding it: 40403
        assert (r.status_code, r.json()["error_code"]) == (404, 40403)
        assert c.get("/schemas/ids/2").status_code == 404  # the default context has only id 1
        with_max = c.get("/schemas/ids/1", params={"subject": ":.ctx2:", "fetchMaxId": "true"}).json()
        assert with_max == {"guid": with_max["guid"], "schema": B, "maxId": 2}
        assert c.get("/schemas/ids/1/versions", params={"subject": ":.ctx1:"}).json() == [
            {"subject": ":.ctx1:other", "version": 1},
            {"subject": ":.ctx1:t1", "version": 1},
        ]
        assert c.get("/schemas/ids/1/subjects").json() == ["t3", "t4"]

        # listings: qualified names for other contexts, Confluent's prefixes
        assert c.get("/subjects").json() == [":.ctx1:other", ":.ctx1:t1", ":.ctx2:t2", ":.ctx2:x", "t3", "t4"]
        assert c.get("/subjects", params={"subjectPrefix": ":.ctx1:"}).json() == [":.ctx1:other", ":.ctx1:t1"]
        assert c.get("/subjects", params={"subjectPrefix": ""}).json() == ["t3", "t4"]
        assert c.get("/subjects", params={"subjectPrefix": ":.:"}).json() == ["t3", "t4"]
        assert c.get("/subjects", params={"subjectPrefix": ":*:t"}).json() == [":.ctx1:t1", ":.ctx2:t2", "t3", "t4"]
        assert len(c.get("/schemas", params={"subjectPrefix": ":*:"}).json()) == 6
        assert [s["subject"] for s in c.get("/schemas").json()] == ["t3", "t4"]
        latest = c.get("/schemas", params={"subjectPrefix": ":.ctx2:"}).json()
        assert [(s["subject"], s["id"]) for s in latest] == [(":.ctx2:t2", 1), (":.ctx2:x", 2)]

        assert c.get("/contexts").json() == [".", ".ctx1", ".ctx2"]
        assert c.get("/contexts", params={"contextPrefix": ".ctx2"}).json() == [".ctx2"]
        assert c.get("/contexts", params={"contextPrefix": ".CTX"}).json() == []
        assert c.get("/contexts", params={"offset": 1, "limit": 1}).json() == [".ctx1"]

        # an unqualified subject not in the default context is read from the context that has it
        r = c.get("/subjects/t2/versions/1")
        assert (r.json()["subject"], r.json()["id"], r.json()["schema"]) == (":.ctx2:t2", 1, B)
        assert c.get("/subjects/t2/versions/latest/schema").text == B
        r = c.post("/subjects/t2", json={"schema": B}, headers=CT)
        assert (r.status_code, r.json()["subject"], r.json()["version"]) == (200, ":.ctx2:t2", 1)
        r = c.get("/subjects/t2/versions/2")
        assert (r.status_code, r.json()["error_code"]) == (404, 40401)
        assert c.get("/subjects/t2/versions").status_code == 404  # only reads by version look elsewhere

        # DELETE /contexts: only an empty context
        r = c.delete("/contexts/.ctx1")
        assert r.status_code == 422
        assert r.json() == {"error_code": 42211, "message": "The specified context ':.ctx1:' is not empty."}
        for s in (":.ctx1:t1", ":.ctx1:other"):
            assert c.delete(f"/subjects/{s}").status_code == 200
        assert c.delete("/contexts/:.ctx1:").json()["error_code"] == 42211  # soft-deleted subjects count
        for s in (":.ctx1:t1", ":.ctx1:other"):
            assert c.delete(f"/subjects/{s}", params={"permanent": "true"}).status_code == 200
        assert c.delete("/contexts/.ctx1").status_code == 204
        assert c.get("/contexts").json() == [".", ".ctx2"]
        assert c.delete("/contexts/ctx-never-used").status_code == 204
        r = c.delete("/contexts/:.a:b:")
        assert (r.status_code, r.json()["error_code"]) == (400, 400)
        # a context used again is announced again; its ids go on from where they were
        assert register(c, ":.ctx1:t1", B) == 2
        assert c.get("/contexts").json() == [".", ".ctx1", ".ctx2"]

        before = {
            p: c.get(p).content
            for p in (
                "/subjects",
                "/contexts",
                "/schemas?subjectPrefix=:*:",
                "/schemas/ids/1?subject=:.ctx2:",
                "/schemas/ids/2?subject=:.ctx1:",
                "/schemas/ids/1",
                "/subjects/:.ctx2:x/versions/1",
            )
        }
    own.restart()  # replay rebuilds every context's ids from the log
    with httpx.Client(base_url=own.url, timeout=30) as c:
        assert {p: c.get(p).content for p in before} == before
        assert register(c, ":.ctx2:new", C) == 3


def test_config_and_mode_per_context(registry_url: str) -> None:
    ctx = f".c{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=registry_url, timeout=30) as c:
        v1 = record("R", ("a", "string"))
        v2 = record("R", ("b", "int"))  # a new field without default: not BACKWARD compatible
        register(c, f":{ctx}:loose", v1)
        register(c, f":{ctx}:strict", v1)
        assert c.put(f"/config/:{ctx}:", json={"compatibility": "NONE"}, headers=CT).status_code == 200
        assert c.put(f"/config/:{ctx}:strict", json={"compatibility": "BACKWARD"}, headers=CT).status_code == 200
        assert c.get(f"/config/:{ctx}:").json()["compatibilityLevel"] == "NONE"
        register(c, f":{ctx}:loose", v2)  # the context's level applies to its subjects
        r = c.post(f"/subjects/:{ctx}:strict/versions", json={"schema": v2}, headers=CT)
        assert r.status_code == 409  # the subject's own level wins
        r = c.post(f"/compatibility/subjects/:{ctx}:strict/versions/latest", json={"schema": v2}, headers=CT)
        assert r.json() == {"is_compatible": False}

        assert c.put(f"/mode/:{ctx}:", json={"mode": "READONLY"}, headers=CT).status_code == 200
        r = c.post(f"/subjects/:{ctx}:loose/versions", json={"schema": record("R", ("z", "long"))}, headers=CT)
        assert r.status_code == 422
        assert r.json() == {
            "error_code": 42205,
            "message": f"Subject :{ctx}:loose in context :{ctx}: is in read-only mode",
        }
        assert c.get(f"/mode/:{ctx}:loose", params={"defaultToGlobal": "true"}).json() == {"mode": "READWRITE"}
        assert c.delete(f"/mode/:{ctx}:").status_code == 200
        register(c, f":{ctx}:loose", record("R", ("z", "long")))
        r = c.post(f"/subjects/:{ctx}:x/versions", json={"schema": v1}, headers=CT)
        assert r.status_code == 200
        r = c.post(f"/subjects/:{ctx}:__GLOBAL/versions", json={"schema": v1}, headers=CT)
        assert r.json()["error_code"] == 42208


def test_references_resolve_in_the_referrers_context(registry_url: str) -> None:
    ctx = f".r{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=registry_url, timeout=30) as c:
        common = record("Common", ("id", "long"))
        register(c, f":{ctx}:common", common)
        order = json.dumps({"type": "record", "name": "Order", "fields": [{"name": "c", "type": "Common"}]})
        body = {"schema": order, "references": [{"name": "Common", "subject": "common", "version": 1}]}
        r = c.post(f"/subjects/:{ctx}:order/versions", json=body, headers=CT)
        assert r.status_code == 200, r.text  # `common` is the context's subject, not the default context's
        r = c.get(f"/subjects/:{ctx}:common/versions/1/referencedby")
        assert r.json() == [r2 := c.get(f"/subjects/:{ctx}:order/versions/1").json()["id"]] and r2 == 2
        r = c.delete(f"/subjects/:{ctx}:common/versions/1")
        assert r.json()["error_code"] == 42206  # the reference guards the context's subject
        r = c.post("/subjects/order-without-common/versions", json=body, headers=CT)
        assert r.json()["error_code"] == 42201  # no `common` in the default context


def test_schemas_records_are_confluents(own: RegistryProcess) -> None:
    """The context announcement and the qualified SCHEMA records, byte for byte as Confluent writes them."""
    with httpx.Client(base_url=own.url, timeout=30) as c:
        register(c, ":.bytes:orders", A)
    log = open_log(own.log_url)
    try:
        consumer = log.consumer(None)
        consumer.assign({TopicPartition("_schemas", 0): OFFSET_BEGINNING})
        records = []
        while batch := consumer.poll(1.0, 10_000):
            records += [(r.key, r.value) for r in batch]
        consumer.close()
    finally:
        log.close()
    context_key = b'{"keytype":"CONTEXT","tenant":"default","context":".bytes","magic":0}'
    schema_key = b'{"keytype":"SCHEMA","subject":":.bytes:orders","version":1,"magic":1}'
    keys = [k for k, _ in records]
    assert keys.count(context_key) == 1 and keys.index(context_key) < keys.index(schema_key)
    assert dict(records)[context_key] == b'{"tenant":"default","context":".bytes"}'
    assert json.loads(dict(records)[schema_key]) == {
        "subject": ":.bytes:orders",
        "version": 1,
        "id": 1,
        "schema": A,
        "deleted": False,
    }


def test_a_confluent_log_with_contexts_replays() -> None:
    """Records as a Confluent registry with contexts wrote them (its key order, `magic` 0 legacy keys
    included) rebuild one id space per context."""
    st = State()
    records: list[tuple[bytes, bytes | None]] = [
        (
            b'{"keytype":"CONTEXT","tenant":"default","context":".eu","magic":0}',
            b'{"tenant":"default","context":".eu"}',
        ),
        (
            b'{"keytype":"SCHEMA","subject":":.eu:orders","version":1,"magic":1}',
            b'{"subject":":.eu:orders","version":1,"id":1,"schema":"\\"string\\"","deleted":false}',
        ),
        (
            b'{"keytype":"SCHEMA","subject":"orders","version":1,"magic":1}',
            b'{"subject":"orders","version":1,"id":1,"schema":"\\"long\\"","deleted":false}',
        ),
        (
            b'{"keytype":"SCHEMA","subject":":.:legacy","version":1,"magic":0}',
            b'{"subject":":.:legacy","version":1,"id":2,"schema":"\\"int\\"","deleted":false}',
        ),
        (b'{"keytype":"CONFIG","subject":":.eu:","magic":0}', b'{"subject":":.eu:","compatibilityLevel":"NONE"}'),
        (
            b'{"keytype":"CONTEXT","tenant":"default","context":".gone","magic":0}',
            b'{"tenant":"default","context":".gone"}',
        ),
        (b'{"keytype":"CONTEXT","tenant":"default","context":".gone","magic":0}', None),
    ]
    for offset, (key, value) in enumerate(records):
        st.apply(offset, key, value, 0)
    assert set(st.contexts) == {".eu"}
    assert st.space(".eu").contents[1].schema == '"string"'
    assert st.contents[1].schema == '"long"' and st.max_id == 2 and st.space(".eu").max_id == 1
    assert set(st.subjects) == {":.eu:orders", "orders", "legacy"}
    assert st.configs[":.eu:"] == {"compatibilityLevel": "NONE"}
    assert Key(schemas_topic.CONTEXT, context=".eu").encode() == records[0][0]
    assert st.raw_keys(Key(schemas_topic.CONTEXT, context=".eu")) == {records[0][0]}


def test_confluent_serdes_in_two_contexts(registry_url: str) -> None:
    """confluent-kafka's serializers in two contexts get the same id for different schemas; its deserializers,
    asking with their subject, read each with its own context's schema."""
    first, second = f".s{uuid.uuid4().hex[:8]}", f".s{uuid.uuid4().hex[:8]}"
    sr = SchemaRegistryClient({"url": registry_url})
    values = {first: ({"a": "x"}, A), second: ({"b": 7}, B)}
    payloads = {}
    for ctx, (value, schema) in values.items():

        def strategy(ctx_: SerializationContext | None, record_name: str | None, context: str = ctx) -> str:
            assert ctx_ is not None
            return f":{context}:{ctx_.topic}-value"

        conf = {"subject.name.strategy": strategy}
        ser = AvroSerializer(sr, schema, conf=conf)
        payloads[ctx] = ser(value, SerializationContext("orders", MessageField.VALUE))
        de = AvroDeserializer(SchemaRegistryClient({"url": registry_url}), conf=conf)
        assert de(payloads[ctx], SerializationContext("orders", MessageField.VALUE)) == value
    assert payloads[first][:5] == payloads[second][:5] == b"\x00\x00\x00\x00\x01"  # id 1 in both contexts
    assert sr.get_schema(1, subject_name=f":{second}:orders-value").schema_str == B
    assert sr.register_schema(f":{first}:other", Schema(A, "AVRO")) == 1
    assert f":{first}:orders-value" in sr.get_subjects()


def test_guids_resolve_in_every_context(registry_url: str) -> None:
    """A GUID names content: ``/schemas/guids/{guid}`` finds a schema registered only in another context, and
    ``/ids`` lists its id in each context that has it, the default context first."""
    tag = uuid.uuid4().hex[:8]
    a, b = f".a{tag}", f".b{tag}"
    schema = compact(record(f"G{tag}", ("g", "string")))
    with httpx.Client(base_url=registry_url, timeout=30) as c:
        r = c.post(f"/subjects/:{b}:s/versions", json={"schema": schema}, headers=CT)
        guid, id_b = r.json()["guid"], r.json()["id"]
        assert c.get(f"/schemas/guids/{guid}").json() == {"guid": guid, "schema": schema}
        assert c.get(f"/schemas/guids/{guid}/ids").json() == [{"context": b, "id": id_b}]
        sr = SchemaRegistryClient({"url": registry_url})
        if hasattr(sr, "get_schema_by_guid"):  # confluent-kafka >= 2.11
            assert sr.get_schema_by_guid(guid).schema_str == schema

        register(c, f":{a}:filler", A)  # so that the schema gets another id in .a
        id_a = register(c, f":{a}:s", schema)
        id_default = register(c, f"g-{tag}", schema)
        assert id_a == 2
        assert c.get(f"/schemas/guids/{guid}/ids").json() == [
            {"context": ".", "id": id_default},
            {"context": a, "id": id_a},
            {"context": b, "id": id_b},
        ]
        # soft-deleted versions keep the id readable; a hard delete drops the context from the list
        assert c.delete(f"/subjects/:{a}:s").status_code == 200
        assert len(c.get(f"/schemas/guids/{guid}/ids").json()) == 3
        assert c.delete(f"/subjects/:{a}:s", params={"permanent": "true"}).status_code == 200
        assert c.get(f"/schemas/guids/{guid}/ids").json() == [
            {"context": ".", "id": id_default},
            {"context": b, "id": id_b},
        ]
        for s in (f"g-{tag}", f":{b}:s"):
            assert c.delete(f"/subjects/{s}").status_code == 200
            assert c.delete(f"/subjects/{s}", params={"permanent": "true"}).status_code == 200
        r = c.get(f"/schemas/guids/{guid}")
        assert (r.status_code, r.json()["error_code"]) == (404, 40403)
