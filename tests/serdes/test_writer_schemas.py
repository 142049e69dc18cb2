"""Which registered schema a serializer writes with, against the real registry and confluent-kafka's serializers:
``use_schema_id``, ``use_latest_with_metadata`` (data-contract metadata registered by the client), and Avro named
types given as references, registered before the schema that uses them as the Protobuf serializer does imports."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest
from confluent_kafka.schema_registry import Schema as CkSchema
from confluent_kafka.schema_registry import SchemaReference as CkReference
from confluent_kafka.schema_registry.avro import AvroDeserializer as CkAvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as CkAvroSerializer

from serdes import (
    AsyncAvroSerializer,
    AsyncRegistryClient,
    AvroDeserializer,
    AvroSerializer,
    JsonSchemaSerializer,
    Metadata,
    ProtobufSerializer,
    RegistryClient,
    Rule,
    RuleSet,
    Schema,
    SchemaReference,
    SerializationContext,
    SerializationError,
    wire,
)

CK_TOPIC = {"subject.name.strategy.type": "TOPIC"}
V1 = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"}]}
V2 = {
    "type": "record",
    "name": "User",
    "fields": [{"name": "name", "type": "string"}, {"name": "email", "type": "string", "default": ""}],
}


def _versions(client: RegistryClient, subject: str, *schemas: Schema) -> list[int]:
    client.set_compatibility("NONE", subject)
    return [client.register(subject, s) for s in schemas]


# -- use_schema_id -------------------------------------------------------------------------------------------------


def test_use_schema_id_writes_that_schema_like_confluent_kafka(client, ck_client, value_ctx) -> None:
    subject = f"{value_ctx.topic}-value"
    id1, id2 = _versions(client, subject, Schema(json.dumps(V1)), Schema(json.dumps(V2)))
    ours = AvroSerializer(client, use_schema_id=id1)({"name": "ann"}, value_ctx)
    theirs = CkAvroSerializer(ck_client, None, conf={**CK_TOPIC, "auto.register.schemas": False, "use.schema.id": id1})(
        {"name": "ann"}, value_ctx
    )
    assert ours == theirs == wire.prefix(id1) + b"\x06ann"
    assert AvroDeserializer(client, V2)(ours, value_ctx) == {"name": "ann", "email": ""}
    with pytest.raises(SerializationError, match=r"record does not match the Avro schema.*email"):
        AvroSerializer(client, use_schema_id=id2)({"name": "ann", "email": 5}, value_ctx)


def test_use_schema_id_must_be_registered_under_the_subject(client, value_ctx, topic) -> None:
    (other_id,) = _versions(client, f"{topic}-elsewhere", Schema('{"type":"record","name":"X","fields":[]}'))
    client.register(f"{value_ctx.topic}-value", Schema(json.dumps(V1)))
    with pytest.raises(SerializationError, match=rf"subject '{topic}-value' failed: .*\(HTTP 404, error code 40403\)"):
        AvroSerializer(client, use_schema_id=other_id)({}, value_ctx)
    with pytest.raises(ValueError, match="exclude each other"):
        AvroSerializer(client, use_schema_id=1, use_latest_version=True)


def test_use_schema_id_for_json_and_protobuf_checks_the_schema_type(client, protos, value_ctx, require_type) -> None:
    require_type("JSON")
    (avro_id,) = _versions(client, f"{value_ctx.topic}-value", Schema(json.dumps(V1)))
    with pytest.raises(SerializationError, match=f"schema {avro_id} is AVRO, not JSON"):
        JsonSchemaSerializer(client, use_schema_id=avro_id)({"name": "x"}, value_ctx)
    with pytest.raises(SerializationError, match=f"schema {avro_id} is AVRO, not PROTOBUF"):
        ProtobufSerializer(client, protos.address.Address, use_schema_id=avro_id)(protos.address.Address(), value_ctx)


# -- metadata and use_latest_with_metadata --------------------------------------------------------------------------


def test_metadata_and_rule_set_round_trip_through_the_registry(client, topic) -> None:
    rule = Rule(
        "checkName",
        "CONDITION",
        "WRITE",
        "CEL",
        expr="message.name != ''",
        tags=("PII",),
        params={"dlq.topic": "bad"},
        on_failure="DLQ",
    )
    schema = Schema(
        json.dumps(V1),
        metadata=Metadata(properties={"owner": "team-a"}, tags={"User.name": ["PII"]}),
        rule_set=RuleSet(domain_rules=[rule]),
    )
    client.register(topic, schema)
    stored = client.get_latest_version(topic).schema
    assert stored.metadata == schema.metadata and stored.rule_set == schema.rule_set
    assert schema.to_json()["ruleSet"] == {
        "domainRules": [
            {
                "name": "checkName",
                "kind": "CONDITION",
                "mode": "WRITE",
                "type": "CEL",
                "tags": ["PII"],
                "params": {"dlq.topic": "bad"},
                "expr": "message.name != ''",
                "onFailure": "DLQ",
            }
        ]
    }
    assert hash(schema) == hash(Schema.from_json(schema.to_json()))


def test_use_latest_with_metadata_on_both_sides(client, ck_client, value_ctx) -> None:
    subject = f"{value_ctx.topic}-value"
    major1 = Metadata(properties={"major": "1"})
    # the third version names its own metadata: without any it would inherit the second's, as in Confluent
    other = Metadata(properties={"major": "other"})
    id1, id2, _ = _versions(
        client,
        subject,
        Schema(json.dumps(V1), metadata=major1),
        Schema(json.dumps(V2), metadata=Metadata(properties={"major": "2"})),
        Schema('{"type":"record","name":"Other","fields":[]}', metadata=other),
    )
    ours = AvroSerializer(client, use_latest_with_metadata={"major": "2"})({"name": "b", "email": "e"}, value_ctx)
    conf = {**CK_TOPIC, "auto.register.schemas": False, "use.latest.with.metadata": {"major": "2"}}
    assert ours == CkAvroSerializer(ck_client, None, conf=conf)({"name": "b", "email": "e"}, value_ctx)
    assert ours[:5] == wire.prefix(id2)
    old = AvroSerializer(client, use_latest_with_metadata={"major": "1"})({"name": "a"}, value_ctx)
    assert old[:5] == wire.prefix(id1)
    reader = AvroDeserializer(client, use_latest_with_metadata={"major": "2"})
    assert reader(old, value_ctx) == {"name": "a", "email": ""}
    with pytest.raises(SerializationError, match=r"\(HTTP 404, error code 40403\)"):
        AvroSerializer(client, use_latest_with_metadata={"major": "3"})({"name": "c"}, value_ctx)

    async def main() -> bytes | None:
        async with AsyncRegistryClient(client.urls) as c:
            return await AsyncAvroSerializer(c, use_latest_with_metadata={"major": "1"})({"name": "a"}, value_ctx)

    assert asyncio.run(main()) == old


# -- Avro references -----------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Address:
    __avro_namespace__ = "refs"
    city: str
    zip: int


@dataclasses.dataclass
class Person:
    __avro_namespace__ = "refs"
    name: str
    home: Address
    work: Address | None = None


def test_typed_record_references_are_registered_first(client, ck_client, value_ctx) -> None:
    ser = AvroSerializer(
        client, Person, references=[Address], reference_subject_strategy=lambda ctx, name: f"{ctx.topic}-{name}"
    )
    person = Person("ann", Address("Oslo", 150))
    data = ser(person, value_ctx)
    ref_subject = f"{value_ctx.topic}-refs.Address"
    registered = client.get_latest_version(f"{value_ctx.topic}-value").schema
    assert registered.references == (SchemaReference("refs.Address", ref_subject, 1),)
    fields = {f["name"]: f["type"] for f in json.loads(registered.schema_str)["fields"]}
    assert fields["home"] == "Address" and fields["work"] == ["null", "Address"]  # named, in Person's namespace
    assert json.loads(client.get_latest_version(ref_subject).schema.schema_str)["name"] == "Address"
    assert AvroDeserializer(client, Person)(data, value_ctx) == person
    as_dict = {"name": "ann", "home": {"city": "Oslo", "zip": 150}, "work": None}
    assert CkAvroDeserializer(ck_client, conf=CK_TOPIC)(data, value_ctx) == as_dict
    ck_schema = CkSchema(registered.schema_str, "AVRO", [CkReference("refs.Address", ref_subject, 1)])
    theirs = CkAvroSerializer(ck_client, ck_schema, conf={**CK_TOPIC, "auto.register.schemas": False})
    assert theirs(as_dict, value_ctx) == data


def test_reference_chains_register_dependencies_first(client, topic) -> None:
    address = {
        "type": "record",
        "name": "Address",
        "namespace": "chain",
        "fields": [{"name": "city", "type": "string"}],
    }
    customer = {
        "type": "record",
        "name": "Customer",
        "namespace": "chain",
        "fields": [{"name": "name", "type": "string"}, {"name": "address", "type": "Address"}],
    }
    order = {
        "type": "record",
        "name": "Order",
        "namespace": "chain",
        "fields": [{"name": "id", "type": "long"}, {"name": "customer", "type": "Customer"}],
    }

    def subject_of(ctx: SerializationContext | None, name: str) -> str:
        return f"{topic}-{name}"

    ser = AvroSerializer(
        client,
        order,
        subject=f"{topic}-order",
        references=[customer, json.dumps(address)],
        reference_subject_strategy=subject_of,
    )
    record = {"id": 1, "customer": {"name": "ann", "address": {"city": "Oslo"}}}
    assert AvroDeserializer(client)(ser(record)) == record
    assert client.get_latest_version(f"{topic}-chain.Address").schema.references == ()
    assert client.get_latest_version(f"{topic}-chain.Customer").schema.references == (
        SchemaReference("chain.Address", f"{topic}-chain.Address", 1),
    )
    assert client.get_latest_version(f"{topic}-order").schema.references == (
        SchemaReference("chain.Customer", f"{topic}-chain.Customer", 1),
    )

    async def main() -> bytes | None:  # the async serializer finds the same registrations
        async with AsyncRegistryClient(client.urls) as c:
            return await AsyncAvroSerializer(
                c,
                order,
                subject=f"{topic}-order",
                auto_register=False,
                references=[customer, address],
                reference_subject_strategy=subject_of,
            )(record)

    assert asyncio.run(main()) == ser(record)


def test_unregistered_references_without_auto_register(client, topic) -> None:
    ser = AvroSerializer(
        client,
        Person,
        subject=f"{topic}-person",
        references=[Address],
        auto_register=False,
        reference_subject_strategy=lambda ctx, name: f"{topic}-{name}",
    )
    with pytest.raises(SerializationError, match=rf"subject '{topic}-person' failed: .*error code 40401"):
        ser(Person("ann", Address("Oslo", 150)))


def test_bad_references() -> None:
    with RegistryClient("http://127.0.0.1:1") as c:
        a = {"type": "record", "name": "A", "fields": [{"name": "b", "type": "B"}]}
        b = {"type": "record", "name": "B", "fields": [{"name": "a", "type": ["null", "A"]}]}
        main = {"type": "record", "name": "M", "fields": [{"name": "a", "type": "A"}]}
        with pytest.raises(ValueError, match="Avro references use each other in a cycle: A -> B -> A"):
            AvroSerializer(c, main, references=[a, b])
        with pytest.raises(TypeError, match="an Avro reference must be a named type"):
            AvroSerializer(c, main, references=['"string"'])
        with pytest.raises(ValueError, match="two Avro references define 'A'"):
            AvroSerializer(c, main, references=[a, dict(a)])
        with pytest.raises(ValueError, match="invalid Avro schema: unknown type 'A'"):
            AvroSerializer(c, main)
