"""Encrypted subjects in Spark: the Python engine decrypts (through serdes' deserializers, with ``rule_config``),
the JVM engine says plainly that it does not, and ``engine="auto"`` picks Python for them."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer as CkAvroSerializer
from confluent_kafka.schema_registry.rule_registry import RuleRegistry
from confluent_kafka.schema_registry.rules.encryption.encrypt_executor import (
    EncryptionExecutor,
    FieldEncryptionExecutor,
)
from confluent_kafka.schema_registry.rules.encryption.localkms.local_driver import LocalKmsDriver
from confluent_kafka.serialization import MessageField, SerializationContext

from serdes import JsonSchemaSerializer, RegistryClient
from serdes.spark import from_registry
from tests.support.kms import LOCAL_KMS_SECRET

SECRET = {"secret": LOCAL_KMS_SECRET}
AVRO = {
    "type": "record",
    "name": "Account",
    "namespace": "fe.spark",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "iban", "type": "string", "confluent:tags": ["PII"]},
        {"name": "note", "type": ["null", "string"], "default": None, "confluent:tags": ["PII"]},
    ],
}
JSON_SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "iban": {"type": "string", "confluent:tags": ["PII"]}},
}
ROWS = [{"id": i, "iban": f"DE00 0000 {i:04d}", "note": None if i % 2 else f"n{i}"} for i in range(6)]


def _register(url: str, subject: str, schema: Any, schema_type: str, rule_type: str = "ENCRYPT") -> None:
    params = {"encrypt.kek.name": f"spark-{uuid.uuid4().hex[:8]}", "encrypt.kms.type": "local-kms"}
    rule = {"name": "enc", "kind": "TRANSFORM", "mode": "WRITEREAD", "type": rule_type, "tags": ["PII"]}
    rule["params"] = {**params, "encrypt.kms.key.id": "k"}
    where = "encodingRules" if rule_type == "ENCRYPT_PAYLOAD" else "domainRules"
    body = {"schema": json.dumps(schema), "schemaType": schema_type, "ruleSet": {where: [rule]}}
    assert httpx.post(f"{url}/subjects/{subject}/versions", json=body, timeout=30).status_code == 200


def _ck_frames(url: str, subject: str) -> list[bytes]:
    """The rows encrypted by confluent-kafka's serializer and executors."""
    LocalKmsDriver.register()
    executors = RuleRegistry()
    executors.register_executor(FieldEncryptionExecutor())
    executors.register_executor(EncryptionExecutor())
    conf = {"auto.register.schemas": False, "use.latest.version": True}
    write = CkAvroSerializer(
        SchemaRegistryClient({"url": url}), None, conf=conf, rule_conf=SECRET, rule_registry=executors
    )
    ctx = SerializationContext(subject.removesuffix("-value"), MessageField.VALUE)
    return [write(dict(row), ctx) for row in ROWS]


@pytest.mark.parametrize("rule_type", ["ENCRYPT", "ENCRYPT_PAYLOAD"])
def test_the_python_engine_decrypts_what_confluent_kafka_encrypted(
    spark: Any, registry_url: str, subject: str, rule_type: str
) -> None:
    _register(registry_url, subject, AVRO, "AVRO", rule_type)
    frames = _ck_frames(registry_url, subject)
    assert all(row["iban"].encode() not in frame for row, frame in zip(ROWS, frames, strict=True))
    df = spark.createDataFrame([(f,) for f in frames], "value binary")
    # engine="auto" picks the Python engine for an encrypted subject (the JVM engine would give ciphertext)
    decoded = df.select(from_registry("value", registry_url, subject=subject, rule_config=SECRET).alias("a"))
    assert "ArrowEvalPython" in decoded._jdf.queryExecution().executedPlan().toString()
    got = sorted((r.a.asDict() for r in decoded.collect()), key=lambda a: a["id"])
    assert got == ROWS

    # without the secret the rows cannot be decrypted: FAILFAST names the field and why
    failing = df.select(from_registry("value", registry_url, subject=subject, mode="FAILFAST", engine="python"))
    with pytest.raises(Exception, match="local-kms has no secret"):
        failing.collect()


def test_the_python_engine_decrypts_json(spark: Any, registry_url: str, subject: str) -> None:
    _register(registry_url, subject, JSON_SCHEMA, "JSON")
    rows = [{"id": r["id"], "iban": r["iban"]} for r in ROWS]
    with RegistryClient(registry_url) as client:
        write = JsonSchemaSerializer(client, subject=subject, use_latest_version=True, rule_config=SECRET)
        frames = [write(dict(r)) for r in rows]
    assert all(r["iban"].encode() not in f for r, f in zip(rows, frames, strict=True))
    df = spark.createDataFrame([(f,) for f in frames], "value binary")
    decoded = df.select(from_registry("value", registry_url, subject=subject, rule_config=SECRET).alias("a"))
    assert sorted((r.a.asDict() for r in decoded.collect()), key=lambda a: a["id"]) == rows


def test_the_jvm_engine_says_it_does_not_decrypt(spark: Any, registry_url: str, subject: str) -> None:
    _register(registry_url, subject, AVRO, "AVRO")
    with pytest.raises(ValueError, match="the JVM engine does not decrypt"):
        from_registry("value", registry_url, subject=subject, engine="jvm", rule_config=SECRET)
