"""RegistryClient: retries, failover, auth, errors and caches, against real HTTP servers (a scripted one started
here for exact status sequences, and the real registry)."""

from __future__ import annotations

import json
import ssl
import subprocess
import threading

import pytest

from serdes import AvroSerializer, RegistryClient, RegistryError, RegistryUnavailableError, Schema
from tests.serdes.http_servers import basic, dead_url

SCHEMA_BODY = {"schema": '"string"'}


def test_retries_503_then_succeeds(scripted) -> None:
    srv = scripted(
        (503, {"error_code": 50003, "message": "busy"}),
        (503, {"error_code": 50003, "message": "busy"}),
        (200, SCHEMA_BODY),
    )
    with RegistryClient(srv.url, max_retries=3, retry_backoff=0.001) as c:
        assert c.get_schema(1) == Schema('"string"')
    assert [r[1] for r in srv.requests] == ["/schemas/ids/1"] * 3


@pytest.mark.parametrize("status", [408, 429, 500, 502, 504])
def test_every_retriable_status_is_retried(scripted, status: int) -> None:
    srv = scripted((status, {"error_code": status, "message": "try later"}), (200, SCHEMA_BODY))
    with RegistryClient(srv.url, max_retries=1, retry_backoff=0.001) as c:
        assert c.get_schema(5).schema_str == '"string"'
    assert len(srv.requests) == 2


def test_gives_up_after_max_retries_with_the_last_status(scripted) -> None:
    srv = scripted((503, {"error_code": 50003, "message": "still busy"}))
    with RegistryClient(srv.url, max_retries=2, retry_backoff=0.001) as c, pytest.raises(RegistryUnavailableError) as e:
        c.get_schema(1)
    assert len(srv.requests) == 3
    assert (e.value.status, e.value.error_code) == (503, 50003)
    assert "still busy" in str(e.value)


def test_client_errors_are_not_retried_and_carry_the_confluent_code(scripted) -> None:
    srv = scripted((404, {"error_code": 40403, "message": "Schema 9 not found"}))
    with RegistryClient(srv.url, max_retries=3, retry_backoff=0.001) as c, pytest.raises(RegistryError) as e:
        c.get_schema(9)
    assert len(srv.requests) == 1
    assert (e.value.status, e.value.error_code, e.value.message) == (404, 40403, "Schema 9 not found")
    assert not isinstance(e.value, RegistryUnavailableError)


def test_non_json_error_body_gets_code_minus_one(scripted) -> None:
    srv = scripted((400, b"<html>bad gateway config</html>"))
    with RegistryClient(srv.url, max_retries=0) as c, pytest.raises(RegistryError) as e:
        c.get_subjects()
    assert (e.value.status, e.value.error_code) == (400, -1)
    assert "bad gateway config" in e.value.message


def test_fails_over_from_a_dead_url_and_sticks_to_the_live_one(scripted) -> None:
    srv = scripted((200, ["a", "b"]))
    with RegistryClient(f"{dead_url()},{srv.url}", max_retries=0) as c:
        assert c.get_subjects() == ["a", "b"]
        assert c.get_subjects() == ["a", "b"]
    assert len(srv.requests) == 2


def test_fails_over_from_a_503_url_to_the_next(scripted) -> None:
    busy = scripted((503, {"error_code": 50003, "message": "busy"}))
    ok = scripted((200, [1, 2]))
    with RegistryClient([busy.url, ok.url], max_retries=0) as c:
        assert c.get_versions("s") == [1, 2]
    assert len(busy.requests) == 1 and len(ok.requests) == 1


def test_no_url_answers(scripted) -> None:
    a, b = dead_url(), dead_url()
    with RegistryClient([a, b], max_retries=1, retry_backoff=0.001) as c, pytest.raises(RegistryUnavailableError) as e:
        c.get_subjects()
    assert e.value.status == -1
    assert a in str(e.value) and b in str(e.value) and "ConnectError" in str(e.value)


def test_basic_auth_from_user_info(scripted) -> None:
    srv = scripted((200, []))
    with RegistryClient(srv.url, user_info="alice:s3cret") as c:
        c.get_subjects()
    assert srv.requests[0][2]["Authorization"] == basic("alice", "s3cret")


def test_basic_auth_from_credentials_in_the_url(scripted) -> None:
    srv = scripted((200, []))
    host = srv.url.removeprefix("http://")
    with RegistryClient(f"http://bob:p%40ss@{host}") as c:
        assert c.urls == [srv.url]  # credentials are not kept in the URL
        c.get_subjects()
    assert srv.requests[0][2]["Authorization"] == basic("bob", "p@ss")


def test_from_confluent_config(scripted) -> None:
    srv = scripted((200, []))
    c = RegistryClient.from_config(
        {
            "url": srv.url,
            "basic.auth.credentials.source": "USER_INFO",
            "basic.auth.user.info": "u:p",
            "max.retries": 0,
            "retries.wait.ms": 5,
        }
    )
    with c:
        c.get_subjects()
        assert c.max_retries == 0 and c.retry_backoff == 0.005
    assert srv.requests[0][2]["Authorization"] == basic("u", "p")
    with pytest.raises(ValueError, match=r"unsupported registry client configuration: bogus\.key"):
        RegistryClient.from_config({"url": srv.url, "bogus.key": 1})


def test_requests_use_the_confluent_content_types(scripted) -> None:
    srv = scripted((200, {"id": 3, "version": 1}))
    with RegistryClient(srv.url) as c:
        assert c.register("orders-value", Schema('"long"')) == 3
    method, path, headers, body = srv.requests[0]
    assert (method, path) == ("POST", "/subjects/orders-value/versions?normalize=false")
    assert headers["Content-Type"] == "application/vnd.schemaregistry.v1+json"
    assert "application/vnd.schemaregistry.v1+json" in headers["Accept"]
    assert json.loads(body) == {"schema": '"long"'}


