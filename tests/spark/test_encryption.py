"""Encrypted subjects in Spark: the Python engine decrypts (through serdes' deserializers, with ``rule_config``),
the JVM engine says plainly that it does not, and ``engine="auto"`` picks Python for them."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer as CkAvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from serdes import JsonSchemaSerializer, RegistryClient
from serdes.spark import from_registry
from tests.support.kms import LOCAL_KMS_SECRET, encrypt_rule, encryption_executors, register_encrypted
from tests.support.schemas import PAYMENT_AVRO, PAYMENT_JSON

SECRET = {"secret": LOCAL_KMS_SECRET}
ROWS = [{"id": i, "card": f"4111-0000-0000-{i:04d}", "pin": None if i % 2 else f"p{i:04d}".encode()} for i in range(6)]


def _register(url: str, subject: str, schema: Any, schema_type: str, rule_type: str = "ENCRYPT") -> None:
    rule = encrypt_rule(f"spark-{uuid.uuid4().hex[:8]}", payload=rule_type == "ENCRYPT_PAYLOAD")
    register_encrypted(url, subject, json.dumps(schema), schema_type, rule)


def _ck_frames(url: str, subject: str) -> list[bytes]:
    """The rows encrypted by confluent-kafka's serializer and executors."""
    executors = encryption_executors()
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
    _register(registry_url, subject, PAYMENT_AVRO, "AVRO", rule_type)
    frames = _ck_frames(registry_url, subject)
    assert all(row["card"].encode() not in frame for row, frame in zip(ROWS, frames, strict=True))
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
    _register(registry_url, subject, PAYMENT_JSON, "JSON")
    rows = [{"id": r["id"], "card": r["card"]} for r in ROWS]
    with RegistryClient(registry_url) as client:
        write = JsonSchemaSerializer(client, subject=subject, use_latest_version=True, rule_config=SECRET)
        frames = [write(dict(r)) for r in rows]
    assert all(r["card"].encode() not in f for r, f in zip(rows, frames, strict=True))
    df = spark.createDataFrame([(f,) for f in frames], "value binary")
    decoded = df.select(from_registry("value", registry_url, subject=subject, rule_config=SECRET).alias("a"))
    assert sorted((r.a.asDict() for r in decoded.collect()), key=lambda a: a["id"]) == rows


def test_the_jvm_engine_says_it_does_not_decrypt(spark: Any, registry_url: str, subject: str) -> None:
    _register(registry_url, subject, PAYMENT_AVRO, "AVRO")
    with pytest.raises(ValueError, match="the JVM engine does not decrypt"):
        from_registry("value", registry_url, subject=subject, engine="jvm", rule_config=SECRET)
