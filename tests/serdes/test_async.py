"""AsyncRegistryClient and the async serdes against the real registry: the same answers, errors and bytes as the
sync ones, interop with confluent-kafka's serializers both ways, failover, and many tasks at once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer as CkAvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as CkAvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer as CkJSONDeserializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer as CkJSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as CkProtobufDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as CkProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from serdes import (
    AsyncAvroDeserializer,
    AsyncAvroSerializer,
    AsyncJsonSchemaDeserializer,
    AsyncJsonSchemaSerializer,
    AsyncProtobufDeserializer,
    AsyncProtobufSerializer,
    AsyncRegistryClient,
    AvroSerializer,
    JsonSchemaSerializer,
    ProtobufSerializer,
    RegistryClient,
    RegistryError,
    RegistryUnavailableError,
    Schema,
    SerializationError,
    wire,
)
from tests.serdes.http_servers import dead_url
from tests.serdes.test_avro import CK_TOPIC
from tests.serdes.test_json import INVOICE, Invoice
from tests.serdes.test_protobuf import make_order
from tests.support.schemas import ORDER_AVRO, ORDER_JSON, ORDER_RECORD, TYPED_ORDER, Order

T = TypeVar("T")


def run(main: Callable[[AsyncRegistryClient], Awaitable[T]], url: str, **options: Any) -> T:
    """``main(client)`` on a fresh event loop with a fresh async client, closed afterwards."""

    async def go() -> T:
        async with AsyncRegistryClient(url, **options) as client:
            return await main(client)

    return asyncio.run(go())


def test_client_calls_answer_like_the_sync_client(registry_url: str, topic: str) -> None:
    v1 = Schema('{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}')
    v2 = Schema(
        '{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"string","default":""}]}'
    )

    async def main(c: AsyncRegistryClient) -> None:
        id1 = await c.register(topic, v1)
        assert (await c.register_full(topic, v2)).version == 2
        assert await c.get_versions(topic) == [1, 2]
        assert (await c.lookup(topic, v1)).version == 1
        assert (await c.get_version(topic, 1)).schema_id == id1
        assert json.loads((await c.get_schema(id1)).schema_str)["fields"] == [{"name": "a", "type": "int"}]
        assert topic in await c.get_subjects()
        assert await c.test_compatibility(topic, Schema('"string"')) is False
        with pytest.raises(RegistryError) as e:
            await c.lookup(topic, Schema('"boolean"'))
        assert (e.value.status, e.value.error_code) == (404, 40403)
        assert await c.delete_subject(topic) == [1, 2]

    run(main, registry_url)
    with RegistryClient(registry_url) as c:  # the sync client sees what the async one did
        assert c.get_subjects(deleted=True).count(topic) == 1 and topic not in c.get_subjects()


def test_client_fails_over_and_retries(scripted) -> None:
    busy = scripted((503, {"error_code": 50003, "message": "busy"}))
    ok = scripted((200, {"schema": '"string"'}))

    async def main(c: AsyncRegistryClient) -> str:
        assert await c.get_schema(1) == Schema('"string"')
        assert await c.get_schema(1) == Schema('"string"')  # cached: no request
        return c.preferred_url

    assert run(main, f"{dead_url()},{busy.url},{ok.url}", max_retries=0) == ok.url
    assert (len(busy.requests), len(ok.requests)) == (1, 1)

    async def unavailable(c: AsyncRegistryClient) -> None:
        with pytest.raises(RegistryUnavailableError) as e:
            await c.get_subjects()
        assert (e.value.status, e.value.error_code) == (503, 50003)

    run(unavailable, busy.url, max_retries=2, retry_backoff=0.001)
    assert len(busy.requests) == 4


def test_avro_bytes_equal_sync_and_confluent_kafka(registry_url, client, ck_client, value_ctx) -> None:
    sync_bytes = AvroSerializer(client, ORDER_AVRO)(ORDER_RECORD, value_ctx)
    theirs = CkAvroSerializer(ck_client, json.dumps(ORDER_AVRO), conf=CK_TOPIC)(ORDER_RECORD, value_ctx)

    async def main(c: AsyncRegistryClient) -> bytes | None:
        ours = await AsyncAvroSerializer(c, ORDER_AVRO)(ORDER_RECORD, value_ctx)
        assert ours == sync_bytes == theirs
        assert await AsyncAvroDeserializer(c)(theirs, value_ctx) == ORDER_RECORD
        assert await AsyncAvroDeserializer(c, Order)(theirs, value_ctx) == TYPED_ORDER
        assert await AsyncAvroDeserializer(c)(None, value_ctx) is None
        return await AsyncAvroSerializer(c, Order, subject=f"{value_ctx.topic}-typed")(TYPED_ORDER)

    typed = run(main, registry_url)
    ck_de = CkAvroDeserializer(ck_client, conf=CK_TOPIC)
    assert ck_de(sync_bytes, value_ctx) == ck_de(typed, value_ctx) == ORDER_RECORD


def test_protobuf_bytes_equal_sync_and_confluent_kafka(
    registry_url, client, ck_client, protos, value_ctx, require_type
) -> None:
    require_type("PROTOBUF")
    order = make_order(protos)
    theirs = CkProtobufSerializer(protos.order.Order, ck_client, conf={"subject.name.strategy.type": "TOPIC"})(
        order, value_ctx
    )

    async def main(c: AsyncRegistryClient) -> bytes:
        ours = await AsyncProtobufSerializer(c, protos.order.Order)(order, value_ctx)
        assert await AsyncProtobufDeserializer(c, protos.order.Order)(theirs, value_ctx) == order
        dynamic = await AsyncProtobufDeserializer(c)(ours, value_ctx)  # the class built from the registry
        assert dynamic.SerializeToString() == order.SerializeToString()
        return ours

    ours = run(main, registry_url)
    assert ours == theirs == ProtobufSerializer(client, protos.order.Order)(order, value_ctx)
    ck_de = CkProtobufDeserializer(protos.order.Order, conf={"use.deprecated.format": False})
    assert ck_de(ours, value_ctx) == order
    # the imported file was registered as a reference under its import path, once
    assert client.get_versions("sktest/common/address.proto") == [1]


def test_json_bytes_equal_sync_and_confluent_kafka(registry_url, client, ck_client, value_ctx, require_type) -> None:
    require_type("JSON")
    text = json.dumps(ORDER_JSON)
    theirs = CkJSONSerializer(text, ck_client, conf=CK_TOPIC)(ORDER_RECORD, value_ctx)

    async def main(c: AsyncRegistryClient) -> bytes:
        ours = await AsyncJsonSchemaSerializer(c, text)(ORDER_RECORD, value_ctx)
        assert await AsyncJsonSchemaDeserializer(c)(theirs, value_ctx) == ORDER_RECORD
        typed = await AsyncJsonSchemaSerializer(c, Invoice, subject=f"{value_ctx.topic}-invoice")(INVOICE)
        assert await AsyncJsonSchemaDeserializer(c, Invoice)(typed, value_ctx) == INVOICE
        with pytest.raises(SerializationError, match=r"at \$\.qty: 'three' is not of type 'integer'"):
            await AsyncJsonSchemaSerializer(c, text)(dict(ORDER_RECORD, qty="three"), value_ctx)
        return ours

    ours = run(main, registry_url)
    assert ours == theirs == JsonSchemaSerializer(client, text)(ORDER_RECORD, value_ctx)
    assert CkJSONDeserializer(text, conf=CK_TOPIC)(ours, value_ctx) == ORDER_RECORD


JsonAndProtobuf = tuple[Any, str, SerializationContext, SerializationContext]  # order, JSON Schema, contexts


def _json_and_protobuf(
    protos: Any, value_ctx: SerializationContext, require_type: Callable[[str], None]
) -> JsonAndProtobuf:
    """What the JSON/Protobuf serializer tests share: a Protobuf order, the JSON Schema text, and a context for
    each (the JSON one on a topic of its own, so their subjects differ)."""
    require_type("PROTOBUF")
    require_type("JSON")
    return (
        make_order(protos),
        json.dumps(ORDER_JSON),
        SerializationContext(value_ctx.topic + "-json", MessageField.VALUE, []),
        SerializationContext(value_ctx.topic, MessageField.VALUE, []),
    )


def test_async_json_and_protobuf_serializers_off_their_fast_path(
    registry_url, client, protos, value_ctx, require_type
) -> None:
    """The JSON/Protobuf serializers have a fast path for their common case (``_serialize``, shared by sync and
    async): None, a wrong type and header framing take the general path and give what the sync serializers give."""
    order, text, json_ctx, proto_ctx = _json_and_protobuf(protos, value_ctx, require_type)

    async def main(c: AsyncRegistryClient) -> tuple[bytes | None, bytes | None]:
        proto = AsyncProtobufSerializer(c, protos.order.Order)
        assert await proto(None, value_ctx) is None
        with pytest.raises(SerializationError, match=r"expected a sktest\.shop\.Order message, got dict"):
            await proto({"id": "o-1"}, value_ctx)  # type: ignore[arg-type]
        assert await AsyncJsonSchemaSerializer(c, text)(None, json_ctx) is None
        return (
            await AsyncProtobufSerializer(c, protos.order.Order, schema_id_header=True)(order, proto_ctx),
            await AsyncJsonSchemaSerializer(c, text, schema_id_header=True)(ORDER_RECORD, json_ctx),
        )

    proto_data, json_data = run(main, registry_url)
    assert proto_data == order.SerializeToString()  # the id went to the header, not the payload
    sync_proto_ctx = SerializationContext(value_ctx.topic, MessageField.VALUE, [])
    sync_json_ctx = SerializationContext(value_ctx.topic + "-json", MessageField.VALUE, [])
    assert proto_data == ProtobufSerializer(client, protos.order.Order, schema_id_header=True)(order, sync_proto_ctx)
    assert json_data == JsonSchemaSerializer(client, text, schema_id_header=True)(ORDER_RECORD, sync_json_ctx)
    assert proto_ctx.headers == sync_proto_ctx.headers and len(proto_ctx.headers) == 1
    assert json_ctx.headers == sync_json_ctx.headers and len(json_ctx.headers) == 1


def test_many_tasks_share_a_new_serializer(registry_url: str, client, value_ctx) -> None:
    async def main(c: AsyncRegistryClient) -> list[bytes | None]:
        ser = AsyncAvroSerializer(c, ORDER_AVRO)
        return await asyncio.gather(*(ser(dict(ORDER_RECORD, qty=i), value_ctx) for i in range(50)))

    frames = run(main, registry_url)
    schema_id = client.get_latest_version(f"{value_ctx.topic}-value").schema_id
    assert all(f is not None and f[:5] == wire.prefix(schema_id) for f in frames)
    assert client.get_versions(f"{value_ctx.topic}-value") == [1]
    from serdes import AvroDeserializer

    assert [AvroDeserializer(client)(f, value_ctx)["qty"] for f in frames] == list(range(50))


def test_bad_frames_and_unknown_ids(registry_url: str, value_ctx) -> None:
    async def main(c: AsyncRegistryClient) -> None:
        de = AsyncAvroDeserializer(c)
        with pytest.raises(SerializationError, match=r"unknown magic byte 0x07 .*payload offset 0"):
            await de(b"\x07\x00\x00\x00\x01x", value_ctx)
        with pytest.raises(SerializationError, match=r"schema id 987654 is not known to the registry"):
            await de(wire.prefix(987654) + b"\x02", value_ctx)

    run(main, registry_url)


def test_use_latest_version_on_both_sides(registry_url: str, client, value_ctx) -> None:
    subject = f"{value_ctx.topic}-value"
    v1 = {"type": "record", "name": "P", "fields": [{"name": "name", "type": "string"}]}
    v2 = {
        "type": "record",
        "name": "P",
        "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int", "default": -1}],
    }
    AvroSerializer(client, v1)({"name": "a"}, value_ctx)
    id2 = client.register(subject, Schema(json.dumps(v2)))

    async def main(c: AsyncRegistryClient) -> None:
        data = await AsyncAvroSerializer(c, use_latest_version=True)({"name": "b", "age": 3}, value_ctx)
        assert data is not None and data[:5] == wire.prefix(id2)
        old = await AsyncAvroSerializer(c, v1, auto_register=False)({"name": "c"}, value_ctx)
        reader = AsyncAvroDeserializer(c, use_latest_version=True)
        assert await reader(old, value_ctx) == {"name": "c", "age": -1}
        assert await reader(data, value_ctx) == {"name": "b", "age": 3}

    run(main, registry_url)


def test_sync_and_async_clients_are_not_interchangeable(registry_url: str) -> None:
    with RegistryClient(registry_url) as sync_client:
        with pytest.raises(TypeError, match="AsyncAvroSerializer needs an AsyncRegistryClient, not RegistryClient"):
            AsyncAvroSerializer(sync_client, ORDER_AVRO)
        with pytest.raises(TypeError, match="AsyncProtobufDeserializer needs an AsyncRegistryClient"):
            AsyncProtobufDeserializer(sync_client)

    async def main(c: AsyncRegistryClient) -> None:
        with pytest.raises(TypeError, match=r"AvroSerializer needs a RegistryClient \(not an async one\)"):
            AvroSerializer(c, ORDER_AVRO)  # type: ignore[arg-type]

    run(main, registry_url)


def test_async_json_and_protobuf_serializers_on_their_fast_path_behave_as_coroutines(
    registry_url, client, protos, value_ctx, require_type
) -> None:
    """Their common case awaits nothing, yet they are coroutine functions: tasks, gather and
    ``iscoroutinefunction`` see coroutines, and an invalid record raises when awaited, not when called."""
    order, text, json_ctx, proto_ctx = _json_and_protobuf(protos, value_ctx, require_type)

    async def main(c: AsyncRegistryClient) -> tuple[list[bytes | None], list[bytes | None]]:
        proto, json_ser = AsyncProtobufSerializer(c, protos.order.Order), AsyncJsonSchemaSerializer(c, text)
        assert asyncio.iscoroutinefunction(proto.__call__) and asyncio.iscoroutinefunction(json_ser.__call__)
        first = [await proto(order, proto_ctx), await json_ser(ORDER_RECORD, json_ctx)]  # plans now cached
        again = [
            await asyncio.create_task(proto(order, proto_ctx)),
            *await asyncio.gather(json_ser(ORDER_RECORD, json_ctx), json_ser(dict(ORDER_RECORD, qty=7), json_ctx)),
        ]
        pending = json_ser(dict(ORDER_RECORD, qty="three"), json_ctx)  # nothing raised yet
        with pytest.raises(SerializationError, match=r"at \$\.qty: 'three' is not of type 'integer'"):
            await pending
        return first, again

    first, again = run(main, registry_url)
    assert again[:2] == first
    assert first[0] == ProtobufSerializer(client, protos.order.Order)(order, proto_ctx)
    sync_json = JsonSchemaSerializer(client, text)
    assert first[1] == sync_json(ORDER_RECORD, json_ctx)
    assert again[2] == sync_json(dict(ORDER_RECORD, qty=7), json_ctx)
