"""Mutual TLS: the registry app served by uvicorn with a server certificate and ``ssl_cert_reqs=CERT_REQUIRED``
(client certificates signed by a CA made here with ``cryptography``); the sync and async clients connect with
confluent-kafka's ``ssl.*`` keys (an encrypted client key included), as confluent-kafka's own client does, and
a client without a certificate is refused."""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from serdes import (
    AsyncAvroDeserializer,
    AsyncAvroSerializer,
    AsyncRegistryClient,
    AvroDeserializer,
    AvroSerializer,
    MessageField,
    RegistryClient,
    RegistryUnavailableError,
    SerializationContext,
)
from tests.support.ports import free_port

SCHEMA = {"type": "record", "name": "Secret", "fields": [{"name": "v", "type": "string"}]}
KEY_PASSWORD = "key-pw"

# Runs the registry's ASGI app under uvicorn with TLS that requires a client certificate.
SERVE = """
import ssl, sys, uvicorn
from registry.config import RegistryConfig
from registry.server import build_app, check_topics
log, port, cert, key, ca = sys.argv[1:]
config = RegistryConfig(log_url=log, host="127.0.0.1", port=int(port))
check_topics(config)
uvicorn.run(build_app(config), host="127.0.0.1", port=int(port), lifespan="on", log_level="warning",
            ssl_certfile=cert, ssl_keyfile=key, ssl_ca_certs=ca, ssl_cert_reqs=ssl.CERT_REQUIRED)
"""


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _issue(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    ca: bool = False,
    server: bool = False,
) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    elif server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False
        ).add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    else:
        builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _write(path: Path, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey, password: str | None = None) -> None:
    path.with_suffix(".crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    encryption = serialization.BestAvailableEncryption(password.encode()) if password else serialization.NoEncryption()
    path.with_suffix(".key").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    )


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A CA, a server certificate for 127.0.0.1 and a client certificate (encrypted key), as PEM files."""
    d = tmp_path_factory.mktemp("pki")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _issue("schemakit test CA", ca_key, _name("schemakit test CA"), ca_key, ca=True)
    _write(d / "ca", ca, ca_key)
    server_key, client_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    _write(d / "server", _issue("127.0.0.1", server_key, ca.subject, ca_key, server=True), server_key)
    _write(d / "client", _issue("serdes-client", client_key, ca.subject, ca_key), client_key, KEY_PASSWORD)
    return {name: str(d / name) for name in ("ca.crt", "server.crt", "server.key", "client.crt", "client.key")}


@pytest.fixture(scope="module")
def mtls_registry(pki: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    d = tmp_path_factory.mktemp("mtls-registry")
    port = free_port()
    log = (d / "server.log").open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            SERVE,
            f"sqlite:///{d}/data",
            str(port),
            pki["server.crt"],
            pki["server.key"],
            pki["ca.crt"],
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"https://127.0.0.1:{port}"
    probe = httpx.Client(verify=_context(pki), timeout=1.0)
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"registry exited: {(d / 'server.log').read_text()}")
            try:
                if probe.get(url + "/").status_code == 200:
                    break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield url
    finally:
        probe.close()
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


def _context(pki: dict[str, str]) -> Any:
    from serdes.client_config import ssl_context

    return ssl_context(pki["ca.crt"], (pki["client.crt"], pki["client.key"]), KEY_PASSWORD)


def _conf(url: str, pki: dict[str, str]) -> dict[str, Any]:
    return {
        "url": url,
        "ssl.ca.location": pki["ca.crt"],
        "ssl.certificate.location": pki["client.crt"],
        "ssl.key.location": pki["client.key"],
        "ssl.key.password": KEY_PASSWORD,
    }


def test_sync_client_with_a_client_certificate(mtls_registry: str, pki: dict[str, str]) -> None:
    ctx = SerializationContext("mtls-sync", MessageField.VALUE)
    with RegistryClient.from_config(_conf(mtls_registry, pki)) as c:
        data = AvroSerializer(c, SCHEMA)({"v": "s3cret"}, ctx)
    with RegistryClient(
        mtls_registry, verify=pki["ca.crt"], cert=(pki["client.crt"], pki["client.key"]), key_password=KEY_PASSWORD
    ) as c:
        assert AvroDeserializer(c)(data, ctx) == {"v": "s3cret"}
    assert SchemaRegistryClient(_conf(mtls_registry, pki)).get_subjects() == ["mtls-sync-value"]


def test_async_client_with_a_client_certificate(mtls_registry: str, pki: dict[str, str]) -> None:
    ctx = SerializationContext("mtls-async", MessageField.VALUE)

    async def main() -> Any:
        async with AsyncRegistryClient.from_config(_conf(mtls_registry, pki)) as c:
            data = await AsyncAvroSerializer(c, SCHEMA)({"v": "x"}, ctx)
        async with AsyncRegistryClient.from_config(_conf(mtls_registry, pki)) as c:
            return await AsyncAvroDeserializer(c)(data, ctx)

    assert asyncio.run(main()) == {"v": "x"}


def test_a_client_without_a_certificate_is_refused(mtls_registry: str, pki: dict[str, str]) -> None:
    with (
        RegistryClient.from_config({"url": mtls_registry, "ssl.ca.location": pki["ca.crt"], "max.retries": 0}) as c,
        pytest.raises(RegistryUnavailableError) as e,
    ):
        c.get_subjects()
    assert e.value.status == -1 and mtls_registry in str(e.value)
    with (
        RegistryClient.from_config({"url": mtls_registry, "max.retries": 0}) as c,
        pytest.raises(RegistryUnavailableError, match="CERTIFICATE_VERIFY_FAILED"),
    ):
        c.get_subjects()  # and the server's certificate is checked against the CA given, not the system's