def test_schema_by_id_and_registrations_are_cached_forever(scripted) -> None:
    srv = scripted((200, SCHEMA_BODY))
    with RegistryClient(srv.url) as c:
        assert c.get_schema(1) is c.get_schema(1)
    assert len(srv.requests) == 1
    srv2 = scripted((200, {"id": 4, "version": 2}))
    with RegistryClient(srv2.url) as c:
        assert c.register("s", Schema('"int"')) == c.register("s", Schema('"int"')) == 4
        assert c.register_full("s", Schema('"int"')).version == 2
    assert len(srv2.requests) == 1


def test_latest_version_cache_honours_the_ttl(scripted) -> None:
    latest = {"subject": "s", "version": 1, "id": 7, "schema": '"string"'}
    srv = scripted((200, latest))
    with RegistryClient(srv.url, latest_ttl=None) as c:
        assert c.get_latest_version("s").schema_id == 7
        assert c.get_latest_version("s").version == 1
    assert len(srv.requests) == 1
    with RegistryClient(srv.url, latest_ttl=0) as c:
        c.get_latest_version("s")
        c.get_latest_version("s")
    assert len(srv.requests) == 3


def test_subject_names_are_url_encoded(scripted) -> None:
    srv = scripted((200, [1]))
    with RegistryClient(srv.url) as c:
        c.get_versions("a/b c")
    assert srv.requests[0][1] == "/subjects/a%2Fb%20c/versions"


def test_rejects_bad_urls() -> None:
    with pytest.raises(ValueError, match="must start with http"):
        RegistryClient("localhost:8081")
    with pytest.raises(ValueError, match="at least one"):
        RegistryClient(" , ")


def test_concurrent_threads_share_one_client(scripted) -> None:
    srv = scripted((200, SCHEMA_BODY))
    errors: list[BaseException] = []
    with RegistryClient(srv.url) as c:

        def work(i: int) -> None:
            try:
                for k in range(20):
                    assert c.get_schema(i * 100 + k).schema_str == '"string"'
            except BaseException as e:  # collected and re-raised in the main thread
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    assert len(srv.requests) == 80


def test_serializer_passes_normalize_and_looks_up_without_auto_register(scripted) -> None:
    srv = scripted((200, {"id": 11, "version": 1, "subject": "s", "schema": '"string"'}))
    with RegistryClient(srv.url) as c:
        assert AvroSerializer(c, "string", subject="s", normalize=True)("x")[:5] == b"\x00\x00\x00\x00\x0b"
        AvroSerializer(c, "string", subject="s2", auto_register=False)("x")
    assert [(m, p) for m, p, _, _ in srv.requests] == [
        ("POST", "/subjects/s/versions?normalize=true"),
        ("POST", "/subjects/s2?normalize=false"),
    ]


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A self-signed CA-less certificate for 127.0.0.1, made with the openssl CLI."""
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return {"cert": str(cert), "key": str(key)}


def test_tls_with_a_ca_bundle(scripted, tls_files) -> None:
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(tls_files["cert"], tls_files["key"])
    srv = scripted((200, ["tls-subject"]), tls=server_ctx)
    with RegistryClient(srv.url, verify=tls_files["cert"], max_retries=0) as c:
        assert c.get_subjects() == ["tls-subject"]
    with RegistryClient(srv.url, max_retries=0) as c, pytest.raises(RegistryUnavailableError) as e:
        c.get_subjects()  # the system trust store does not know the self-signed certificate
    assert "CERTIFICATE_VERIFY_FAILED" in str(e.value)
    with RegistryClient.from_config({"url": srv.url, "ssl.ca.location": tls_files["cert"]}) as c:
        assert c.get_subjects() == ["tls-subject"]


# -- against the real registry -------------------------------------------------------------------------------


def test_real_registry_register_lookup_and_versions(registry_url: str, topic: str) -> None:
    with RegistryClient(registry_url) as c:
        v1 = Schema('{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}')
        v2 = Schema(
            '{"type":"record","name":"R","fields":[{"name":"a","type":"int"},'
            '{"name":"b","type":"string","default":""}]}'
        )
        id1 = c.register(topic, v1)
        id2 = c.register(topic, v2)
        assert id1 != id2
        assert c.get_versions(topic) == [1, 2]
        assert c.lookup(topic, v1).version == 1
        assert c.get_latest_version(topic).schema_id == id2
        assert c.get_version(topic, 1).schema_id == id1
        assert json.loads(c.get_schema(id1).schema_str)["fields"] == [{"name": "a", "type": "int"}]
        assert topic in c.get_subjects()
        with pytest.raises(RegistryError) as e:
            c.lookup(topic, Schema('"boolean"'))
        assert e.value.status == 404 and e.value.error_code in (40401, 40403)


def test_real_registry_failover_with_first_url_dead(registry_url: str, topic: str) -> None:
    with RegistryClient([dead_url(), registry_url], max_retries=0) as c:
        schema_id = c.register(topic, Schema('"string"'))
        assert c.get_schema(schema_id) == Schema('"string"')
        assert c.preferred_url == registry_url


def test_real_registry_restart_on_the_same_port_is_retried(start_registry) -> None:
    rp = start_registry()
    with RegistryClient(rp.url, max_retries=2, retry_backoff=0.01) as c:
        first = c.register("restart-value", Schema('"string"'))
        rp.restart()  # the pooled keep-alive connection is now dead; the client must reconnect
        assert c.get_versions("restart-value") == [1]
        assert c.register("restart-other-value", Schema('"long"')) != first
