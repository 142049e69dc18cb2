"""Client-side field-level encryption against a live registry, both ways with confluent-kafka's executor.

confluent-kafka's serializers with its ``FieldEncryptionExecutor`` / ``EncryptionExecutor`` and ``LocalKmsDriver``
are the peer: what they encrypt ours decrypts and the other way round, for Avro, JSON Schema and Protobuf
(``ENCRYPT`` on tagged fields), for ``ENCRYPT_PAYLOAD``, deterministic AES256_SIV (the same bytes on both
sides), DEK rotation (versioned ciphertexts) and shared KEKs (material the registry made). Then the failures:
a deleted KEK or DEK, a KMS that refuses (another secret), each an error naming the subject and field.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer as CkAvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as CkAvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer as CkJsonDeserializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer as CkJsonSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as CkProtobufDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as CkProtobufSerializer
from confluent_kafka.schema_registry.rules.encryption.encrypt_executor import (
    Clock,
)
from confluent_kafka.schema_registry.rules.encryption.localkms.local_driver import LocalKmsDriver
from google.protobuf import descriptor_pool, message_factory

from registry.schema_types.protoc import compile_files
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
    RuleError,
    SerializationContext,
)
from tests.support.kms import LOCAL_KMS_SECRET, encrypt_rule, encryption_executors, register_encrypted
from tests.support.registry_process import RegistryProcess
from tests.support.schemas import PAYMENT_AVRO, PAYMENT_JSON, PAYMENT_PROTO

SECRET = LOCAL_KMS_SECRET  # the one secret of every test running the executor (tests/support/kms.py)
RULES = {"secret": SECRET}
KEKS = "/dek-registry/v1/keks"
CARD = "4111-1111-1111-1111"
FORMATS = ["AVRO", "JSON", "PROTOBUF"]


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A registry of this module's own, with a local-kms secret of its own for shared KEKs."""
    rp = RegistryProcess.on_sqlite(tmp_path_factory.mktemp("encryption-registry"))
    rp.env = {"SCHEMAKIT_DEK_LOCAL_SECRET": "registry-side-secret"}
    rp.start()
    yield rp.url
    rp.stop()


@pytest.fixture(scope="module", autouse=True)
def local_kms() -> None:
    LocalKmsDriver.register()


@pytest.fixture(scope="module")
def payment_cls() -> Any:
    """The Protobuf ``fe.Payment`` message class, with its tags, in a private descriptor pool."""
    pool = descriptor_pool.DescriptorPool()
    for fd in compile_files(PAYMENT_PROTO, ()).file:
        if fd.name == "confluent/meta.proto" or not _known(pool, fd.name):
            pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("fe.Payment"))


def _known(pool: descriptor_pool.DescriptorPool, name: str) -> bool:
    try:
        pool.FindFileByName(name)
    except KeyError:
        return False
    return True


def _register(url: str, fmt: str, rule: dict[str, Any]) -> str:
    """A fresh topic whose value subject's schema carries ``rule``; the topic."""
    topic = f"fe-{uuid.uuid4().hex[:10]}"
    schema = PAYMENT_PROTO if fmt == "PROTOBUF" else json.dumps(PAYMENT_AVRO if fmt == "AVRO" else PAYMENT_JSON)
    register_encrypted(url, f"{topic}-value", schema, fmt, rule)
    return topic


def _record(fmt: str, payment_cls: Any) -> Any:
    """A fresh record (confluent-kafka's serializers encrypt the record they are given in place)."""
    if fmt == "PROTOBUF":
        return payment_cls(id=7, card=CARD, pin=b"1234")
    if fmt == "AVRO":
        return {"id": 7, "card": CARD, "pin": b"1234"}
    return {"id": 7, "card": CARD}


