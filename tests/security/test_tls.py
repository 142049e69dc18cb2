"""HTTPS and client certificates on a real server: serdes' ``RegistryClient`` and confluent-kafka's client connect with
TLS and mTLS; a verified certificate's subject is the principal."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable

import httpx
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from serdes import RegistryClient, RegistryError
from serdes import Schema as SerdesSchema
from tests.support.credentials import Pki, UsersFile
from tests.support.registry_process import RegistryProcess

APP = "CN=orders-app,O=Acme"
#: how a refused client certificate shows on the client (with TLS 1.3 the server's refusal comes after the
#: client's side of the handshake is done, as a closed connection)
REFUSED = (httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError)


@pytest.fixture
def mtls_registry(start_registry: Callable[..., RegistryProcess], pki: Pki, users_file: UsersFile) -> RegistryProcess:
    users_file.user("ops", "ops-pw").allow("ops", "Write", ".*").allow(APP, "Write", "Subject:orders-")
    return start_registry(
        None,
        "--auth",
        "mtls,basic",
        "--users-file",
        users_file.save(),
        *pki.serve_options(),
        scheme="https",
        probe={"verify": pki.context(), "auth": ("ops", "ops-pw")},
    )


def test_serdes_client_with_a_client_certificate(mtls_registry: RegistryProcess, pki: Pki) -> None:
    assert mtls_registry.url.startswith("https://")
    with RegistryClient(mtls_registry.url, verify=pki.ca, cert=pki.client("orders-app")) as client:
        schema_id = client.register("orders-value", SerdesSchema('"string"'))
        assert client.get_latest_version("orders-value").schema_id == schema_id
        assert client.get_subjects() == ["orders-value"]
        with pytest.raises(RegistryError) as e:
            client.register("payments-value", SerdesSchema('"string"'))
        assert (e.value.status, e.value.error_code) == (403, 40301)
        assert str(e.value.message) == "User is denied operation Write on Subject: payments-value"
    log = mtls_registry.log_file.read_text()
    assert (
        f'audit outcome=denied principal="{APP}" mechanism=mtls operation=Write resource=Subject:payments-value' in log
    )


def test_confluent_client_with_tls_and_a_client_certificate(mtls_registry: RegistryProcess, pki: Pki) -> None:
    cert, key = pki.client("orders-app")
    client = SchemaRegistryClient(
        {"url": mtls_registry.url, "ssl.ca.location": pki.ca, "ssl.certificate.location": cert, "ssl.key.location": key}
    )
    schema_id = client.register_schema("orders-key", Schema('"long"', "AVRO"))
    assert client.get_schema(schema_id).schema_str == '"long"'
    other_cert, other_key = pki.client("billing-app")
    other = SchemaRegistryClient(
        {
            "url": mtls_registry.url,
            "ssl.ca.location": pki.ca,
            "ssl.certificate.location": other_cert,
            "ssl.key.location": other_key,
        }
    )
    with pytest.raises(SchemaRegistryError) as e:
        other.get_latest_version("orders-key")
    assert (e.value.http_status_code, e.value.error_code) == (403, 40301)
    assert e.value.error_message == "User is denied operation Read on Subject: orders-key"
    # TLS with basic credentials instead of a certificate
    basic = SchemaRegistryClient(
        {"url": mtls_registry.url, "ssl.ca.location": pki.ca, "basic.auth.user.info": "ops:ops-pw"}
    )
    assert "orders-key" in basic.get_subjects()


def test_without_a_trusted_certificate(mtls_registry: RegistryProcess, pki: Pki) -> None:
    anonymous = httpx.get(mtls_registry.url + "/subjects", verify=pki.context())
    assert anonymous.status_code == 401
    assert anonymous.json() == {
        "error_code": 401,
        "message": "Unauthorized: authentication required: basic credentials or a client certificate",
    }
    with pytest.raises(REFUSED):  # a certificate from another CA fails the handshake
        httpx.get(mtls_registry.url + "/subjects", verify=pki.context(pki.untrusted_client("orders-app")))
    with pytest.raises(httpx.ConnectError):  # the server's certificate is checked by the client too
        httpx.get(mtls_registry.url + "/subjects", verify=Pki.system_context(pki.client("orders-app")))
    with pytest.raises(httpx.HTTPError):  # no plain HTTP on the TLS port
        httpx.get(mtls_registry.url.replace("https://", "http://") + "/subjects")


def test_required_client_certificates(start_registry: Callable[..., RegistryProcess], pki: Pki) -> None:
    client_cert = pki.client("anyone")
    rp = start_registry(
        None,
        *pki.serve_options(),
        "--tls-client-auth",
        "required",
        scheme="https",
        probe={"verify": pki.context(client_cert)},
    )
    # no --auth: the certificate is only checked by the handshake, and everyone with one may do everything
    assert httpx.get(rp.url + "/subjects", verify=pki.context(client_cert)).json() == []
    with pytest.raises(REFUSED):
        httpx.get(rp.url + "/subjects", verify=pki.context())


def test_slow_headers_over_mtls_are_408_and_others_are_served(
    start_registry: Callable[..., RegistryProcess], pki: Pki
) -> None:
    """The header deadline (``--header-timeout-ms``) holds under the TLS protocol that reads client certificates."""
    node = start_registry(
        None,
        *pki.serve_options(),
        "--header-timeout-ms",
        "1000",
        scheme="https",
        probe={"verify": pki.context()},
    )
    port = int(node.url.rsplit(":", 1)[1])
    context = pki.context(pki.client("slow"))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as s,
    ):
        s.sendall(b"GET /subjects HTTP/1.1\r\nhost: 127.0.0.1\r\n")  # never the blank line
        assert httpx.get(f"{node.url}/subjects", verify=pki.context()).json() == []
        answer = b""
        while part := s.recv(65536):
            answer += part
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 ") and b"connection: close" in head.lower()
    assert json.loads(body) == {
        "error_code": 408,
        "message": "Request headers not received within 1 s (--header-timeout-ms)",
    }
