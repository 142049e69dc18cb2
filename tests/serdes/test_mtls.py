"""Mutual TLS: the registry served with a server certificate and ``--tls-client-auth required`` (client
certificates signed by a CA made here with ``cryptography``); the sync and async clients connect with
confluent-kafka's ``ssl.*`` keys (an encrypted client key included), as confluent-kafka's own client does, and
a client without a certificate is refused."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient

from serdes import AsyncRegistryClient, RegistryClient, RegistryUnavailableError
from tests.serdes.round_trips import avro_round_trip, avro_round_trip_async
from tests.support.credentials import Pki
from tests.support.registry_process import RegistryProcess

SCHEMA = {"type": "record", "name": "Secret", "fields": [{"name": "v", "type": "string"}]}
KEY_PASSWORD = "key-pw"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A CA, a server certificate for 127.0.0.1 and a client certificate (encrypted key), as PEM files."""
    made = Pki(tmp_path_factory.mktemp("pki")).make()
    client_cert, client_key = made.client("serdes-client", password=KEY_PASSWORD)
    server_cert, server_key = made.server
    return {
        "ca.crt": made.ca,
        "server.crt": server_cert,
        "server.key": server_key,
        "client.crt": client_cert,
        "client.key": client_key,
    }


@pytest.fixture(scope="module")
def mtls_registry(pki: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``schemakit serve`` over HTTPS that requires a client certificate signed by the CA."""
    rp = RegistryProcess.on_sqlite(tmp_path_factory.mktemp("mtls-registry"))
    rp.extra_args = ["--tls-cert", pki["server.crt"], "--tls-key", pki["server.key"]]
    rp.extra_args += ["--tls-client-ca", pki["ca.crt"], "--tls-client-auth", "required"]
    rp.scheme, rp.probe = "https", {"verify": _context(pki)}
    rp.start()
    yield rp.url
    rp.stop()


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
    with (
        RegistryClient.from_config(_conf(mtls_registry, pki)) as writer,
        RegistryClient(
            mtls_registry, verify=pki["ca.crt"], cert=(pki["client.crt"], pki["client.key"]), key_password=KEY_PASSWORD
        ) as reader,
    ):
        assert avro_round_trip(writer, reader, SCHEMA, {"v": "s3cret"}, "mtls-sync") == {"v": "s3cret"}
    assert SchemaRegistryClient(_conf(mtls_registry, pki)).get_subjects() == ["mtls-sync-value"]


def test_async_client_with_a_client_certificate(mtls_registry: str, pki: dict[str, str]) -> None:
    async def main() -> Any:
        conf = _conf(mtls_registry, pki)
        async with AsyncRegistryClient.from_config(conf) as writer, AsyncRegistryClient.from_config(conf) as reader:
            return await avro_round_trip_async(writer, reader, SCHEMA, {"v": "x"}, "mtls-async")

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