class Peer:
    """confluent-kafka's serializer and deserializer of one format, with the encryption executors."""

    def __init__(self, url: str, fmt: str, payment_cls: Any, clock: Clock | None = None) -> None:
        client = SchemaRegistryClient({"url": url})
        conf = {"auto.register.schemas": False, "use.latest.version": True}
        common: dict[str, Any] = {"rule_conf": RULES, "rule_registry": encryption_executors(clock)}
        if fmt == "AVRO":
            self.serialize: Callable = CkAvroSerializer(client, None, conf=conf, **common)
            self.deserialize: Callable = CkAvroDeserializer(client, **common)
        elif fmt == "JSON":
            self.serialize = CkJsonSerializer(None, client, conf=conf, **common)
            self.deserialize = CkJsonDeserializer(None, schema_registry_client=client, **common)
        else:
            pb = {"use.deprecated.format": False}
            self.serialize = CkProtobufSerializer(payment_cls, client, conf={**conf, **pb}, **common)
            self.deserialize = CkProtobufDeserializer(payment_cls, pb, client, **common)


def _ours(client: RegistryClient, fmt: str, payment_cls: Any, **conf: Any) -> tuple[Callable, Callable]:
    rules = {**RULES, **conf}
    if fmt == "AVRO":
        return (
            AvroSerializer(client, use_latest_version=True, rule_config=rules),
            AvroDeserializer(client, rule_config=rules),
        )
    if fmt == "JSON":
        return (
            JsonSchemaSerializer(client, use_latest_version=True, rule_config=rules),
            JsonSchemaDeserializer(client, rule_config=rules),
        )
    return (
        ProtobufSerializer(client, payment_cls, use_latest_version=True, rule_config=rules),
        ProtobufDeserializer(client, payment_cls, rule_config=rules),
    )


