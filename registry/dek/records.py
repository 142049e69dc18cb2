"""The ``_dek_registry_keys`` topic's records, in Confluent's layout.

Keys name the key and its tenant: ``{"tenant","name","type":"KEK"}`` for a KEK and
``{"tenant","kekName","subject","algorithm","version","type":"DEK"}`` for a DEK. Values repeat the key's fields
with the key's content: ``{"name","kmsType","kmsKeyId","kmsProps","doc","shared","deleted","type":"KEK"}`` and
``{"kekName","subject","algorithm","version","encryptedKeyMaterial","deleted","type":"DEK"}``; null fields are
omitted (Jackson ``NON_NULL``), unknown ones ignored. A tombstone (null value) removes the key for good (a
permanent delete). The raw key bytes are kept on every decoded key so that a tombstone repeats exactly the bytes
of the record it deletes, whoever wrote them; records of other tenants and other key types (the leader's NOOP
barriers) are skipped. Values are read as ``_schemas`` values are (a JSON object or a tombstone), by
``registry.schemas_topic.decode_value``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from registry.contexts import DEFAULT_TENANT
from registry.schemas_topic import RecordFormatError, jdumps

KEK = "KEK"
DEK = "DEK"
#: Confluent's DEK formats; AES256_GCM when a request names none
ALGORITHMS = ("AES128_GCM", "AES256_GCM", "AES256_SIV")
DEFAULT_ALGORITHM = "AES256_GCM"


@dataclass(frozen=True, slots=True)
class KekKey:
    name: str
    raw: bytes = field(default=b"", compare=False)

    def encode(self) -> bytes:
        return f'{{"tenant":{jdumps(DEFAULT_TENANT)},"name":{jdumps(self.name)},"type":"KEK"}}'.encode()


@dataclass(frozen=True, slots=True)
class DekKey:
    kek_name: str
    subject: str
    algorithm: str
    version: int
    raw: bytes = field(default=b"", compare=False)

    def encode(self) -> bytes:
        return (
            f'{{"tenant":{jdumps(DEFAULT_TENANT)},"kekName":{jdumps(self.kek_name)},"subject":{jdumps(self.subject)},'
            f'"algorithm":{jdumps(self.algorithm)},"version":{self.version},"type":"DEK"}}'
        ).encode()


def decode_key(raw: bytes) -> KekKey | DekKey | None:
    """The key, or None for a record this registry does not keep (another tenant, a NOOP)."""
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise RecordFormatError(f"key is not JSON: {raw[:200]!r}") from e
    if not isinstance(obj, dict) or obj.get("tenant", DEFAULT_TENANT) != DEFAULT_TENANT:
        return None
    kind = obj.get("type")
    if kind == KEK:
        if not isinstance(obj.get("name"), str):
            raise RecordFormatError(f"KEK key without a name: {raw[:200]!r}")
        return KekKey(obj["name"], raw)
    if kind == DEK:
        kek_name, subject, algorithm, version = (obj.get(k) for k in ("kekName", "subject", "algorithm", "version"))
        if not (isinstance(kek_name, str) and isinstance(subject, str) and isinstance(version, int)):
            raise RecordFormatError(f"DEK key without kekName/subject/version: {raw[:200]!r}")
        return DekKey(kek_name, subject, algorithm if isinstance(algorithm, str) else DEFAULT_ALGORITHM, version, raw)
    return None


def kek_value(
    *,
    name: str,
    kms_type: str,
    kms_key_id: str,
    kms_props: dict[str, str],
    doc: str | None,
    shared: bool,
    deleted: bool,
) -> bytes:
    obj: dict[str, Any] = {"name": name, "kmsType": kms_type, "kmsKeyId": kms_key_id}
    obj["kmsProps"] = dict(sorted(kms_props.items()))
    if doc is not None:
        obj["doc"] = doc
    obj.update(shared=shared, deleted=deleted, type=KEK)
    return jdumps(obj).encode()


def dek_value(key: DekKey, *, encrypted_key_material: str, deleted: bool) -> bytes:
    obj = {
        "kekName": key.kek_name,
        "subject": key.subject,
        "algorithm": key.algorithm,
        "version": key.version,
        "encryptedKeyMaterial": encrypted_key_material,
        "deleted": deleted,
        "type": DEK,
    }
    return jdumps(obj).encode()
