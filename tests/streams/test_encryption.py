"""Field-level encryption reaches the streams runtime through serdes' ``AvroSerde``: a topology reads records
confluent-kafka's serializer encrypted, works on the plain values, and writes them encrypted again, which
confluent-kafka's deserializer decrypts."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer as CkAvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as CkAvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from serdes import AvroSerde, RegistryClient
from streams import StreamsBuilder, TopologyTestDriver
from tests.support.kms import LOCAL_KMS_SECRET, encrypt_rule, encryption_executors, register_encrypted
from tests.support.schemas import PAYMENT_AVRO

SECRET = {"secret": LOCAL_KMS_SECRET}


def test_a_topology_reads_and_writes_encrypted_fields(registry_url: str, names: Callable[[str], str]) -> None:
    executors = encryption_executors()
    rule = encrypt_rule(f"streams-{uuid.uuid4().hex[:8]}")
    source, sink = names("payments"), names("renumbered")
    for topic in (source, sink):
        register_encrypted(registry_url, f"{topic}-value", json.dumps(PAYMENT_AVRO), "AVRO", rule)
    ck = SchemaRegistryClient({"url": registry_url})
    conf = {"auto.register.schemas": False, "use.latest.version": True}
    ck_write = CkAvroSerializer(ck, None, conf=conf, rule_conf=SECRET, rule_registry=executors)
    ck_read = CkAvroDeserializer(ck, rule_conf=SECRET, rule_registry=executors)
    payments = [{"id": i, "card": f"4111-0000-0000-{i:04d}", "pin": f"pin-{i:04d}".encode()} for i in range(5)]

    with RegistryClient(registry_url) as client:
        serde = AvroSerde(client, PAYMENT_AVRO, reader=None, use_latest_version=True, rule_config=SECRET)
        b = StreamsBuilder()
        b.stream(source, key=str, value=serde).map_values(lambda p: {**p, "id": p["id"] + 100}).to(sink, value=serde)
        with TopologyTestDriver(b.build(), application_id=names("enc")) as d:
            inp = d.input_topic(source, key=str, value=bytes)
            for payment in payments:
                frame = ck_write(dict(payment), SerializationContext(source, MessageField.VALUE))
                assert payment["card"].encode() not in frame and payment["pin"] not in frame
                inp.pipe_input(str(payment["id"]), frame)
            out = d.output_topic(sink, key=str, value=bytes).read_key_values_to_map()

    assert sorted(out) == [str(p["id"]) for p in payments]
    for payment in payments:
        frame = out[str(payment["id"])]
        assert payment["card"].encode() not in frame and payment["pin"] not in frame  # written encrypted again
        decrypted = ck_read(frame, SerializationContext(sink, MessageField.VALUE))
        assert decrypted == {**payment, "id": payment["id"] + 100}
