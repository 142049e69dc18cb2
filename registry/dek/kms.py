"""DEK material, and wrapping it through a KEK's KMS, byte-compatible with confluent-kafka's encryption executor.

DEK material is what the executor's ``Cryptor.generate_key`` makes: the serialized Tink key proto of the
algorithm with fresh random bytes as its ``key_value`` (version 0 left out, as proto3 does): field 3 of
``AesGcmKey`` for AES128_GCM/AES256_GCM, field 2 of ``AesSivKey`` (64 bytes) for AES256_SIV.

Wrapping is an AEAD with empty associated data, as the executor's ``AeadWrapper`` uses it:

- ``local-kms``: confluent-kafka's ``LocalKmsClient``. Its key is HKDF-SHA256 of the secret (no salt, no info,
  16 bytes), used as Tink's raw AES128-GCM: ``nonce(12) || ciphertext || tag(16)``. The secret is the
  registry's ``--dek-local-secret``, else the KEK's ``kmsProps.secret``.
- ``aws-kms``, ``azure-kms``, ``gcp-kms``, ``hcvault``: confluent-kafka's own KMS drivers, given the KEK's
  ``kmsProps`` as their configuration. They need its ``rules`` extra (``schemakit[kms]``); without it, using
  such a KEK is one 50070 error that names the extra.
"""

from __future__ import annotations

import base64
import importlib
import os
from collections.abc import Callable
from typing import Any, Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from registry.dek.state import Kek

LOCAL_KMS = "local-kms"
KMS_EXTRA = "pip install 'schemakit[kms]'"
#: per algorithm: the ``key_value`` field's tag in its Tink key proto (length-delimited) and its bytes
KEY_FORMATS = {"AES128_GCM": (0x1A, 16), "AES256_GCM": (0x1A, 32), "AES256_SIV": (0x12, 64)}
#: KMS type -> (module of confluent-kafka's driver, its class)
_DRIVERS = {
    "aws-kms": ("awskms.aws_driver", "AwsKmsDriver"),
    "azure-kms": ("azurekms.azure_driver", "AzureKmsDriver"),
    "gcp-kms": ("gcpkms.gcp_driver", "GcpKmsDriver"),
    "hcvault": ("hcvault.hcvault_driver", "HcVaultKmsDriver"),
}
_DRIVER_PACKAGE = "confluent_kafka.schema_registry.rules.encryption."
_EMPTY_AAD = b""


class KmsError(Exception):
    """The KMS could not wrap or unwrap (refused, unreachable, misconfigured, or its driver is not installed)."""


class Aead(Protocol):
    def encrypt(self, plaintext: bytes, associated_data: bytes) -> bytes: ...

    def decrypt(self, ciphertext: bytes, associated_data: bytes) -> bytes: ...


def normalize_kms_type(kms_type: str) -> str:
    """Confluent's normalization: any type starting with ``aws``, ``azure`` or ``gcp`` is that cloud's KMS."""
    lowered = kms_type.lower()
    for cloud in ("aws", "azure", "gcp"):
        if lowered.startswith(cloud):
            return f"{cloud}-kms"
    return kms_type


def generate_key_material(algorithm: str) -> bytes:
    """Fresh DEK material of ``algorithm``: the serialized Tink key, as confluent-kafka's ``Cryptor`` makes it."""
    tag, size = KEY_FORMATS[algorithm]
    return bytes([tag, size]) + os.urandom(size)


class LocalKms:
    """confluent-kafka's ``LocalKmsClient``: AES128-GCM under a key derived from a secret."""

    def __init__(self, secret: str) -> None:
        key = HKDF(algorithm=hashes.SHA256(), length=16, salt=None, info=b"").derive(secret.encode())
        self._aead = AESGCM(key)

    def encrypt(self, plaintext: bytes, associated_data: bytes) -> bytes:
        nonce = os.urandom(12)
        return nonce + self._aead.encrypt(nonce, plaintext, associated_data)

    def decrypt(self, ciphertext: bytes, associated_data: bytes) -> bytes:
        if len(ciphertext) < 28:
            raise KmsError("the wrapped key is too short for AES-GCM")
        try:
            return self._aead.decrypt(ciphertext[:12], ciphertext[12:], associated_data)
        except InvalidTag:
            raise KmsError("local-kms could not unwrap the key (another secret?)") from None


class Kms:
    """The KMS clients of one registry: the local secret, and confluent-kafka's drivers loaded on first use."""

    def __init__(self, local_secret: str | None = None, loader: Callable[[str], Any] = importlib.import_module):
        self.local_secret = local_secret
        self._load = loader
        self._clients: dict[tuple[str, str, tuple[tuple[str, str], ...]], Aead] = {}

    def aead(self, kek: Kek) -> Aead:
        """The AEAD of ``kek``'s key in its KMS (cached per KMS type, key id and properties)."""
        cache_key = (kek.kms_type, kek.kms_key_id, tuple(sorted(kek.kms_props.items())))
        found = self._clients.get(cache_key)
        if found is None:
            found = self._clients[cache_key] = self._new_aead(kek)
        return found

    def _new_aead(self, kek: Kek) -> Aead:
        if kek.kms_type == LOCAL_KMS:
            secret = self.local_secret or kek.kms_props.get("secret")
            if not secret:
                raise KmsError("local-kms has no secret: start the registry with --dek-local-secret")
            return LocalKms(secret)
        driver_at = _DRIVERS.get(kek.kms_type)
        if driver_at is None:
            known = ", ".join([LOCAL_KMS, *_DRIVERS])
            raise KmsError(f"unknown KMS type {kek.kms_type!r} (known: {known})")
        module, cls = driver_at
        try:
            driver = getattr(self._load(_DRIVER_PACKAGE + module), cls)()
        except ImportError as e:
            raise KmsError(f"the {kek.kms_type} KMS driver needs confluent-kafka's KMS packages: {KMS_EXTRA}") from e
        url = f"{kek.kms_type}://{kek.kms_key_id}"
        try:
            client = driver.new_kms_client(dict(kek.kms_props), url)
            aead: Aead = client.get_aead(url)
        except Exception as e:  # the driver's own errors (Tink, the cloud SDK): a refusal to report
            raise KmsError(f"{kek.kms_type}: {e}") from e
        return aead

    def wrap(self, kek: Kek, key_material: bytes) -> str:
        """``key_material`` wrapped by ``kek``, base64 as ``encryptedKeyMaterial`` carries it."""
        try:
            return base64.b64encode(self.aead(kek).encrypt(key_material, _EMPTY_AAD)).decode()
        except KmsError:
            raise
        except Exception as e:
            raise KmsError(f"{kek.kms_type}: {e}") from e

    def unwrap(self, kek: Kek, encrypted_key_material: str) -> bytes:
        try:
            wrapped = base64.b64decode(encrypted_key_material, validate=True)
        except ValueError as e:
            raise KmsError(f"encryptedKeyMaterial is not base64: {e}") from e
        try:
            return self.aead(kek).decrypt(wrapped, _EMPTY_AAD)
        except KmsError:
            raise
        except Exception as e:
            raise KmsError(f"{kek.kms_type}: {e}") from e
