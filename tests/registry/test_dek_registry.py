"""The DEK registry (``/dek-registry/v1``) against a live server: every endpoint, its statuses and Confluent's
error codes (40470, 40471, 40472, 40971, 42202, 42271, 42272), shared KEKs whose key material the registry
generates through local-kms, and confluent-kafka's own ``DekRegistryClient`` and ``LocalKmsClient`` as peers."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.registry_process import RegistryProcess

SECRET = "dek-registry-test-secret"
KEKS = "/dek-registry/v1/keks"
MATERIAL = base64.b64encode(b"\x01" * 60).decode()  # wrapped material of a KEK that is not shared: opaque here


@pytest.fixture(scope="module")
def dek_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryProcess]:
    rp = RegistryProcess.on_sqlite(tmp_path_factory.mktemp("dek-registry"))
    rp.env = {"SCHEMAKIT_DEK_LOCAL_SECRET": SECRET}
    rp.start()
    yield rp
    rp.stop()


@pytest.fixture
def api(dek_registry: RegistryProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=dek_registry.url, timeout=30) as c:
        yield c


def _name(prefix: str = "kek") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def _error(resp: httpx.Response, status: int, code: int, message: str | None = None) -> None:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["error_code"] == code, body
    if message is not None:
        assert body["message"] == message


def _kek(api: httpx.Client, name: str, **fields: Any) -> dict[str, Any]:
    body = {"name": name, "kmsType": "local-kms", "kmsKeyId": "key-1", **fields}
    resp = api.post(KEKS, json=body)
    assert resp.status_code == 200, resp.text
    return resp.json()


def _dek(api: httpx.Client, kek: str, subject: str, **fields: Any) -> dict[str, Any]:
    resp = api.post(f"{KEKS}/{kek}/deks/{subject}", json={"subject": subject, **fields})
    assert resp.status_code == 200, resp.text
    return resp.json()


# ---- KEKs ---------------------------------------------------------------------------------------------------------


def test_kek_create_get_list_and_its_fields(api: httpx.Client) -> None:
    name = _name()
    created = _kek(api, name, kmsProps={"b": "2", "a": "1"}, doc="payments")
    assert set(created) == {"name", "kmsType", "kmsKeyId", "kmsProps", "doc", "shared", "ts"}
    assert created["name"] == name and created["kmsType"] == "local-kms" and created["kmsKeyId"] == "key-1"
    assert created["kmsProps"] == {"a": "1", "b": "2"} and created["doc"] == "payments" and created["shared"] is False
    assert isinstance(created["ts"], int) and created["ts"] > 0
    assert api.get(f"{KEKS}/{name}").json() == created
    assert name in api.get(KEKS).json()


def test_kek_create_errors(api: httpx.Client) -> None:
    name = _name()
    _kek(api, name)
    _error(
        api.post(KEKS, json={"name": name, "kmsType": "local-kms", "kmsKeyId": "key-1"}),
        409,
        40971,
        f"Key '{name}' already exists; use a different value",
    )
    _error(api.post(KEKS, json={"name": name, "kmsType": "local-kms", "kmsKeyId": "other"}), 409, 40971)
    for bad in ("", "1abc", "a b", "x" * 65, "é!"):
        _error(
            api.post(KEKS, json={"name": bad, "kmsType": "local-kms", "kmsKeyId": "k"}),
            422,
            42271,
            "Invalid or missing value for field 'name' of key",
        )
    _error(
        api.post(KEKS, json={"name": _name(), "kmsType": "local-kms"}),
        422,
        42271,
        "Invalid or missing value for field 'kmsKeyId' of key",
    )
    _error(
        api.post(KEKS, json={"name": _name(), "kmsKeyId": "k"}),
        422,
        42271,
        "Invalid or missing value for field 'kmsType' of key",
    )
    _error(api.post(KEKS, json={"name": _name(), "kmsType": "local-kms", "kmsKeyId": "k", "shared": "yes"}), 422, 422)
    _error(api.post(KEKS, content=b"", headers={"content-type": "application/json"}), 400, 400)


def test_kek_kms_type_is_normalized_as_confluent_does(api: httpx.Client) -> None:
    assert _kek(api, _name(), kmsType="AWS")["kmsType"] == "aws-kms"
    assert _kek(api, _name(), kmsType="gcp")["kmsType"] == "gcp-kms"


def test_kek_get_unknown_and_invalid(api: httpx.Client) -> None:
    _error(api.get(f"{KEKS}/nosuch_{uuid.uuid4().hex[:6]}"), 404, 40470)
    _error(api.get(f"{KEKS}/9bad"), 422, 42271)


def test_kek_update_changes_only_what_is_sent(api: httpx.Client) -> None:
    name = _name()
    _kek(api, name, kmsProps={"a": "1"}, doc="old")
    resp = api.put(f"{KEKS}/{name}", json={"doc": "new", "shared": True})
    assert resp.status_code == 200, resp.text
    updated = resp.json()
    assert (updated["doc"], updated["shared"], updated["kmsProps"], updated["kmsKeyId"]) == (
        "new",
        True,
        {"a": "1"},
        "key-1",
    )
    assert api.put(f"{KEKS}/{name}", json={"kmsProps": {"z": "9"}}).json()["kmsProps"] == {"z": "9"}
    assert api.get(f"{KEKS}/{name}").json()["kmsProps"] == {"z": "9"}
    _error(api.put(f"{KEKS}/nosuch_{uuid.uuid4().hex[:6]}", json={"doc": "x"}), 404, 40470)


def test_kek_soft_delete_undelete_and_permanent_delete(api: httpx.Client) -> None:
    name = _name()
    _kek(api, name)
    _error(
        api.delete(f"{KEKS}/{name}", params={"permanent": "true"}),
        404,
        40471,
        f"Key '{name}' was not deleted first before being permanently deleted",
    )
    assert api.delete(f"{KEKS}/{name}").status_code == 204
    _error(api.get(f"{KEKS}/{name}"), 404, 40470)
    assert api.get(f"{KEKS}/{name}", params={"deleted": "true"}).json()["deleted"] is True
    assert name not in api.get(KEKS).json()
    assert name in api.get(KEKS, params={"deleted": "true"}).json()
    assert api.post(f"{KEKS}/{name}/undelete").status_code == 204
    assert "deleted" not in api.get(f"{KEKS}/{name}").json()
    assert api.delete(f"{KEKS}/{name}").status_code == 204
    assert api.delete(f"{KEKS}/{name}", params={"permanent": "true"}).status_code == 204
    _error(api.get(f"{KEKS}/{name}", params={"deleted": "true"}), 404, 40470)
    _error(api.delete(f"{KEKS}/{name}"), 404, 40470)
    _error(api.post(f"{KEKS}/{name}/undelete"), 404, 40470)


def test_creating_a_soft_deleted_kek_again_undeletes_it(api: httpx.Client) -> None:
    name = _name()
    _kek(api, name)
    assert api.delete(f"{KEKS}/{name}").status_code == 204
    again = _kek(api, name)
    assert "deleted" not in again
    assert api.get(f"{KEKS}/{name}").status_code == 200


def test_kek_with_deks_cannot_be_deleted(api: httpx.Client) -> None:
    name, subject = _name(), _name("s")
    _kek(api, name)
    _dek(api, name, subject, encryptedKeyMaterial=MATERIAL)
    _error(api.delete(f"{KEKS}/{name}"), 422, 42272, f"One or more references exist to the key '{name}'")
    assert api.delete(f"{KEKS}/{name}/deks/{subject}").status_code == 204
    assert api.delete(f"{KEKS}/{name}").status_code == 204  # only soft-deleted DEKs left
    _error(api.delete(f"{KEKS}/{name}", params={"permanent": "true"}), 422, 42272)


def test_list_keks_by_subject_prefix(api: httpx.Client) -> None:
    a, b = _name(), _name()
    prefix = _name("p")
    _kek(api, a)
    _kek(api, b)
    _dek(api, a, f"{prefix}-orders", encryptedKeyMaterial=MATERIAL)
    _dek(api, b, f"other-{prefix}", encryptedKeyMaterial=MATERIAL)
    assert api.get(KEKS, params={"subjectPrefix": prefix}).json() == [a]
    both = api.get(KEKS, params=[("subjectPrefix", prefix), ("subjectPrefix", "other-" + prefix)]).json()
    assert both == sorted([a, b])


# ---- DEKs ---------------------------------------------------------------------------------------------------------


def test_dek_create_versions_and_reads(api: httpx.Client) -> None:
    kek, subject = _name(), _name("orders")
    _kek(api, kek)
    one = _dek(api, kek, subject, encryptedKeyMaterial=MATERIAL)
    assert set(one) == {"kekName", "subject", "version", "algorithm", "encryptedKeyMaterial", "ts"}
    assert (one["kekName"], one["subject"], one["version"], one["algorithm"]) == (kek, subject, 1, "AES256_GCM")
    assert one["encryptedKeyMaterial"] == MATERIAL
    _dek(api, kek, subject, version=2, encryptedKeyMaterial=MATERIAL)
    assert api.get(f"{KEKS}/{kek}/deks/{subject}/versions").json() == [1, 2]
    assert api.get(f"{KEKS}/{kek}/deks/{subject}").json()["version"] == 2
    assert api.get(f"{KEKS}/{kek}/deks/{subject}/versions/latest").json()["version"] == 2
    assert api.get(f"{KEKS}/{kek}/deks/{subject}/versions/-1").json()["version"] == 2
    assert api.get(f"{KEKS}/{kek}/deks/{subject}/versions/1").json() == one
    assert api.get(f"{KEKS}/{kek}/deks").json() == [subject]
    # the older API: the subject in the body only
    other = _name("other")
    resp = api.post(f"{KEKS}/{kek}/deks", json={"subject": other, "encryptedKeyMaterial": MATERIAL})
    assert resp.status_code == 200 and resp.json()["subject"] == other
    assert api.get(f"{KEKS}/{kek}/deks").json() == sorted([subject, other])


def test_dek_algorithms_are_separate_series(api: httpx.Client) -> None:
    kek, subject = _name(), _name("s")
    _kek(api, kek)
    _dek(api, kek, subject, encryptedKeyMaterial=MATERIAL)
    siv = _dek(api, kek, subject, algorithm="AES256_SIV", encryptedKeyMaterial=MATERIAL)
    assert siv["algorithm"] == "AES256_SIV" and siv["version"] == 1
    assert api.get(f"{KEKS}/{kek}/deks/{subject}", params={"algorithm": "AES256_SIV"}).json() == siv
    _error(api.get(f"{KEKS}/{kek}/deks/{subject}", params={"algorithm": "AES128_GCM"}), 404, 40470)
    _error(
        api.get(f"{KEKS}/{kek}/deks/{subject}", params={"algorithm": "ROT13"}),
        422,
        42271,
        "Invalid or missing value for field 'algorithm' of key",
    )
    _error(
        api.post(f"{KEKS}/{kek}/deks/{subject}", json={"algorithm": "ROT13", "encryptedKeyMaterial": MATERIAL}),
        422,
        42271,
    )


def test_dek_create_errors(api: httpx.Client) -> None:
    kek, subject = _name(), _name("s")
    _kek(api, kek)
    _error(
        api.post(f"{KEKS}/{kek}/deks/{subject}", json={"subject": subject}),
        422,
        42271,
        "Invalid or missing value for field 'encryptedKeyMaterial' of key",
    )
    _error(api.post(f"{KEKS}/{kek}/deks/{subject}", json={"encryptedKeyMaterial": "not base64!"}), 422, 42271)
    _dek(api, kek, subject, encryptedKeyMaterial=MATERIAL)
    _error(
        api.post(f"{KEKS}/{kek}/deks/{subject}", json={"encryptedKeyMaterial": MATERIAL}),
        409,
        40971,
        f"Key '{subject}' already exists; use a different value",
    )
    _error(
        api.post(f"{KEKS}/nosuch_{uuid.uuid4().hex[:6]}/deks/{subject}", json={"encryptedKeyMaterial": MATERIAL}),
        404,
        40470,
    )
    _error(
        api.post(f"{KEKS}/{kek}/deks", json={"encryptedKeyMaterial": MATERIAL}),
        422,
        42271,
        "Invalid or missing value for field 'subject' of key",
    )
    _error(api.post(f"{KEKS}/{kek}/deks/{subject}", json={"version": "2"}), 422, 422)


def test_dek_reads_of_what_is_not_there(api: httpx.Client) -> None:
    kek, subject = _name(), _name("s")
    _kek(api, kek)
    _error(api.get(f"{KEKS}/{kek}/deks/{subject}"), 404, 40470, f"Key '{subject}' not found")
    _error(api.get(f"{KEKS}/{kek}/deks/{subject}/versions/1"), 404, 40470)
    _error(api.get(f"{KEKS}/{kek}/deks/{subject}/versions/zero"), 422, 42202)
    _error(api.get(f"{KEKS}/{kek}/deks/{subject}/versions/0"), 422, 42202)
    assert api.get(f"{KEKS}/{kek}/deks/{subject}/versions").json() == []
    missing = f"nosuch_{uuid.uuid4().hex[:6]}"
    _error(api.get(f"{KEKS}/{missing}/deks"), 404, 40470, f"Key '{missing}' not found")
    _error(api.get(f"{KEKS}/{missing}/deks/{subject}/versions"), 404, 40470)


def test_dek_version_delete_undelete_and_permanent(api: httpx.Client) -> None:
    kek, subject = _name(), _name("s")
    _kek(api, kek)
    for v in (1, 2):
        _dek(api, kek, subject, version=v, encryptedKeyMaterial=MATERIAL)
    base = f"{KEKS}/{kek}/deks/{subject}"
    _error(api.delete(f"{base}/versions/1", params={"permanent": "true"}), 404, 40471)
    assert api.delete(f"{base}/versions/1").status_code == 204
    assert api.get(f"{base}/versions").json() == [2]
    assert api.get(f"{base}/versions", params={"deleted": "true"}).json() == [1, 2]
    _error(api.get(f"{base}/versions/1"), 404, 40470)
    assert api.get(f"{base}/versions/1", params={"deleted": "true"}).json()["deleted"] is True
    assert api.post(f"{base}/versions/1/undelete").status_code == 204
    assert api.get(f"{base}/versions").json() == [1, 2]
    assert api.delete(f"{base}/versions/1").status_code == 204
    assert api.delete(f"{base}/versions/1", params={"permanent": "true"}).status_code == 204
    assert api.get(f"{base}/versions", params={"deleted": "true"}).json() == [2]
    _error(api.delete(f"{base}/versions/1"), 404, 40470)
    _error(api.post(f"{base}/versions/7/undelete"), 404, 40470)
    _error(api.delete(f"{base}/versions/nope"), 422, 42202)


def test_dek_delete_all_versions_and_undelete(api: httpx.Client) -> None:
    kek, subject = _name(), _name("s")
    _kek(api, kek)
    for v in (1, 2, 3):
        _dek(api, kek, subject, version=v, encryptedKeyMaterial=MATERIAL)
    base = f"{KEKS}/{kek}/deks/{subject}"
    _error(api.delete(base, params={"permanent": "true"}), 404, 40471)
    assert api.delete(base).status_code == 204
    assert api.get(f"{base}/versions").json() == []
    assert api.get(f"{KEKS}/{kek}/deks").json() == []
    assert api.get(f"{KEKS}/{kek}/deks", params={"deleted": "true"}).json() == [subject]
    assert api.get(base, params={"deleted": "true"}).json()["version"] == 3
    # a soft-deleted KEK must be undeleted before its DEKs
    assert api.delete(f"{KEKS}/{kek}").status_code == 204
    _error(api.post(f"{base}/undelete"), 404, 40472, f"Key '{kek}' must be undeleted first")
    _error(api.post(f"{base}/versions/1/undelete"), 404, 40472)
    assert api.post(f"{KEKS}/{kek}/undelete").status_code == 204
    assert api.post(f"{base}/undelete").status_code == 204
    assert api.get(f"{base}/versions").json() == [1, 2, 3]
    assert api.delete(base).status_code == 204
    assert api.delete(base, params={"permanent": "true"}).status_code == 204
    _error(api.get(base, params={"deleted": "true"}), 404, 40470)
    _error(api.delete(base), 404, 40470)
    _error(api.post(f"{base}/undelete"), 404, 40470)


def test_creating_a_soft_deleted_dek_again_undeletes_it(api: httpx.Client) -> None:
    kek, subject = _name(), _name("s")
    _kek(api, kek)
    _dek(api, kek, subject, encryptedKeyMaterial=MATERIAL)
    assert api.delete(f"{KEKS}/{kek}/deks/{subject}/versions/1").status_code == 204
    _error(api.post(f"{KEKS}/{kek}/deks/{subject}", json={"encryptedKeyMaterial": MATERIAL[::-1]}), 409, 40971)
    assert "deleted" not in _dek(api, kek, subject, encryptedKeyMaterial=MATERIAL)


def test_subjects_with_slashes_and_contexts(api: httpx.Client) -> None:
    kek = _name()
    _kek(api, kek)
    for subject in ("a/b.proto", ":.ctx:orders"):
        quoted = subject.replace("/", "%2F").replace(":", "%3A")
        resp = api.post(f"{KEKS}/{kek}/deks/{quoted}", json={"encryptedKeyMaterial": MATERIAL})
        assert resp.status_code == 200, resp.text
        assert resp.json()["subject"] == subject
        assert api.get(f"{KEKS}/{kek}/deks/{quoted}/versions/1").json()["subject"] == subject


# ---- shared KEKs --------------------------------------------------------------------------------------------------


def test_shared_kek_generates_material_that_confluent_kafka_unwraps(api: httpx.Client) -> None:
    from confluent_kafka.schema_registry.rules.encryption.dek_registry.dek_registry_client import DekAlgorithm
    from confluent_kafka.schema_registry.rules.encryption.encrypt_executor import Cryptor
    from confluent_kafka.schema_registry.rules.encryption.localkms.local_client import LocalKmsClient

    kek, subject = _name(), _name("s")
    _kek(api, kek, shared=True)
    local = LocalKmsClient(SECRET).get_aead("local-kms://key-1")
    for algorithm in DekAlgorithm:
        dek = _dek(api, kek, subject, algorithm=algorithm.value)
        raw = base64.b64decode(dek["keyMaterial"])
        assert local.decrypt(base64.b64decode(dek["encryptedKeyMaterial"]), b"") == raw
        cryptor = Cryptor(algorithm)
        assert len(raw) == len(cryptor.generate_key())
        assert cryptor.decrypt(raw, cryptor.encrypt(raw, b"plain", b""), b"") == b"plain"
        # every read of a shared KEK's DEK unwraps it again
        read = api.get(f"{KEKS}/{kek}/deks/{subject}/versions/1", params={"algorithm": algorithm.value}).json()
        assert read["keyMaterial"] == dek["keyMaterial"]


def test_shared_kek_accepts_material_wrapped_by_the_client(api: httpx.Client) -> None:
    from confluent_kafka.schema_registry.rules.encryption.localkms.local_client import LocalKmsClient

    kek, subject = _name(), _name("s")
    _kek(api, kek, shared=True)
    raw = b"\x1a\x20" + bytes(range(32))
    wrapped = LocalKmsClient(SECRET).get_aead("local-kms://key-1").encrypt(raw, b"")
    dek = _dek(api, kek, subject, encryptedKeyMaterial=base64.b64encode(wrapped).decode())
    assert base64.b64decode(dek["keyMaterial"]) == raw


def test_shared_kek_whose_kms_cannot_be_reached_is_50070(api: httpx.Client) -> None:
    kek, subject = _name(), _name("s")
    _kek(api, kek, kmsType="hcvault", kmsKeyId="http://127.0.0.1:9/transit/keys/k", shared=True)
    resp = api.post(f"{KEKS}/{kek}/deks/{subject}", json={})
    _error(resp, 500, 50070)
    assert subject in resp.json()["message"]
    kek2 = _name()
    _kek(api, kek2, kmsType="no-such-kms", shared=True)
    resp = api.post(f"{KEKS}/{kek2}/deks/{subject}", json={})
    _error(resp, 500, 50070)
    assert "unknown KMS type 'no-such-kms'" in resp.json()["message"]


# ---- confluent-kafka's DekRegistryClient --------------------------------------------------------------------------


def test_confluent_kafka_dek_registry_client(dek_registry: RegistryProcess) -> None:
    from confluent_kafka.schema_registry.error import SchemaRegistryError
    from confluent_kafka.schema_registry.rules.encryption.dek_registry.dek_registry_client import (
        DekAlgorithm,
        DekRegistryClient,
    )

    client = DekRegistryClient({"url": dek_registry.url})
    name, subject = _name(), _name("s")
    kek = client.register_kek(name, "local-kms", "key-1", shared=False, kms_props={"p": "v"}, doc="d")
    assert kek.kms_props is not None and kek.kms_props.properties == {"p": "v"}
    assert (kek.name, kek.kms_type, kek.kms_key_id, kek.doc, kek.shared) == (name, "local-kms", "key-1", "d", False)
    assert DekRegistryClient({"url": dek_registry.url}).get_kek(name) == kek
    dek = client.register_dek(name, subject, MATERIAL, DekAlgorithm.AES256_SIV, 1)
    assert (dek.kek_name, dek.subject, dek.version, dek.algorithm) == (name, subject, 1, DekAlgorithm.AES256_SIV)
    fresh = DekRegistryClient({"url": dek_registry.url})
    assert fresh.get_dek(name, subject, DekAlgorithm.AES256_SIV, 1).encrypted_key_material == MATERIAL
    assert fresh.get_dek(name, subject, DekAlgorithm.AES256_SIV, -1).version == 1
    with pytest.raises(SchemaRegistryError) as e:
        fresh.get_dek(name, subject, DekAlgorithm.AES128_GCM, 1)
    assert (e.value.http_status_code, e.value.error_code) == (404, 40470)
    with pytest.raises(SchemaRegistryError) as e:
        DekRegistryClient({"url": dek_registry.url}).register_kek(name, "local-kms", "other-key")
    assert (e.value.http_status_code, e.value.error_code) == (409, 40971)

    shared = _name()
    DekRegistryClient({"url": dek_registry.url}).register_kek(shared, "local-kms", "key-1", shared=True)
    generated = client.register_dek(shared, subject, None)  # type: ignore[arg-type]  # as the executor does
    assert generated.get_key_material_bytes() is not None
    assert generated.get_encrypted_key_material_bytes() is not None
