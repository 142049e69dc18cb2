"""Confluent 8.x framing: the schema GUID in a record header (``__value_schema_id``) or after magic byte 1 in the
payload, both ways with confluent-kafka's serializers."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient, header_schema_id_serializer
from confluent_kafka.schema_registry.avro import AvroDeserializer as CkAvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as CkAvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as CkProtobufDeserializer

from serdes import (
    AsyncAvroDeserializer,
    AsyncAvroSerializer,
    AsyncRegistryClient,
    AvroDeserializer,
    AvroSerializer,
    JsonSchemaDeserializer,
    JsonSchemaSerializer,
    MessageField,
    ProtobufDeserializer,
    ProtobufSerializer,
    RegistryClient,
    RegistryError,
    SerializationContext,
    SerializationError,
    wire,
)

SCHEMA = {
    "type": "record",
    "name": "Point",
    "fields": [{"name": "x", "type": "int"}, {"name": "y", "type": "int"}, {"name": "label", "type": "string"}],
}
POINT = {"x": 1, "y": -2, "label": "origin"}  # more than 5 bytes: confluent-kafka refuses shorter payloads
SCHEMA_STR = json.dumps(SCHEMA)


def ctx_with_headers(topic: str, headers: Any = None, field: MessageField = MessageField.VALUE) -> SerializationContext:
    return SerializationContext(topic, field, [] if headers is None else headers)


def test_avro_guid_header_both_ways_with_confluent_kafka(
    client: RegistryClient, ck_client: SchemaRegistryClient, topic: str
) -> None:
    ctx = ctx_with_headers(topic)
    data = AvroSerializer(client, SCHEMA, schema_id_header=True)(POINT, ctx)
    schema_id = client.lookup(f"{topic}-value", AvroSerializer(client, SCHEMA).schema).schema_id
    plain = AvroSerializer(client, SCHEMA)(POINT, ctx_with_headers(topic))
    assert data == plain[wire.PREFIX_SIZE :]  # the payload is the record alone
    [(name, value)] = ctx.headers
    guid = client.get_guid(schema_id)
    assert (name, value) == ("__value_schema_id", b"\x01" + uuid.UUID(guid).bytes)
    assert AvroDeserializer(client)(data, ctx) == POINT
    assert CkAvroDeserializer(ck_client)(data, ctx) == POINT
    theirs_ctx = ctx_with_headers(topic)
    theirs = CkAvroSerializer(ck_client, SCHEMA_STR, conf={"schema.id.serializer": header_schema_id_serializer})(
        POINT, theirs_ctx
    )
    assert theirs_ctx.headers == ctx.headers and theirs == data
    assert AvroDeserializer(client)(theirs, theirs_ctx) == POINT
    # a key's id goes in __key_schema_id; a dict of headers works too
    key_ctx = ctx_with_headers(topic, {}, MessageField.KEY)
    key_data = AvroSerializer(client, SCHEMA, schema_id_header=True)(POINT, key_ctx)
    assert list(key_ctx.headers) == ["__key_schema_id"]
    assert AvroDeserializer(client)(key_data, key_ctx) == POINT


def test_guid_in_the_payload_prefix_and_errors(client: RegistryClient, topic: str) -> None:
    ctx = SerializationContext(topic, MessageField.VALUE)
    plain = AvroSerializer(client, SCHEMA)(POINT, ctx)
    guid = uuid.UUID(client.get_guid(wire.read_schema_id(plain))).bytes
    assert AvroDeserializer(client)(b"\x01" + guid + plain[5:], ctx) == POINT
    with pytest.raises(SerializationError, match="not known to the registry"):
        AvroDeserializer(client)(b"\x01" + uuid.uuid4().bytes + plain[5:], ctx)
    with pytest.raises(SerializationError, match="too short for the 17-byte GUID frame"):
        AvroDeserializer(client)(b"\x01" + guid[:3], ctx)
    with pytest.raises(SerializationError, match="needs a SerializationContext with headers"):
        AvroSerializer(client, SCHEMA, schema_id_header=True)(POINT, ctx)


def test_json_and_protobuf_guid_headers(
    client: RegistryClient, ck_client: SchemaRegistryClient, protos: Any, topic: str, require_type: Any
) -> None:
    ctx = ctx_with_headers(topic)
    doc = {"type": "object", "properties": {"x": {"type": "integer"}}}
    data = JsonSchemaSerializer(client, doc, schema_id_header=True)(POINT, ctx)
    assert data == b'{"x":1,"y":-2,"label":"origin"}' and ctx.headers[0][0] == "__value_schema_id"
    assert JsonSchemaDeserializer(client)(data, ctx) == POINT

    require_type("PROTOBUF")
    line_cls = protos.order.Order.Line  # a nested message: its index path [1, 0] goes in the header
    line = line_cls(sku="a", qty=2)
    pctx = ctx_with_headers(topic + "-pb")
    data = ProtobufSerializer(client, line_cls, schema_id_header=True)(line, pctx)
    assert data == line.SerializeToString()
    [(_, value)] = pctx.headers
    assert value[0] == 1 and value[17:] == wire.encode_message_indexes([1, 0])
    assert ProtobufDeserializer(client, line_cls)(data, pctx) == line
    ck_reader = CkProtobufDeserializer(
        line_cls, conf={"use.deprecated.format": False}, schema_registry_client=ck_client
    )
    assert ck_reader(data, pctx) == line


def test_async_serdes_with_headers(registry_url: str, topic: str) -> None:
    async def main() -> None:
        async with AsyncRegistryClient(registry_url) as client:
            ctx = ctx_with_headers(topic)
            data = await AsyncAvroSerializer(client, SCHEMA, schema_id_header=True)(POINT, ctx)
            assert ctx.headers[0][1][:1] == b"\x01"
            assert await AsyncAvroDeserializer(client)(data, ctx) == POINT

    asyncio.run(main())


def test_guids_of_schemas_in_another_context(client: RegistryClient, registry_url: str, topic: str) -> None:
    """A serializer writing to a context-qualified subject puts that context's GUID in the header; the client
    finds GUIDs in every context; a deserializer (which reads ids in the default context) says where the schema
    is until the default context has it too."""
    context = f".c{uuid.uuid4().hex[:8]}"
    schema = {**SCHEMA, "name": f"P{uuid.uuid4().hex[:8]}"}  # a GUID no other test registers
    ctx = ctx_with_headers(topic)
    data = AvroSerializer(client, schema, subject=f":{context}:{topic}-value", schema_id_header=True)(POINT, ctx)
    [(_, value)] = ctx.headers
    guid = str(uuid.UUID(bytes=value[1:17]))
    assert json.loads(client.get_schema_by_guid(guid).schema_str) == schema  # not the default context's id 1
    assert client.get_ids_by_guid(guid) == {context: 1}
    assert client.get_id_by_guid(guid, context) == 1

    async def through_async_client() -> tuple[dict[str, int], str]:
        async with AsyncRegistryClient(registry_url) as c:
            return await c.get_ids_by_guid(guid), (await c.get_schema_by_guid(guid)).schema_str

    assert asyncio.run(through_async_client()) == ({context: 1}, client.get_schema_by_guid(guid).schema_str)
    with pytest.raises(RegistryError) as err:
        client.get_id_by_guid(guid)
    assert (err.value.status, err.value.error_code) == (404, 40403)
    assert f"it has id 1 in context '{context}'" in err.value.message
    with pytest.raises(SerializationError, match=f"is not in context '.' \\(it has id 1 in context '{context}'\\)"):
        AvroDeserializer(client)(data, ctx)
    default_id = AvroSerializer(client, schema)(POINT, SerializationContext(topic, MessageField.VALUE))[1:5]
    assert client.get_ids_by_guid(guid) == {context: 1}  # cached ...
    assert AvroDeserializer(client)(data, ctx) == POINT  # ... and asked again for the default context
    assert client.get_id_by_guid(guid) == int.from_bytes(default_id, "big")
