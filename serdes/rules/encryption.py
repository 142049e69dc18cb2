"""Client-side field-level encryption: the ``ENCRYPT`` (tagged fields) and ``ENCRYPT_PAYLOAD`` (the encoded
payload) rules, byte-compatible with confluent-kafka's ``FieldEncryptionExecutor`` / ``EncryptionExecutor``.

A rule names its KEK and how to make one (its ``params``, else the schema's metadata properties):
``encrypt.kek.name``, ``encrypt.kms.type``, ``encrypt.kms.key.id``, ``encrypt.dek.algorithm`` (AES256_GCM by
default, AES128_GCM, or AES256_SIV: deterministic), ``encrypt.dek.expiry.days`` (rotation). On WRITE the KEK is
looked up in the registry's DEK registry (``/dek-registry/v1``) and registered when missing; the subject's DEK
(version 1, or the latest with rotation) likewise, its material made here and wrapped by the KEK's KMS
(``serdes.rules.kms``) unless the KEK is shared (then the registry makes it and hands out ``keyMaterial``). With
rotation a DEK older than the expiry is replaced by the next version, and every ciphertext starts with ``0x00``
and the DEK version (4 bytes, big-endian). A string field carries the base64 of its ciphertext, a bytes field
(and the payload) the ciphertext. On READ the DEK (version 1, or the one the ciphertext names) is fetched with
``deleted=true``, as confluent-kafka does: a soft-deleted DEK still decrypts; a missing KEK or DEK, or a KMS that
refuses, is an ``EncryptionError`` naming the subject, the field, the KEK and the DEK version.

Registry calls happen on the first record that needs a DEK; every DEK's primitive is then cached per serde (its
``RuleConfig``). The rules run inside a record's synchronous rule step, so an async serde's first record per
DEK makes a blocking call (``ClientSettings.request_blocking``).
"""

from __future__ import annotations

import base64
import binascii
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from serdes.errors import RegistryError
from serdes.models import Rule, Schema
from serdes.rules.fields import FieldInfo
from serdes.rules.kms import KekAead, KmsError
from serdes.rules.tink_wire import Cipher, CryptoError, generate_key_material

KEK_NAME = "encrypt.kek.name"
KMS_TYPE = "encrypt.kms.type"
KMS_KEY_ID = "encrypt.kms.key.id"
DEK_ALGORITHM = "encrypt.dek.algorithm"
DEK_EXPIRY_DAYS = "encrypt.dek.expiry.days"
DEFAULT_ALGORITHM = "AES256_GCM"
MILLIS_IN_DAY = 24 * 60 * 60 * 1000
_KEKS = "/dek-registry/v1/keks"
_VERSION_MAGIC = b"\x00"
_LATEST = -1


class EncryptionError(Exception):
    """A field or payload could not be encrypted or decrypted: the message names the subject, the field, the
    KEK and the DEK version, and why (no such KEK or DEK, the KMS refused, a ciphertext that does not decrypt)."""


def _now_millis() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class Dek:
    """One DEK as the encryption rules use it: its version, creation time (ms) and primitive."""

    version: int
    ts: int
    cipher: Cipher


