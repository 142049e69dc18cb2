"""DEK material and field ciphertexts in Tink's wire format, on ``cryptography``'s AES-GCM and AES-SIV.

confluent-kafka's encryption executor keeps a DEK as the serialized Tink key proto of its algorithm and encrypts
with Tink's RAW primitives (no 5-byte Tink output prefix). The same bytes, without Tink:

- DEK material: ``AesGcmKey`` (``version`` = field 1, ``key_value`` = field 3: 16 bytes for AES128_GCM, 32 for
  AES256_GCM) or ``AesSivKey`` (``key_value`` = field 2, 64 bytes for AES256_SIV). Tink writes version 0 by
  leaving the field out, so fresh material is ``tag, length, key``;
- AES-GCM ciphertext: ``nonce (12) || ciphertext || tag (16)``, random nonce;
- AES-SIV (deterministic) ciphertext: ``SIV (16) || ciphertext``, with the (empty) associated data passed as one
  header component, as Tink does.

Why not depend on ``tink``: its primitives are rebuilt from the key proto on every call in confluent-kafka's
executor, and its wheels are large; one cached ``cryptography`` primitive per DEK encrypts the same bytes, and
``cryptography`` is already a dependency of schemakit (docs/serdes.md gives the measurement).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, AESSIV

EMPTY_AAD = b""
_NONCE = 12
_TAG = 16

#: per algorithm: the field number of ``key_value`` in its Tink key proto, and its length in bytes
KEY_FORMATS: dict[str, tuple[int, int]] = {"AES128_GCM": (3, 16), "AES256_GCM": (3, 32), "AES256_SIV": (2, 64)}


class CryptoError(Exception):
    """Key material that is not a Tink key of the algorithm, or a ciphertext that does not decrypt with it."""


def generate_key_material(algorithm: str) -> bytes:
    """Fresh DEK material of ``algorithm``: the serialized Tink key, as confluent-kafka's ``Cryptor`` makes it."""
    field_number, size = _format(algorithm)
    return bytes([field_number << 3 | 2, size]) + os.urandom(size)


def _format(algorithm: str) -> tuple[int, int]:
    try:
        return KEY_FORMATS[algorithm]
    except KeyError:
        raise CryptoError(f"unknown DEK algorithm {algorithm!r} (known: {', '.join(KEY_FORMATS)})") from None


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(data):
            raise CryptoError("truncated Tink key proto")
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def key_value(material: bytes, algorithm: str) -> bytes:
    """The raw AES key inside serialized Tink key ``material`` of ``algorithm``."""
    wanted, size = _format(algorithm)
    i = 0
    found = None
    while i < len(material):
        key, i = _varint(material, i)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            _, i = _varint(material, i)
        elif wire_type == 2:
            length, i = _varint(material, i)
            if number == wanted:
                found = material[i : i + length]
            i += length
        else:
            raise CryptoError(f"unexpected wire type {wire_type} in the Tink key proto")
    if found is None or len(found) != size:
        raise CryptoError(f"the DEK material is not a {algorithm} Tink key")
    return found


@dataclass(frozen=True, slots=True)
class Cipher:
    """One DEK's primitive: ``encrypt`` / ``decrypt`` with empty associated data, in Tink's RAW layout."""

    algorithm: str
    _primitive: AESGCM | AESSIV

    @classmethod
    def of(cls, material: bytes, algorithm: str) -> Cipher:
        key = key_value(material, algorithm)
        return cls(algorithm, AESSIV(key) if algorithm == "AES256_SIV" else AESGCM(key))

    @property
    def deterministic(self) -> bool:
        return self.algorithm == "AES256_SIV"

    def encrypt(self, plaintext: bytes) -> bytes:
        primitive = self._primitive
        if isinstance(primitive, AESSIV):
            return primitive.encrypt(plaintext, [EMPTY_AAD])
        nonce = os.urandom(_NONCE)
        return nonce + primitive.encrypt(nonce, plaintext, EMPTY_AAD)

    def decrypt(self, ciphertext: bytes) -> bytes:
        primitive = self._primitive
        try:
            if isinstance(primitive, AESSIV):
                return primitive.decrypt(ciphertext, [EMPTY_AAD])
            if len(ciphertext) < _NONCE + _TAG:
                raise CryptoError(f"{len(ciphertext)} bytes is too short for an {self.algorithm} ciphertext")
            return primitive.decrypt(ciphertext[:_NONCE], ciphertext[_NONCE:], EMPTY_AAD)
        except InvalidTag:
            raise CryptoError(f"the ciphertext does not decrypt with this {self.algorithm} DEK") from None
