"""``AssociatedNameStrategy`` against a live registry's ``/associations``: our serializers (sync and async, Avro,
JSON Schema and Protobuf) and confluent-kafka's, each finding the subject the registry associates with the
topic, falling back as confluent-kafka's strategy does when there is none."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer as CkAvroSerializer
from confluent_kafka.schema_registry.common.serde import SubjectNameStrategyType
from confluent_kafka.serialization import SerializationError as CkSerializationError

from serdes import (
    AssociatedNameStrategy,
    AsyncAvroSerializer,
    AsyncRegistryClient,
    AvroDeserializer,
    AvroSerializer,
    JsonSchemaSerializer,
    MessageField,
    ProtobufDeserializer,
    ProtobufSerializer,
    RegistryClient,
    SerializationContext,
    SerializationError,
    wire,
)
from tests.serdes.test_protobuf import make_order
from tests.support.schemas import ORDER_AVRO, ORDER_JSON, ORDER_RECORD


@pytest.fixture
def http(registry_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=registry_url, timeout=30) as client:
        yield client


def associate(
    http: httpx.Client,
    topic: str,
    subject: str,
    association_type: str = "value",
    namespace: str = "lkc-1",
    schema: dict[str, Any] | None = None,
) -> None:
    """Associate ``topic`` with ``subject`` (registering a first schema there, as the subject needs one)."""
    body = {
        "resourceName": topic,
        "resourceNamespace": namespace,
        "resourceId": f"{namespace}:{topic}",
        "resourceType": "topic",
        "associations": [
            {
                "subject": subject,
                "associationType": association_type,
                "schema": schema or {"schema": json.dumps(ORDER_AVRO)},
            }
        ],
    }
    r = http.post("/associations", json=body)
    assert r.status_code == 200, r.text


def subjects(client: RegistryClient, prefix: str) -> list[str]:
    return client.get_subjects(prefix)


def test_our_serializer_writes_under_the_associated_subject(
    client: RegistryClient, http: httpx.Client, topic: str, value_ctx: SerializationContext
) -> None:
    subject = f"custom-{topic}"
    associate(http, topic, subject)
    data = AvroSerializer(client, ORDER_AVRO, strategy=AssociatedNameStrategy())(ORDER_RECORD, value_ctx)
    assert data[:5] == wire.prefix(client.get_latest_version(subject).schema_id)
    assert subjects(client, topic) == []  # nothing under <topic>-value
    assert AvroDeserializer(client)(data, value_ctx) == ORDER_RECORD
    # the key has no association: it falls back to <topic>-key (by name too)
    key_ctx = SerializationContext(topic, MessageField.KEY)
    AvroSerializer(client, '"string"', strategy="associated")("k", key_ctx)
    assert subjects(client, topic) == [f"{topic}-key"]


def test_fallbacks_and_ambiguity(
    client: RegistryClient, http: httpx.Client, topic: str, value_ctx: SerializationContext
) -> None:
    # a namespace of its own: the record-name subject is shared by every test on this registry otherwise
    namespace = f"assoc{uuid.uuid4().hex[:8]}"
    schema = {**ORDER_AVRO, "namespace": namespace}
    record = AvroSerializer(client, schema, strategy=AssociatedNameStrategy(fallback="record"))
    record(ORDER_RECORD, value_ctx)
    assert client.get_latest_version(f"{namespace}.Order").schema_id > 0
    with pytest.raises(SerializationError, match=f"No associated subject found for topic {topic}"):
        AvroSerializer(client, ORDER_AVRO, strategy=AssociatedNameStrategy(fallback="none"))(ORDER_RECORD, value_ctx)
    with pytest.raises(ValueError, match="unknown fallback"):
        AssociatedNameStrategy(fallback="associated")
    # the same topic name in two clusters: ambiguous under "-", one subject for each cluster id
    associate(http, topic, f"a-{topic}", namespace="lkc-a")
    associate(http, topic, f"b-{topic}", namespace="lkc-b")
    with pytest.raises(SerializationError, match=f"Multiple associated subjects found for topic {topic}"):
        AvroSerializer(client, ORDER_AVRO, strategy=AssociatedNameStrategy())(ORDER_RECORD, value_ctx)
    in_b = AvroSerializer(client, ORDER_AVRO, strategy=AssociatedNameStrategy(kafka_cluster_id=lambda: "lkc-b"))
    assert in_b(ORDER_RECORD, value_ctx)[:5] == wire.prefix(client.get_latest_version(f"b-{topic}").schema_id)


def test_resolved_subjects_are_kept_until_cleared(
    client: RegistryClient, http: httpx.Client, topic: str, value_ctx: SerializationContext
) -> None:
    strategy = AssociatedNameStrategy()
    JsonSchemaSerializer(client, ORDER_JSON, strategy=strategy)(ORDER_RECORD, value_ctx)
    assert subjects(client, topic) == [f"{topic}-value"]
    late = f"late-{topic}"
    first = {"schema": json.dumps({**ORDER_JSON, "description": "v0"}), "schemaType": "JSON"}
    associate(http, topic, late, schema=first)
    # kept, as confluent-kafka's strategy keeps it: a new serializer on the same strategy still writes there
    JsonSchemaSerializer(client, ORDER_JSON, strategy=strategy)(ORDER_RECORD, value_ctx)
    assert len(client.get_versions(late)) == 1
    strategy.clear_cache()
    JsonSchemaSerializer(client, ORDER_JSON, strategy=strategy)(ORDER_RECORD, value_ctx)
    assert len(client.get_versions(late)) == 2  # ORDER_JSON after the association's first schema
    # called without a client (as a plain strategy function), it can only answer what it resolved
    with pytest.raises(SerializationError, match="resolves a subject through the registry"):
        AssociatedNameStrategy()(value_ctx, None)


def test_async_serializer(registry_url: str, http: httpx.Client, topic: str, value_ctx: SerializationContext) -> None:
    subject = f"async-{topic}"
    associate(http, topic, subject)

    async def main() -> bytes:
        async with AsyncRegistryClient(registry_url) as aclient:
            return await AsyncAvroSerializer(aclient, ORDER_AVRO, strategy=AssociatedNameStrategy())(
                ORDER_RECORD, value_ctx
            )

    data = asyncio.run(main())
    with RegistryClient(registry_url) as client:
        assert data[:5] == wire.prefix(client.get_latest_version(subject).schema_id)


def test_confluent_kafka_serializer_against_the_server(
    client: RegistryClient, ck_client: SchemaRegistryClient, http: httpx.Client, topic: str, value_ctx
) -> None:
    subject = f"ck-{topic}"
    associate(http, topic, subject)
    conf = {"subject.name.strategy.type": SubjectNameStrategyType.ASSOCIATED}
    theirs = CkAvroSerializer(ck_client, json.dumps(ORDER_AVRO), conf=conf)(ORDER_RECORD, value_ctx)
    assert theirs[:5] == wire.prefix(client.get_latest_version(subject).schema_id)
    assert AvroDeserializer(client)(theirs, value_ctx) == ORDER_RECORD
    # confluent-kafka's default strategy is the associated one: with no association (an empty list from the
    # server) it falls back to <topic>-value, as ours does
    other = SerializationContext(f"{topic}-other", MessageField.VALUE)
    ours_default = AvroSerializer(client, ORDER_AVRO, strategy="associated")(ORDER_RECORD, other)
    theirs_default = CkAvroSerializer(ck_client, json.dumps(ORDER_AVRO))(ORDER_RECORD, other)
    assert ours_default == theirs_default
    assert subjects(client, f"{topic}-other") == [f"{topic}-other-value"]
    strict = {**conf, "subject.name.strategy.conf": {"subject.name.strategy.fallback.type": "NONE"}}
    with pytest.raises(CkSerializationError, match="No associated subject found"):
        CkAvroSerializer(ck_client, json.dumps(ORDER_AVRO), conf=strict)(
            ORDER_RECORD, SerializationContext(f"{uuid.uuid4().hex}", MessageField.VALUE)
        )


def test_protobuf_serializer_and_latest_version_deserializer(
    client: RegistryClient, http: httpx.Client, protos: SimpleNamespace, topic: str, value_ctx: SerializationContext
) -> None:
    """The Protobuf serializer registers under the associated subject, and a deserializer reading as the
    subject's latest version finds that subject the same way."""
    subject = f"proto-{topic}"
    order = make_order(protos)
    ProtobufSerializer(client, protos.order.Order, subject=subject)(order)  # the subject's first version
    body = {
        "resourceName": topic,
        "resourceNamespace": "lkc-1",
        "resourceId": f"lkc-1:{topic}",
        "associations": [{"subject": subject}],
    }
    assert http.post("/associations", json=body).status_code == 200
    data = ProtobufSerializer(client, protos.order.Order, strategy=AssociatedNameStrategy())(order, value_ctx)
    latest = client.get_latest_version(subject)
    assert latest.version == 1 and data[:5] == wire.prefix(latest.schema_id)
    assert subjects(client, topic) == []
    reader = ProtobufDeserializer(
        client, protos.order.Order, use_latest_version=True, strategy=AssociatedNameStrategy()
    )
    assert reader(data, value_ctx) == order
