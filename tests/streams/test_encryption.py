"""Field-level encryption reaches the streams runtime through serdes' ``AvroSerde``: a topology reads records
confluent-kafka's serializer encrypted, works on the plain values, and writes them encrypted again, which
confluent-kafka's deserializer decrypts."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

import httpx
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer as CkAvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as CkAvroSerializer
from confluent_kafka.schema_registry.rule_registry import RuleRegistry
from confluent_kafka.schema_registry.rules.encryption.encrypt_executor import FieldEncryptionExecutor
from confluent_kafka.schema_registry.rules.encryption.localkms.local_driver import LocalKmsDriver
from confluent_kafka.serialization import MessageField, SerializationContext

from serdes import AvroSerde, RegistryClient
from streams import StreamsBuilder, TopologyTestDriver
from tests.support.kms import LOCAL_KMS_SECRET

SECRET = {"secret": LOCAL_KMS_SECRET}
SCHEMA = {
    "type": "record",
    "name": "Card",
    "namespace": "fe.streams",
    "fields": [
        {"name": "owner", "type": "string"},
        {"name": "number", "type": "string", "confluent:tags": ["PII"]},
        {"name": "limit", "type": "int"},
    ],
}


def _encrypting(url: str, topic: str, kek: str) -> None:
    params = {"encrypt.kek.name": kek, "encrypt.kms.type": "local-kms", "encrypt.kms.key.id": "k"}
    rule = {"name": "enc", "kind": "TRANSFORM", "mode": "WRITEREAD", "type": "ENCRYPT", "tags": ["PII"]}
    body = {"schema": json.dumps(SCHEMA), "ruleSet": {"domainRules": [{**rule, "params": params}]}}
    assert httpx.post(f"{url}/subjects/{topic}-value/versions", json=body, timeout=30).status_code == 200


def test_a_topology_reads_and_writes_encrypted_fields(registry_url: str, names: Callable[[str], str]) -> None:
    LocalKmsDriver.register()
    executors = RuleRegistry()
    executors.register_executor(FieldEncryptionExecutor())
    kek = f"streams-{uuid.uuid4().hex[:8]}"
    source, sink = names("cards"), names("raised")
    for topic in (source, sink):
        _encrypting(registry_url, topic, kek)
    ck = SchemaRegistryClient({"url": registry_url})
    conf = {"auto.register.schemas": False, "use.latest.version": True}
    ck_write = CkAvroSerializer(ck, None, conf=conf, rule_conf=SECRET, rule_registry=executors)
    ck_read = CkAvroDeserializer(ck, rule_conf=SECRET, rule_registry=executors)
    cards = [{"owner": f"o{i}", "number": f"4111-0000-0000-{i:04d}", "limit": 100 * i} for i in range(5)]

    with RegistryClient(registry_url) as client:
        serde = AvroSerde(client, SCHEMA, reader=None, use_latest_version=True, rule_config=SECRET)
        b = StreamsBuilder()
        b.stream(source, key=str, value=serde).map_values(lambda c: {**c, "limit": c["limit"] * 2}).to(
            sink, value=serde
        )
        with TopologyTestDriver(b.build(), application_id=names("enc")) as d:
            inp = d.input_topic(source, key=str, value=bytes)
            for card in cards:
                frame = ck_write(dict(card), SerializationContext(source, MessageField.VALUE))
                assert card["number"].encode() not in frame
                inp.pipe_input(card["owner"], frame)
            out = d.output_topic(sink, key=str, value=bytes).read_key_values_to_map()

    assert sorted(out) == [c["owner"] for c in cards]
    for card in cards:
        frame = out[card["owner"]]
        assert card["number"].encode() not in frame  # written encrypted again
        decrypted = ck_read(frame, SerializationContext(sink, MessageField.VALUE))
        assert decrypted == {**card, "limit": card["limit"] * 2}