def _ctx(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


@pytest.mark.parametrize("fmt", FORMATS)
def test_confluent_kafka_encrypts_and_we_decrypt(url: str, fmt: str, payment_cls: Any) -> None:
    kek = f"kek-{uuid.uuid4().hex[:8]}"
    topic = _register(url, fmt, encrypt_rule(kek))
    record = _record(fmt, payment_cls)
    data = Peer(url, fmt, payment_cls).serialize(_record(fmt, payment_cls), _ctx(topic))
    assert CARD.encode() not in data and b"1234" not in data
    with RegistryClient(url) as client:
        _, read = _ours(client, fmt, payment_cls)
        assert read(data, _ctx(topic)) == record
    # the executor registered the KEK and version 1 of the subject's DEK, wrapped by its KMS
    dek = httpx.get(f"{url}{KEKS}/{kek}/deks/{topic}-value/versions/1").json()
    assert dek["algorithm"] == "AES256_GCM" and "keyMaterial" not in dek


@pytest.mark.parametrize("fmt", FORMATS)
def test_we_encrypt_and_confluent_kafka_decrypts(url: str, fmt: str, payment_cls: Any) -> None:
    kek = f"kek-{uuid.uuid4().hex[:8]}"
    topic = _register(url, fmt, encrypt_rule(kek))
    record = _record(fmt, payment_cls)
    with RegistryClient(url) as client:
        write, read = _ours(client, fmt, payment_cls)
        data = write(record, _ctx(topic))
        assert CARD.encode() not in data and b"1234" not in data
        assert read(data, _ctx(topic)) == record
    assert Peer(url, fmt, payment_cls).deserialize(data, _ctx(topic)) == record
    # ours registered the KEK as the executor does (not shared) and the DEK, wrapped with the local KMS
    kek_body = httpx.get(f"{url}{KEKS}/{kek}").json()
    assert (kek_body["kmsType"], kek_body["kmsKeyId"], kek_body["shared"]) == ("local-kms", "mykey", False)
    dek = httpx.get(f"{url}{KEKS}/{kek}/deks/{topic}-value/versions/1").json()
    assert dek["version"] == 1 and dek["encryptedKeyMaterial"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_deterministic_encryption_gives_confluent_kafkas_bytes(url: str, fmt: str, payment_cls: Any) -> None:
    kek = f"kek-{uuid.uuid4().hex[:8]}"
    topic = _register(url, fmt, encrypt_rule(kek, **{"encrypt.dek.algorithm": "AES256_SIV"}))
    record = _record(fmt, payment_cls)
    peer = Peer(url, fmt, payment_cls)
    theirs = peer.serialize(_record(fmt, payment_cls), _ctx(topic))
    with RegistryClient(url) as client:
        write, read = _ours(client, fmt, payment_cls)
        ours = write(record, _ctx(topic))
        assert ours == theirs  # AES-SIV under the same DEK: the same ciphertext, so the same frame
        assert ours == write(record, _ctx(topic))
        assert read(theirs, _ctx(topic)) == record
    assert CARD.encode() not in ours
    assert peer.deserialize(ours, _ctx(topic)) == record


@pytest.mark.parametrize("fmt", FORMATS)
def test_payload_encryption_both_ways(url: str, fmt: str, payment_cls: Any) -> None:
    kek = f"kek-{uuid.uuid4().hex[:8]}"
    topic = _register(url, fmt, encrypt_rule(kek, payload=True))
    record = _record(fmt, payment_cls)
    peer = Peer(url, fmt, payment_cls)
    theirs = peer.serialize(_record(fmt, payment_cls), _ctx(topic))
    with RegistryClient(url) as client:
        write, read = _ours(client, fmt, payment_cls)
        ours = write(record, _ctx(topic))
        assert ours[:5] == theirs[:5]  # the same framing; the rest is the payload's ciphertext
        assert CARD.encode() not in ours and CARD.encode() not in theirs
        assert read(theirs, _ctx(topic)) == record
        assert read(ours, _ctx(topic)) == record
    assert peer.deserialize(ours, _ctx(topic)) == record


class _Later(Clock):
    """confluent-kafka's clock, some days ahead."""

    def __init__(self, days: int) -> None:
        self.days = days

    def now(self) -> int:
        return super().now() + self.days * 24 * 60 * 60 * 1000


@pytest.mark.parametrize("fmt", ["AVRO", "JSON"])
def test_dek_rotation_reads_every_version_and_writes_with_the_latest(url: str, fmt: str, payment_cls: Any) -> None:
    kek = f"kek-{uuid.uuid4().hex[:8]}"
    topic = _register(url, fmt, encrypt_rule(kek, **{"encrypt.dek.expiry.days": "1"}))

    def record() -> dict[str, Any]:  # one encrypted field: each field's transform checks the expiry again
        return {"id": 7, "card": CARD, "pin": None} if fmt == "AVRO" else {"id": 7, "card": CARD}

    v1 = Peer(url, fmt, payment_cls).serialize(record(), _ctx(topic))
    v2 = Peer(url, fmt, payment_cls, _Later(2)).serialize(record(), _ctx(topic))  # v1 has expired: it rotates
    assert httpx.get(f"{url}{KEKS}/{kek}/deks/{topic}-value/versions").json() == [1, 2]
    with RegistryClient(url) as client:
        write, read = _ours(client, fmt, payment_cls)
        assert read(v1, _ctx(topic)) == record()
        assert read(v2, _ctx(topic)) == record()
        ours = write(record(), _ctx(topic))
        # our writer writes with the latest DEK (version 2, not expired) and says so in each ciphertext
        assert base64.b64decode(_field(fmt, ours))[:5] == b"\x00\x00\x00\x00\x02"
    assert Peer(url, fmt, payment_cls).deserialize(ours, _ctx(topic)) == record()

    # our own rotation: with the clock two days on, the writer makes version 3 (wrapped with our local KMS)
    with RegistryClient(url) as client:
        write, _ = _ours(client, fmt, payment_cls)
        write._rule_config.dek_registry().clock = _Later(2).now
        rotated = write(record(), _ctx(topic))
        assert base64.b64decode(_field(fmt, rotated))[:5] == b"\x00\x00\x00\x00\x03"
    assert httpx.get(f"{url}{KEKS}/{kek}/deks/{topic}-value/versions").json() == [1, 2, 3]
    assert Peer(url, fmt, payment_cls).deserialize(rotated, _ctx(topic)) == record()


def _field(fmt: str, frame: bytes) -> str:
    """The encrypted ``card`` (base64 text) of an Avro or JSON frame."""
    if fmt == "JSON":
        return str(json.loads(frame[5:])["card"])
    # Avro: id (zigzag varint 7 = 0x0e), then the string: its length (zigzag varint) and bytes
    body = frame[6:]
    length, shift, i = 0, 0, 0
    while True:
        b = body[i]
        length |= (b & 0x7F) << shift
        i += 1
        shift += 7
        if not b & 0x80:
            break
    return body[i : i + (length >> 1)].decode()


@pytest.mark.parametrize("fmt", FORMATS)
def test_shared_kek_material_made_by_the_registry(url: str, fmt: str, payment_cls: Any) -> None:
    kek = f"shared-{uuid.uuid4().hex[:8]}"
    created = httpx.post(
        url + KEKS, json={"name": kek, "kmsType": "local-kms", "kmsKeyId": "mykey", "shared": True}, timeout=30
    )
    assert created.status_code == 200, created.text
    topic = _register(url, fmt, encrypt_rule(kek))
    record = _record(fmt, payment_cls)
    with RegistryClient(url) as client:
        # no secret here: the DEK the registry generated comes back as keyMaterial
        write, read = _ours(client, fmt, payment_cls, secret="not-the-registry-secret")
        ours = write(record, _ctx(topic))
        assert CARD.encode() not in ours
        dek = httpx.get(f"{url}{KEKS}/{kek}/deks/{topic}-value").json()
        assert dek["keyMaterial"] and dek["version"] == 1
        theirs = Peer(url, fmt, payment_cls).serialize(_record(fmt, payment_cls), _ctx(topic))
        assert read(theirs, _ctx(topic)) == record
    assert Peer(url, fmt, payment_cls).deserialize(ours, _ctx(topic)) == record


def test_async_serdes_encrypt_and_decrypt(url: str) -> None:
    kek = f"kek-{uuid.uuid4().hex[:8]}"
    topic = _register(url, "AVRO", encrypt_rule(kek))
    record = {"id": 7, "card": CARD, "pin": None}

    async def go() -> bytes:
        async with AsyncRegistryClient(url) as client:
            data = await AsyncAvroSerializer(client, use_latest_version=True, rule_config=RULES)(record, _ctx(topic))
            assert await AsyncAvroDeserializer(client, rule_config=RULES)(data, _ctx(topic)) == record
            return data

    data = asyncio.run(go())
    assert CARD.encode() not in data
    assert Peer(url, "AVRO", None).deserialize(data, _ctx(topic)) == record


def test_a_deleted_kek_or_dek_or_another_secret_is_an_error_naming_the_field(url: str) -> None:
    kek = f"kek-{uuid.uuid4().hex[:8]}"
    topic = _register(url, "AVRO", encrypt_rule(kek))
    subject = f"{topic}-value"
    record = {"id": 7, "card": CARD, "pin": None}
    data = Peer(url, "AVRO", None).serialize(dict(record), _ctx(topic))

    with RegistryClient(url) as client:
        with pytest.raises(RuleError) as refused:
            AvroDeserializer(client, rule_config={"secret": "another-secret"})(data, _ctx(topic))
        message = str(refused.value)
        assert f"subject '{subject}'" in message and "field fe.Payment.card" in message
        assert f"KEK '{kek}'" in message and "could not unwrap" in message

        # a soft-deleted DEK still decrypts (as confluent-kafka reads with deleted=true); a hard-deleted one not
        assert httpx.delete(f"{url}{KEKS}/{kek}/deks/{subject}/versions/1").status_code == 204
        assert AvroDeserializer(client, rule_config=RULES)(data, _ctx(topic)) == record
        gone = httpx.delete(f"{url}{KEKS}/{kek}/deks/{subject}/versions/1", params={"permanent": "true"})
        assert gone.status_code == 204
        with pytest.raises(RuleError) as no_dek:
            AvroDeserializer(client, rule_config=RULES)(data, _ctx(topic))
        assert "no AES256_GCM DEK version 1" in str(no_dek.value) and "field fe.Payment.card" in str(no_dek.value)

        assert httpx.delete(f"{url}{KEKS}/{kek}").status_code == 204
        with pytest.raises(RuleError) as no_kek:
            AvroDeserializer(client, rule_config=RULES)(data, _ctx(topic))
        assert f"no KEK '{kek}'" in str(no_kek.value) and f"subject '{subject}'" in str(no_kek.value)


def test_an_unencryptable_field_type_is_named(url: str) -> None:
    kek = f"kek-{uuid.uuid4().hex[:8]}"
    schema = {"type": "record", "name": "Count", "fields": [{"name": "n", "type": "int", "confluent:tags": ["PII"]}]}
    topic = f"fe-{uuid.uuid4().hex[:10]}"
    register_encrypted(url, f"{topic}-value", json.dumps(schema), "AVRO", encrypt_rule(kek))
    with RegistryClient(url) as client, pytest.raises(RuleError) as err:
        AvroSerializer(client, use_latest_version=True, rule_config=RULES)({"n": 1}, _ctx(topic))
    assert "field Count.n" in str(err.value) and "INT field cannot be encrypted" in str(err.value)


def test_without_the_secret_the_error_says_how_to_give_it(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCAL_SECRET", raising=False)
    topic = _register(url, "AVRO", encrypt_rule(f"kek-{uuid.uuid4().hex[:8]}"))
    with RegistryClient(url) as client, pytest.raises(RuleError) as err:
        AvroSerializer(client, use_latest_version=True)({"id": 1, "card": CARD, "pin": None}, _ctx(topic))
    assert "local-kms has no secret" in str(err.value)


# JSON Schema shapes confluent-kafka's suite exercises: unions and compositions of $refs, $refs inside $refs
_DEFS_ONE_OF = {
    "type": "object",
    "properties": {
        "kind": {"type": "string"},
        "data": {"oneOf": [{"$ref": "#/$defs/Account"}, {"$ref": "#/$defs/Payment"}]},
    },
    "required": ["kind", "data"],
    "$defs": {
        "Account": {
            "type": "object",
            "properties": {
                "accountId": {"type": "string", "confluent:tags": ["PII"]},
                "method": {"$ref": "#/$defs/Method"},
            },
            "required": ["accountId"],
        },
        "Payment": {
            "type": "object",
            "properties": {"paymentId": {"type": "string", "confluent:tags": ["PII"]}, "amount": {"type": "number"}},
            "required": ["paymentId", "amount"],
        },
        "Method": {"type": "object", "properties": {"details": {"type": "string", "confluent:tags": ["PII"]}}},
    },
}
_DEFS_ANY_OF = {
    "type": "object",
    "properties": {"value": {"anyOf": [{"$ref": "#/$defs/Str"}, {"$ref": "#/$defs/Num"}]}},
    "$defs": {
        "Str": {"type": "object", "properties": {"strValue": {"type": "string", "confluent:tags": ["PII"]}}},
        "Num": {"type": "object", "properties": {"numValue": {"type": "number"}}},
    },
}
_DEFS_ALL_OF = {
    "type": "object",
    "properties": {"entity": {"allOf": [{"$ref": "#/$defs/Base"}, {"$ref": "#/$defs/Stamped"}]}},
    "$defs": {
        "Base": {"type": "object", "properties": {"id": {"type": "string", "confluent:tags": ["PII"]}}},
        "Stamped": {"type": "object", "properties": {"createdAt": {"type": "integer"}}},
    },
}
_DEFS_DEEP = {
    "type": "object",
    "properties": {"data": {"oneOf": [{"$ref": "#/$defs/L1"}]}},
    "$defs": {
        "L1": {"type": "object", "properties": {"l2": {"$ref": "#/$defs/L2"}}},
        "L2": {"type": "object", "properties": {"l3": {"$ref": "#/$defs/L3"}}},
        "L3": {"type": "object", "properties": {"secret": {"type": "string", "confluent:tags": ["PII"]}}},
    },
}
_SHAPES = {
    "oneOf-nested-refs": (
        _DEFS_ONE_OF,
        {"kind": "a", "data": {"accountId": "ACC123", "method": {"details": "1234-5678"}}},
        ["ACC123", "1234-5678"],
    ),
    "oneOf-second-branch": (_DEFS_ONE_OF, {"kind": "p", "data": {"paymentId": "PAY9", "amount": 3.5}}, ["PAY9"]),
    "anyOf": (_DEFS_ANY_OF, {"value": {"strValue": "sensitive-data"}}, ["sensitive-data"]),
    "allOf": (_DEFS_ALL_OF, {"entity": {"id": "entity-123", "createdAt": 1234567890}}, ["entity-123"]),
    "deep-refs": (_DEFS_DEEP, {"data": {"l2": {"l3": {"secret": "deep-secret"}}}}, ["deep-secret"]),
}


@pytest.mark.parametrize("shape", list(_SHAPES))
def test_json_unions_and_nested_refs_both_ways(url: str, shape: str) -> None:
    schema, record, secrets = _SHAPES[shape]
    topic = f"fe-{uuid.uuid4().hex[:10]}"
    register_encrypted(url, f"{topic}-value", json.dumps(schema), "JSON", encrypt_rule(f"k-{topic}"))
    peer = Peer(url, "JSON", None)
    theirs = peer.serialize(json.loads(json.dumps(record)), _ctx(topic))
    with RegistryClient(url) as client:
        write, read = _ours(client, "JSON", None)
        ours = write(json.loads(json.dumps(record)), _ctx(topic))
        for secret in secrets:
            assert secret.encode() not in ours and secret.encode() not in theirs
        assert read(theirs, _ctx(topic)) == record
        assert read(ours, _ctx(topic)) == record
    assert peer.deserialize(ours, _ctx(topic)) == record


def test_a_cloud_kms_without_its_drivers_names_the_extra(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the driver module cannot be imported, as where confluent-kafka's rules extra (Tink, boto3) is missing
    monkeypatch.setitem(sys.modules, "confluent_kafka.schema_registry.rules.encryption.awskms.aws_driver", None)
    kek = f"kek-{uuid.uuid4().hex[:8]}"
    topic = _register(url, "AVRO", encrypt_rule(kek, **{"encrypt.kms.type": "aws-kms", "encrypt.kms.key.id": "arn:k"}))
    with RegistryClient(url) as client, pytest.raises(RuleError) as err:
        AvroSerializer(client, use_latest_version=True)({"id": 1, "card": CARD, "pin": None}, _ctx(topic))
    message = str(err.value)
    assert "\n" not in message and "pip install 'schemakit[kms]'" in message and "aws-kms" in message


def test_fields_tagged_by_metadata_tags_are_encrypted_as_confluent_kafka_does(url: str) -> None:
    untagged = {**PAYMENT_AVRO, "fields": [{"name": "id", "type": "int"}, {"name": "card", "type": "string"}]}
    topic = f"fe-{uuid.uuid4().hex[:10]}"
    body = {
        "schema": json.dumps(untagged),
        "metadata": {"tags": {"fe.Payment.card": ["PII"]}},
        "ruleSet": {"domainRules": [encrypt_rule(f"k-{topic}")]},
    }
    assert httpx.post(f"{url}/subjects/{topic}-value/versions", json=body, timeout=30).status_code == 200
    record = {"id": 7, "card": CARD}
    peer = Peer(url, "AVRO", None)
    theirs = peer.serialize(dict(record), _ctx(topic))
    with RegistryClient(url) as client:
        write, read = _ours(client, "AVRO", None)
        ours = write(dict(record), _ctx(topic))
        assert CARD.encode() not in ours and CARD.encode() not in theirs
        assert read(theirs, _ctx(topic)) == record
    assert peer.deserialize(ours, _ctx(topic)) == record
