"""Wrapping and unwrapping DEK material with a KEK's KMS, as confluent-kafka's encryption executor does.

The executor's ``AeadWrapper``: the KEK's ``kmsKeyId`` first, then each of its alternate key ids (the KEK's
``kmsProps`` ``encrypt.alternate.kms.key.ids``, else the rule configuration's), comma-separated; the first that
wraps (or unwraps) wins. The KMS client is configured with the rule configuration (``rule_config``) overlaid
with the KEK's ``kmsProps``.

- ``local-kms``: confluent-kafka's ``LocalKmsDriver``: AES128-GCM under HKDF-SHA256 of the ``secret`` (rule
  configuration, else the ``LOCAL_SECRET`` environment variable), no salt, no info; the key id is not used.
  Built on ``cryptography``, no extra needed.
- ``aws-kms``, ``azure-kms``, ``gcp-kms``, ``hcvault``, and any driver registered with confluent-kafka's
  ``register_kms_driver``: confluent-kafka's own drivers (Tink KMS clients), which need the cloud SDKs and
  ``tink``: ``pip install 'schemakit[kms]'``; without them the first use raises one ``KmsError`` naming the extra.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from serdes.rules.tink_wire import EMPTY_AAD, Cipher, CryptoError

LOCAL_KMS = "local-kms"
KMS_EXTRA = "pip install 'schemakit[kms]'"
ALTERNATE_KEY_IDS = "encrypt.alternate.kms.key.ids"
#: KMS type -> (module of confluent-kafka's driver under its encryption package, driver class)
_DRIVERS = {
    "aws-kms": ("awskms.aws_driver", "AwsKmsDriver"),
    "azure-kms": ("azurekms.azure_driver", "AzureKmsDriver"),
    "gcp-kms": ("gcpkms.gcp_driver", "GcpKmsDriver"),
    "hcvault": ("hcvault.hcvault_driver", "HcVaultKmsDriver"),
}
_DRIVER_PACKAGE = "confluent_kafka.schema_registry.rules.encryption."


class KmsError(Exception):
    """The KMS could not wrap or unwrap a DEK (no secret, refused, unreachable, or its driver is not installed)."""


class Aead(Protocol):
    def encrypt(self, plaintext: bytes, associated_data: bytes) -> bytes: ...

    def decrypt(self, ciphertext: bytes, associated_data: bytes) -> bytes: ...


class LocalKmsAead:
    """confluent-kafka's ``LocalKmsClient`` AEAD: Tink's raw AES128-GCM under a key derived from ``secret``."""

    def __init__(self, secret: str) -> None:
        key = HKDF(algorithm=hashes.SHA256(), length=16, salt=None, info=b"").derive(secret.encode())
        self._cipher = Cipher("AES128_GCM", AESGCM(key))

    def encrypt(self, plaintext: bytes, associated_data: bytes) -> bytes:
        return self._cipher.encrypt(plaintext)

    def decrypt(self, ciphertext: bytes, associated_data: bytes) -> bytes:
        try:
            return self._cipher.decrypt(ciphertext)
        except CryptoError:
            raise KmsError("the local-kms key does not unwrap it (wrapped under another secret?)") from None


def _driver_aead(kms_type: str, key_id: str, config: dict[str, Any]) -> Aead:
    url = f"{kms_type}://{key_id}"
    try:
        registry = importlib.import_module(_DRIVER_PACKAGE + "kms_driver_registry")
        at = _DRIVERS.get(kms_type)
        driver = getattr(importlib.import_module(_DRIVER_PACKAGE + at[0]), at[1])() if at else None
    except ImportError as e:
        raise KmsError(f"the {kms_type} KMS needs confluent-kafka's KMS drivers: {KMS_EXTRA} ({e})") from e
    if driver is None:
        try:
            driver = registry.get_kms_driver(url)
        except Exception as e:
            known = ", ".join([LOCAL_KMS, *_DRIVERS])
            raise KmsError(f"no KMS driver for {url} (known: {known}, or one registered with confluent-kafka)") from e
    aead: Aead = driver.new_kms_client(config, url).get_aead(url)
    return aead


class KekAead:
    """The AEAD of one KEK (``kms_type``, ``kms_key_id``, ``kms_props``) under a rule configuration: its key id
    first, then its alternates."""

    def __init__(self, kek_name: str, kms_type: str, kms_key_id: str, kms_props: Mapping[str, str], conf: Mapping):
        self.kek_name = kek_name
        self.kms_type = kms_type
        self._config = {**conf, **kms_props}
        alternates = kms_props.get(ALTERNATE_KEY_IDS)
        if alternates is None:
            alternates = conf.get(ALTERNATE_KEY_IDS)
        self.key_ids = [kms_key_id, *(k.strip() for k in (alternates or "").split(",") if k.strip())]
        self._aeads: dict[str, Aead] = {}
        self._lock = threading.Lock()

    def _aead(self, key_id: str) -> Aead:
        found = self._aeads.get(key_id)
        if found is None:
            with self._lock:
                if self.kms_type == LOCAL_KMS:
                    secret = self._config.get("secret") or os.environ.get("LOCAL_SECRET")
                    if not secret:
                        raise KmsError("local-kms has no secret: set 'secret' in rule_config or LOCAL_SECRET")
                    found = LocalKmsAead(str(secret))
                else:
                    found = _driver_aead(self.kms_type, key_id, self._config)
                self._aeads[key_id] = found
        return found

    def _each(self, op: str, data: bytes) -> bytes:
        failures = []
        for key_id in self.key_ids:
            try:
                aead = self._aead(key_id)
                return aead.encrypt(data, EMPTY_AAD) if op == "wrap" else aead.decrypt(data, EMPTY_AAD)
            except Exception as e:  # the KMS's own errors (Tink, a cloud SDK, a wrong secret): try the next id
                failures.append(f"{self.kms_type}://{key_id}: {type(e).__name__}: {e}")
        raise KmsError(f"could not {op} the DEK with KEK {self.kek_name!r} ({'; '.join(failures)})")

    def wrap(self, material: bytes) -> bytes:
        return self._each("wrap", material)

    def unwrap(self, wrapped: bytes) -> bytes:
        return self._each("unwrap", wrapped)
