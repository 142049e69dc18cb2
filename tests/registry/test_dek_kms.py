"""The DEK registry's KMS side, byte for byte against confluent-kafka's: local-kms wraps what its
``LocalKmsClient`` unwraps and the other way round, generated DEK material is what its ``Cryptor`` takes, and a
cloud KMS whose packages are missing is one error naming the extra to install."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from confluent_kafka.schema_registry.rules.encryption.dek_registry.dek_registry_client import DekAlgorithm
from confluent_kafka.schema_registry.rules.encryption.encrypt_executor import Cryptor
from confluent_kafka.schema_registry.rules.encryption.localkms.local_client import LocalKmsClient

from registry.dek.kms import Kms, KmsError, LocalKms, generate_key_material, normalize_kms_type
from registry.dek.state import Kek


def _kek(kms_type: str = "local-kms", props: dict[str, str] | None = None) -> Kek:
    return Kek("k", kms_type, "key-id", props or {}, None, True, False, 0)


def test_local_kms_is_confluent_kafkas_both_ways() -> None:
    theirs = LocalKmsClient("a secret").get_aead("local-kms://any")
    ours = LocalKms("a secret")
    for plaintext in (b"", b"x", generate_key_material("AES256_SIV")):
        assert theirs.decrypt(ours.encrypt(plaintext, b""), b"") == plaintext
        assert ours.decrypt(theirs.encrypt(plaintext, b""), b"") == plaintext
    with pytest.raises(KmsError, match="another secret"):
        LocalKms("another").decrypt(theirs.encrypt(b"x", b""), b"")
    with pytest.raises(KmsError, match="too short"):
        ours.decrypt(b"short", b"")


@pytest.mark.parametrize("algorithm", list(DekAlgorithm))
def test_generated_material_is_what_confluent_kafkas_cryptor_generates(algorithm: DekAlgorithm) -> None:
    cryptor = Cryptor(algorithm)
    ours, theirs = generate_key_material(algorithm.value), cryptor.generate_key()
    assert (len(ours), ours[:2]) == (len(theirs), theirs[:2])  # the same proto field and key size
    assert ours != generate_key_material(algorithm.value)
    ciphertext = cryptor.encrypt(ours, b"card number", b"")
    assert cryptor.decrypt(ours, ciphertext, b"") == b"card number"


def test_the_registrys_secret_wins_over_the_keks() -> None:
    material = generate_key_material("AES128_GCM")
    wrapped = Kms("registry secret").wrap(_kek(props={"secret": "kek secret"}), material)
    theirs = LocalKmsClient("registry secret").get_aead("local-kms://x")
    assert theirs.decrypt(base64.b64decode(wrapped), b"") == material
    assert Kms().unwrap(_kek(props={"secret": "registry secret"}), wrapped) == material
    with pytest.raises(KmsError, match="--dek-local-secret"):
        Kms().wrap(_kek(), material)


def test_a_cloud_kms_without_its_packages_names_the_extra() -> None:
    def absent(module: str) -> Any:
        raise ModuleNotFoundError(f"No module named {module.rsplit('.', 1)[-1]!r}")

    for kms_type in ("aws-kms", "azure-kms", "gcp-kms", "hcvault"):
        with pytest.raises(KmsError) as e:
            Kms(loader=absent).wrap(_kek(kms_type), b"material")
        assert (
            str(e.value)
            == f"the {kms_type} KMS driver needs confluent-kafka's KMS packages: pip install 'schemakit[kms]'"
        )


def test_kms_types_are_normalized_as_confluent_does() -> None:
    assert [normalize_kms_type(t) for t in ("aws-kms", "AWS", "azure", "gcp-kms", "hcvault", "local-kms")] == [
        "aws-kms", "aws-kms", "azure-kms", "gcp-kms", "hcvault", "local-kms",
    ]  # fmt: skip