class DekRegistry:
    """The DEK registry of one serde's registry (its client), with the KEKs and DEKs it has met cached.

    ``clock`` (milliseconds) decides when a DEK has expired; tests of rotation give their own."""

    def __init__(self, client: Any, conf: Mapping[str, Any], clock: Callable[[], int] = _now_millis) -> None:
        self._client = client
        self._conf = conf
        self.clock = clock
        self._keks: dict[str, dict[str, Any]] = {}
        self._aeads: dict[str, KekAead] = {}
        self._deks: dict[tuple[str, str, int, str], Dek] = {}
        self._latest: dict[tuple[str, str, str], Dek] = {}
        self._lock = threading.RLock()

    def _call(self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None) -> Any:
        request = getattr(self._client, "request_blocking", None) or self._client.request
        return request(method, path, body, params)

    # -- KEKs ----------------------------------------------------------------------------------------------

    def kek(self, name: str, create: tuple[str, str] | None, where: str) -> dict[str, Any]:
        """The KEK ``name``; with ``create`` (kms type, key id) registered when missing. ``where`` names the
        subject and field for errors."""
        found = self._keks.get(name)
        if found is not None:
            return found
        with self._lock:
            found = self._get_kek(name, where)
            if found is None:
                if create is None:
                    raise EncryptionError(f"{where}: no KEK {name!r} in the DEK registry (deleted, or never created)")
                kms_type, key_id = create
                body = {"name": name, "kmsType": kms_type, "kmsKeyId": key_id, "shared": False}
                try:
                    found = self._call("POST", _KEKS, body)
                except RegistryError as e:
                    if e.status != 409:
                        raise EncryptionError(f"{where}: could not register KEK {name!r}: {e}") from e
                    found = self._get_kek(name, where)
                if found is None:
                    raise EncryptionError(f"{where}: no KEK {name!r} in the DEK registry")
            self._keks[name] = found
            return found

    def _get_kek(self, name: str, where: str) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = self._call("GET", f"{_KEKS}/{quote(name, safe='')}", None, {"deleted": False})
            return found
        except RegistryError as e:
            if e.status == 404:
                return None
            raise EncryptionError(f"{where}: could not get KEK {name!r}: {e}") from e

    def _aead(self, kek: dict[str, Any]) -> KekAead:
        name = kek["name"]
        found = self._aeads.get(name)
        if found is None:
            props = kek.get("kmsProps") or {}
            found = self._aeads[name] = KekAead(name, kek["kmsType"], kek["kmsKeyId"], props, self._conf)
        return found

    # -- DEKs ----------------------------------------------------------------------------------------------

    def _dek_path(self, kek: str, subject: str) -> str:
        return f"{_KEKS}/{quote(kek, safe='')}/deks/{quote(subject, safe='')}"

    def _get_dek(self, kek: str, subject: str, version: int, algorithm: str, deleted: bool) -> dict | None:
        params = {"algorithm": algorithm, "deleted": deleted}
        try:
            found = self._call("GET", f"{self._dek_path(kek, subject)}/versions/{version}", None, params)
        except RegistryError as e:
            if e.status == 404:
                return None
            raise
        return found if found and found.get("encryptedKeyMaterial") else None

    def _usable(self, kek: dict[str, Any], body: dict[str, Any], where: str) -> Dek:
        """The primitive of the DEK ``body``: its ``keyMaterial`` (shared KEK), else its material unwrapped."""
        algorithm = body.get("algorithm") or DEFAULT_ALGORITHM
        version = int(body.get("version") or 1)
        try:
            if body.get("keyMaterial"):
                material = base64.b64decode(body["keyMaterial"])
            else:
                material = self._aead(kek).unwrap(base64.b64decode(body["encryptedKeyMaterial"]))
            return Dek(version, int(body.get("ts") or 0), Cipher.of(material, algorithm))
        except (KmsError, CryptoError, binascii.Error, ValueError) as e:
            raise EncryptionError(f"{where}: cannot use DEK version {version} of KEK {kek['name']!r}: {e}") from e

    def dek(self, kek: dict[str, Any], subject: str, version: int, algorithm: str, where: str) -> Dek:
        """DEK ``version`` of ``subject`` under ``kek`` for reading (soft-deleted ones included)."""
        key = (kek["name"], subject, version, algorithm)
        found = self._deks.get(key)
        if found is not None:
            return found
        with self._lock:
            try:
                body = self._get_dek(kek["name"], subject, version, algorithm, True)
            except RegistryError as e:
                why = f"could not get DEK version {version} of KEK {kek['name']!r}: {e}"
                raise EncryptionError(f"{where}: {why}") from e
            if body is None:
                raise EncryptionError(
                    f"{where}: no {algorithm} DEK version {version} for subject {subject!r} under KEK "
                    f"{kek['name']!r} (deleted, or never created)"
                )
            found = self._deks[key] = self._usable(kek, body, where)
            return found

    def writing_dek(self, kek: dict[str, Any], subject: str, algorithm: str, expiry_days: int, where: str) -> Dek:
        """The DEK to write with: version 1, or with ``expiry_days`` the latest, replaced by the next version
        when it is older than that; created when there is none."""
        latest_key = (kek["name"], subject, algorithm)
        found = self._latest.get(latest_key)
        if found is not None and not self._expired(found, expiry_days):
            return found
        with self._lock:
            version = _LATEST if expiry_days > 0 else 1
            try:
                body = self._get_dek(kek["name"], subject, version, algorithm, False)
            except RegistryError as e:
                raise EncryptionError(f"{where}: could not get the DEK of KEK {kek['name']!r}: {e}") from e
            current = self._usable(kek, body, where) if body is not None else None
            if current is None or self._expired(current, expiry_days):
                created = self._create_dek(kek, subject, algorithm, current.version + 1 if current else 1, where)
                current = created or current
                if current is None:
                    raise EncryptionError(f"{where}: no DEK for subject {subject!r} under KEK {kek['name']!r}")
            self._latest[latest_key] = current
            self._deks[(kek["name"], subject, current.version, algorithm)] = current
            return current

    def _expired(self, dek: Dek, expiry_days: int) -> bool:
        return expiry_days > 0 and (self.clock() - dek.ts) / MILLIS_IN_DAY > expiry_days

    def _create_dek(self, kek: dict[str, Any], subject: str, algorithm: str, version: int, where: str) -> Dek | None:
        body: dict[str, Any] = {"subject": subject, "version": version, "algorithm": algorithm}
        try:
            if not kek.get("shared"):
                wrapped = self._aead(kek).wrap(generate_key_material(algorithm))
                body["encryptedKeyMaterial"] = base64.b64encode(wrapped).decode()
        except KmsError as e:
            raise EncryptionError(f"{where}: {e}") from e
        try:
            created = self._call("POST", self._dek_path(kek["name"], subject), body)
        except RegistryError as e:
            if e.status != 409:
                raise EncryptionError(f"{where}: could not register DEK version {version}: {e}") from e
            created = self._get_dek(kek["name"], subject, version, algorithm, False)  # another writer won
            if created is None:
                return None
        return self._usable(kek, created, where)


