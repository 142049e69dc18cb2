"""The DEK registry as confluent-kafka's client-side field-level encryption uses it, and across restarts.

confluent-kafka's ``AvroSerializer`` with its ``FieldEncryptionExecutor`` and ``LocalKmsDriver``, pointed at
our registry, encrypts a tagged field (registering the KEK and the DEK here) and its deserializer decrypts it;
with a shared KEK the executor takes the DEK material the registry generated. A restart replays
``_dek_registry_keys`` to the same KEKs and DEKs, soft deletes included.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable

import httpx
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.rule_registry import RuleRegistry
from confluent_kafka.schema_registry.rules.encryption.encrypt_executor import FieldEncryptionExecutor
from confluent_kafka.schema_registry.rules.encryption.localkms.local_driver import LocalKmsDriver
from confluent_kafka.schema_registry.schema_registry_client import Rule, RuleKind, RuleMode, RuleParams, RuleSet
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.support.kms import LOCAL_KMS_SECRET
from tests.support.registry_process import RegistryProcess

KEKS = "/dek-registry/v1/keks"
SECRET = LOCAL_KMS_SECRET
SCHEMA = {
    "type": "record",
    "name": "Payment",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "card", "type": "string", "confluent:tags": ["PII"]},
    ],
}


@pytest.fixture(scope="module", autouse=True)
def local_kms() -> None:
    LocalKmsDriver.register()  # confluent-kafka's driver list is global: registering it twice does no harm


def _encrypting_subject(url: str, kek: str, *, shared: bool = False) -> str:
    """A subject whose schema encrypts ``card`` with ``kek`` (created by the executor unless ``shared``)."""
    subject = f"payments-{uuid.uuid4().hex[:8]}-value"
    params = {"encrypt.kek.name": kek, "encrypt.kms.type": "local-kms", "encrypt.kms.key.id": "mykey"}
    rule = Rule(
        "encrypt-pii", "", RuleKind.TRANSFORM, RuleMode.WRITEREAD, "ENCRYPT", ["PII"], RuleParams(params),
        None, None, "ERROR,NONE", False,
    )  # fmt: skip
    SchemaRegistryClient({"url": url}).register_schema(
        subject, Schema(json.dumps(SCHEMA), "AVRO", [], None, RuleSet(None, [rule]))
    )
    return subject


def _executors() -> RuleRegistry:
    rules = RuleRegistry()
    rules.register_executor(FieldEncryptionExecutor())
    return rules


def _round_trip(url: str, subject: str, rule_config: dict[str, str]) -> tuple[bytes, dict[str, object]]:
    ctx = SerializationContext(subject.removesuffix("-value"), MessageField.VALUE)
    client = SchemaRegistryClient({"url": url})
    writer = AvroSerializer(
        client,
        None,
        conf={"auto.register.schemas": False, "use.latest.version": True},
        rule_conf=rule_config,
        rule_registry=_executors(),
    )
    payload = writer({"id": 7, "card": "4111-1111-1111-1111"}, ctx)
    reader = AvroDeserializer(SchemaRegistryClient({"url": url}), rule_conf=rule_config, rule_registry=_executors())
    return payload, reader(payload, ctx)


def test_confluent_kafka_field_encryption_registers_and_reads_keys_here(module_registry: RegistryProcess) -> None:
    url = module_registry.url
    kek = f"kek_{uuid.uuid4().hex[:8]}"
    subject = _encrypting_subject(url, kek)
    payload, decoded = _round_trip(url, subject, {"secret": SECRET})
    assert b"4111" not in payload
    assert decoded == {"id": 7, "card": "4111-1111-1111-1111"}
    # the executor created the KEK (not shared) and version 1 of the subject's DEK, wrapped by its own LocalKms
    got = httpx.get(f"{url}{KEKS}/{kek}").json()
    assert (got["kmsType"], got["kmsKeyId"], got["shared"]) == ("local-kms", "mykey", False)
    dek = httpx.get(f"{url}{KEKS}/{kek}/deks/{subject}/versions/1").json()
    assert dek["algorithm"] == "AES256_GCM" and "keyMaterial" not in dek


def test_confluent_kafka_field_encryption_with_a_shared_kek(start_registry: Callable[..., RegistryProcess]) -> None:
    rp = start_registry(None, env={"SCHEMAKIT_DEK_LOCAL_SECRET": SECRET})
    kek = f"shared_{uuid.uuid4().hex[:8]}"
    created = httpx.post(rp.url + KEKS, json={"name": kek, "kmsType": "local-kms", "kmsKeyId": "mykey", "shared": True})
    assert created.status_code == 200, created.text
    subject = _encrypting_subject(rp.url, kek)
    # no secret on the client side: the executor must use the material the registry generated and unwrapped
    payload, decoded = _round_trip(rp.url, subject, {"secret": "not-the-registry-secret"})
    assert b"4111" not in payload
    assert decoded == {"id": 7, "card": "4111-1111-1111-1111"}
    dek = httpx.get(f"{rp.url}{KEKS}/{kek}/deks/{subject}").json()
    assert len(base64.b64decode(dek["keyMaterial"])) == 34  # a serialized Tink AesGcmKey of 32 bytes


def test_restart_replays_keks_and_deks(start_registry: Callable[..., RegistryProcess]) -> None:
    rp = start_registry(None, env={"SCHEMAKIT_DEK_LOCAL_SECRET": SECRET})
    with httpx.Client(base_url=rp.url, timeout=30) as api:
        assert api.post(KEKS, json={"name": "plain", "kmsType": "local-kms", "kmsKeyId": "k", "doc": "d"}).is_success
        assert api.post(
            KEKS, json={"name": "shared", "kmsType": "local-kms", "kmsKeyId": "k", "shared": True}
        ).is_success
        assert api.post(KEKS, json={"name": "gone", "kmsType": "local-kms", "kmsKeyId": "k"}).is_success
        material = base64.b64encode(b"wrapped-elsewhere").decode()
        for v in (1, 2, 3):
            assert api.post(f"{KEKS}/plain/deks/s1", json={"version": v, "encryptedKeyMaterial": material}).is_success
        assert api.post(f"{KEKS}/shared/deks/s2", json={"algorithm": "AES256_SIV"}).is_success
        assert api.delete(f"{KEKS}/plain/deks/s1/versions/2").status_code == 204
        assert api.delete(f"{KEKS}/gone").status_code == 204
        assert api.delete(f"{KEKS}/gone", params={"permanent": "true"}).status_code == 204
        assert api.put(f"{KEKS}/plain", json={"doc": "changed"}).is_success
        reads = [
            KEKS,
            f"{KEKS}?deleted=true",
            f"{KEKS}/plain",
            f"{KEKS}/shared",
            f"{KEKS}/plain/deks/s1/versions?deleted=true",
            f"{KEKS}/plain/deks/s1/versions",
            f"{KEKS}/plain/deks/s1/versions/2?deleted=true",
            f"{KEKS}/shared/deks/s2?algorithm=AES256_SIV",
        ]
        before = [api.get(path).json() for path in reads]
    rp.restart()
    with httpx.Client(base_url=rp.url, timeout=30) as api:
        after = [api.get(path).json() for path in reads]
        assert after == before
        assert after[0] == ["plain", "shared"] and after[5] == [1, 3]
        assert api.get(f"{KEKS}/gone", params={"deleted": "true"}).json()["error_code"] == 40470
        metrics = api.get("/metrics").text
        assert 'schemakit_registry_dek_keys{deleted="false",type="KEK"} 2.0' in metrics
        assert 'schemakit_registry_dek_keys{deleted="true",type="DEK"} 1.0' in metrics
        assert 'schemakit_registry_dek_keys{deleted="false",type="DEK"} 3.0' in metrics
        # versions go on from where they were
        assert api.post(f"{KEKS}/plain/deks/s1", json={"version": 2, "encryptedKeyMaterial": "eA=="}).status_code == 409
    last_start = rp.log_file.read_text().split("schemakit registry")[-1]
    assert "records of _dek_registry_keys" in last_start and "2 KEKs, 4 DEKs" in last_start