def _parameter(rule: Rule, schema: Schema, name: str) -> str | None:
    """confluent-kafka's ``RuleContext.get_parameter``: the rule's params, else the schema's metadata properties."""
    value = rule.params.get(name)
    if value:
        return str(value)
    metadata = schema.metadata
    found = metadata.properties.get(name) if metadata is not None else None
    return str(found) if found else None


class Encryption:
    """One ``ENCRYPT`` / ``ENCRYPT_PAYLOAD`` rule of one schema in one mode (WRITE or READ), over a serde's
    ``DekRegistry``: ``field(info, value)`` for a field, ``payload(data)`` for the encoded payload."""

    def __init__(self, rule: Rule, mode: str, schema: Schema, subject: str | None, keys: DekRegistry) -> None:
        if mode not in ("WRITE", "READ"):
            raise ValueError(f"encryption rules run on WRITE and READ, not {mode}")
        self.writing = mode == "WRITE"
        self.subject = subject
        self.keys = keys
        name = _parameter(rule, schema, KEK_NAME)
        if not name:
            raise ValueError(f"rule {rule.name!r}: no KEK name ({KEK_NAME})")
        self.kek_name = name
        self.algorithm = _parameter(rule, schema, DEK_ALGORITHM) or DEFAULT_ALGORITHM
        if self.algorithm not in ("AES128_GCM", "AES256_GCM", "AES256_SIV"):
            raise ValueError(f"rule {rule.name!r}: unknown {DEK_ALGORITHM} {self.algorithm!r}")
        expiry = _parameter(rule, schema, DEK_EXPIRY_DAYS)
        try:
            self.expiry_days = int(expiry) if expiry else 0
        except ValueError:
            raise ValueError(f"rule {rule.name!r}: {DEK_EXPIRY_DAYS} is not a number: {expiry!r}") from None
        if self.expiry_days < 0:
            raise ValueError(f"rule {rule.name!r}: negative {DEK_EXPIRY_DAYS}")
        self.kms_type = _parameter(rule, schema, KMS_TYPE)
        self.kms_key_id = _parameter(rule, schema, KMS_KEY_ID)
        self._kek: dict[str, Any] | None = None

    def _where(self, field: str | None) -> str:
        return f"subject {self.subject!r}, " + (f"field {field}" if field else "payload")

    def _kek_for(self, where: str) -> dict[str, Any]:
        kek = self._kek
        if kek is None:
            # registered on WRITE when missing, if the rule says how (as confluent-kafka: never on READ)
            writable = self.writing and self.kms_type and self.kms_key_id
            create = (self.kms_type, self.kms_key_id) if writable else None
            kek = self.keys.kek(self.kek_name, create, where)  # type: ignore[arg-type]
            if self.kms_type and kek.get("kmsType") != self.kms_type:
                raise EncryptionError(
                    f"{where}: KEK {self.kek_name!r} has KMS type {kek.get('kmsType')!r}, the rule {self.kms_type!r}"
                )
            if self.kms_key_id and kek.get("kmsKeyId") != self.kms_key_id:
                raise EncryptionError(
                    f"{where}: KEK {self.kek_name!r} has KMS key id {kek.get('kmsKeyId')!r}, the rule "
                    f"{self.kms_key_id!r}"
                )
            self._kek = kek
        return kek

    def _subject(self, where: str) -> str:
        if self.subject is None:
            raise EncryptionError(f"{where}: no subject to find the DEK under (pass a SerializationContext)")
        return self.subject

    def encrypt(self, plaintext: bytes, field: str | None) -> bytes:
        where = self._where(field)
        kek = self._kek_for(where)
        dek = self.keys.writing_dek(kek, self._subject(where), self.algorithm, self.expiry_days, where)
        ciphertext = dek.cipher.encrypt(plaintext)
        if self.expiry_days > 0:
            return _VERSION_MAGIC + dek.version.to_bytes(4, "big") + ciphertext
        return ciphertext

    def decrypt(self, ciphertext: bytes, field: str | None) -> bytes:
        where = self._where(field)
        version = 1
        if self.expiry_days > 0:
            if len(ciphertext) < 5:
                raise EncryptionError(f"{where}: no DEK version in a {len(ciphertext)}-byte ciphertext")
            version = int.from_bytes(ciphertext[1:5], "big")
            ciphertext = ciphertext[5:]
        dek = self.keys.dek(self._kek_for(where), self._subject(where), version, self.algorithm, where)
        try:
            return dek.cipher.decrypt(ciphertext)
        except CryptoError as e:
            raise EncryptionError(f"{where}: DEK version {version} of KEK {self.kek_name!r}: {e}") from e

    def field(self, info: FieldInfo, value: Any, containing: Any) -> Any:
        """An ``ENCRYPT`` rule's transform of one tagged field: strings as base64 text, bytes as bytes."""
        if value is None:
            return None
        type_name = info.type_name
        if type_name == "STRING":
            if self.writing:
                return base64.b64encode(self.encrypt(value.encode(), info.full_name)).decode()
            try:
                ciphertext = base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError) as e:
                raise EncryptionError(f"{self._where(info.full_name)}: the value is not base64 ciphertext") from e
            return self.decrypt(ciphertext, info.full_name).decode()
        if type_name == "BYTES":
            data = bytes(value)
            return self.encrypt(data, info.full_name) if self.writing else self.decrypt(data, info.full_name)
        raise EncryptionError(
            f"{self._where(info.full_name)}: a {type_name} field cannot be encrypted (only strings and bytes)"
        )

    def payload(self, data: bytes) -> bytes:
        """An ``ENCRYPT_PAYLOAD`` rule's transform of the encoded payload (after the schema id framing)."""
        return self.encrypt(data, None) if self.writing else self.decrypt(data, None)
