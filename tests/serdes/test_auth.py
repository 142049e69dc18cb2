"""Registry client authentication, sync and async, configured with confluent-kafka's keys: an auth gateway (a real
HTTP server in front of the real registry) lets through only what a correctly authenticating client sends, and an
OAuth token endpoint started here issues short-lived tokens. confluent-kafka's own client, given the same
configuration, sends the same headers."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient

from serdes import AsyncRegistryClient, OAuthTokenError, RegistryClient, RegistryError
from tests.serdes.http_servers import AuthGateway, HttpServer, TokenEndpoint, basic
from tests.serdes.round_trips import avro_round_trip, avro_round_trip_async

SCHEMA = {"type": "record", "name": "Ping", "fields": [{"name": "n", "type": "long"}]}


@pytest.fixture
def servers() -> Iterator[list[HttpServer]]:
    started: list[HttpServer] = []
    yield started
    for s in started:
        s.close()


@pytest.fixture
def gateway(registry_url: str, servers: list[HttpServer]) -> Callable[[Callable[[dict[str, str]], bool]], AuthGateway]:
    def make(allow: Callable[[dict[str, str]], bool]) -> AuthGateway:
        gw = AuthGateway(registry_url, allow)
        servers.append(gw)
        return gw

    return make


@pytest.fixture
def token_endpoint(servers: list[HttpServer]) -> Callable[..., TokenEndpoint]:
    def make(secret: str = "app-secret", expires_in: float = 3600) -> TokenEndpoint:
        ep = TokenEndpoint("app", secret, "schema_registry", expires_in)
        servers.append(ep)
        return ep

    return make


def oauth_conf(token_url: str, registry: str, **extra: Any) -> dict[str, Any]:
    return {
        "url": registry,
        "bearer.auth.credentials.source": "OAUTHBEARER",
        "bearer.auth.issuer.endpoint.url": token_url,
        "bearer.auth.client.id": "app",
        "bearer.auth.client.secret": "app-secret",
        "bearer.auth.scope": "schema_registry",
        "bearer.auth.logical.cluster": "lsrc-1",
        **extra,
    }


def _round_trip(conf: dict[str, Any], topic: str) -> Any:
    """Serialize with one client and deserialize with another built from the same configuration (so the schema
    is fetched over the wire too, not found in the first client's cache)."""
    with RegistryClient.from_config(conf) as writer_client, RegistryClient.from_config(conf) as reader_client:
        return avro_round_trip(writer_client, reader_client, SCHEMA, {"n": 7}, topic)


# -- basic -------------------------------------------------------------------------------------------------------


def test_basic_auth_from_confluent_config(gateway, topic: str) -> None:
    gw = gateway(lambda h: h.get("Authorization") == basic("alice", "s3cret"))
    conf = {"url": gw.url, "basic.auth.credentials.source": "USER_INFO", "basic.auth.user.info": "alice:s3cret"}
    assert _round_trip(conf, topic) == {"n": 7}
    assert len(gw.requests) == 2 and gw.rejected == 0  # register, then the schema fetched by id
    assert set(gw.authorizations()) == {basic("alice", "s3cret")}
    with (
        RegistryClient.from_config({**conf, "basic.auth.user.info": "alice:wrong", "max.retries": 3}) as c,
        pytest.raises(RegistryError) as e,
    ):
        c.get_subjects()
    assert (e.value.status, e.value.error_code, e.value.message) == (401, 401, "Unauthorized")
    assert gw.rejected == 1  # a 401 is not retried


def test_basic_auth_async(gateway, topic: str) -> None:
    gw = gateway(lambda h: h.get("Authorization") == basic("alice", "s3cret"))
    conf = {"url": gw.url, "basic.auth.user.info": "alice:s3cret"}

    async def main() -> Any:
        async with AsyncRegistryClient.from_config(conf) as w, AsyncRegistryClient.from_config(conf) as r:
            return await avro_round_trip_async(w, r, SCHEMA, {"n": 1}, topic)

    assert asyncio.run(main()) == {"n": 1}
    assert len(gw.requests) == 2 and gw.rejected == 0


# -- static bearer -----------------------------------------------------------------------------------------------


def test_static_bearer_sends_the_same_headers_as_confluent_kafka(gateway) -> None:
    gw = gateway(lambda h: h.get("Authorization") == "Bearer static-1")
    conf = {
        "url": gw.url,
        "bearer.auth.credentials.source": "STATIC_TOKEN",
        "bearer.auth.token": "static-1",
        "bearer.auth.logical.cluster": "lsrc-123",
        "bearer.auth.identity.pool.id": "pool-a,pool-b",
    }
    with RegistryClient.from_config(conf) as c:
        c.get_subjects()

    async def main() -> None:
        async with AsyncRegistryClient.from_config(conf) as c:
            await c.get_subjects()

    asyncio.run(main())
    SchemaRegistryClient(conf).get_subjects()
    names = ("Authorization", "target-sr-cluster", "Confluent-Identity-Pool-Id")
    sent = [tuple(h.get(n) for n in names) for _, _, h, _ in gw.requests]
    assert sent == [("Bearer static-1", "lsrc-123", "pool-a,pool-b")] * 3
    assert gw.rejected == 0


# -- OAuth 2 client credentials ----------------------------------------------------------------------------------


def test_oauth_token_is_fetched_and_refreshed_before_it_expires(gateway, token_endpoint) -> None:
    tokens = token_endpoint(expires_in=2)  # due for refresh after 1.6 s, 80% of its life (confluent-kafka's rule)
    gw = gateway(lambda h: tokens.valid(h.get("Authorization")))
    with RegistryClient.from_config(oauth_conf(tokens.url, gw.url)) as c:
        c.get_subjects()
        c.get_subjects()
        issued, expiry = tokens.issued["tok-1"]
        time.sleep(max(0.0, issued + 1.65 - time.monotonic()))  # tok-1 is still valid for 0.35 s
        c.get_subjects()
    assert list(tokens.issued) == ["tok-1", "tok-2"]
    assert tokens.issued["tok-2"][0] < expiry  # fetched while tok-1 was still valid
    assert gw.authorizations() == ["Bearer tok-1", "Bearer tok-1", "Bearer tok-2"]
    assert gw.rejected == 0
    method, _, headers, body = tokens.requests[0]
    assert (method, headers["Authorization"], body) == (
        "POST",
        basic("app", "app-secret"),
        b"grant_type=client_credentials&scope=schema_registry",
    )
    assert headers["Content-Type"] == "application/x-www-form-urlencoded"


def test_oauth_async_tasks_share_one_token_fetch(gateway, token_endpoint) -> None:
    tokens = token_endpoint()
    gw = gateway(lambda h: tokens.valid(h.get("Authorization")))

    async def main() -> list[list[str]]:
        async with AsyncRegistryClient.from_config(oauth_conf(tokens.url, gw.url)) as c:
            return await asyncio.gather(*(c.get_subjects() for _ in range(20)))

    results = asyncio.run(main())
    assert len(results) == 20 and all(r == results[0] for r in results)
    assert list(tokens.issued) == ["tok-1"]
    assert gw.authorizations() == ["Bearer tok-1"] * 20


def test_oauth_threads_share_one_token_fetch(gateway, token_endpoint) -> None:
    tokens = token_endpoint()
    gw = gateway(lambda h: tokens.valid(h.get("Authorization")))
    start = threading.Barrier(8)
    errors: list[BaseException] = []
    with RegistryClient.from_config(oauth_conf(tokens.url, gw.url)) as c:

        def work() -> None:
            try:
                start.wait()
                c.get_subjects()
            except BaseException as e:  # re-raised below
                errors.append(e)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    assert list(tokens.issued) == ["tok-1"]
    assert gw.authorizations() == ["Bearer tok-1"] * 8


def test_oauth_refused_credentials_raise_oauth_token_error(gateway, token_endpoint) -> None:
    tokens = token_endpoint(secret="another-secret")
    gw = gateway(lambda h: tokens.valid(h.get("Authorization")))
    with RegistryClient.from_config(oauth_conf(tokens.url, gw.url)) as c, pytest.raises(OAuthTokenError) as e:
        c.get_subjects()
    assert e.value.status == 401
    assert f"OAuth token endpoint {tokens.url} refused the client credentials of 'app'" in str(e.value)
    assert "bad client credentials" in str(e.value)
    assert len(tokens.requests) == 1  # a refusal is not retried
    assert gw.requests == []  # nothing was sent to the registry


def test_oauth_token_endpoint_outage_is_retried(gateway, token_endpoint) -> None:
    tokens = token_endpoint()
    tokens.fail_next = 2
    gw = gateway(lambda h: tokens.valid(h.get("Authorization")))
    conf = oauth_conf(tokens.url, gw.url, **{"retries.wait.ms": 1, "max.retries": 2})
    with RegistryClient.from_config(conf) as c:
        c.get_subjects()
    assert len(tokens.requests) == 3 and list(tokens.issued) == ["tok-1"]
    tokens.fail_next = 5
    with RegistryClient.from_config(conf) as c, pytest.raises(OAuthTokenError) as e:
        c.get_subjects()
    assert "gave no token after 3 tries (HTTP 503" in str(e.value)


def test_a_401_gets_one_retry_with_a_new_token(gateway, token_endpoint) -> None:
    tokens = token_endpoint()
    gw = gateway(lambda h: tokens.valid(h.get("Authorization")))
    with RegistryClient.from_config(oauth_conf(tokens.url, gw.url)) as c:
        c.get_subjects()
        tokens.revoke("tok-1")  # the identity provider revoked it before its expiry
        c.get_subjects()
    assert gw.authorizations() == ["Bearer tok-1", "Bearer tok-1", "Bearer tok-2"]
    assert gw.rejected == 1


def test_confluent_kafka_oauth_sends_what_we_send(gateway, token_endpoint) -> None:
    tokens = token_endpoint()
    gw = gateway(lambda h: tokens.valid(h.get("Authorization")))
    conf = oauth_conf(tokens.url, gw.url)
    SchemaRegistryClient(conf).get_subjects()
    with RegistryClient.from_config(conf) as c:
        c.get_subjects()
    ck_headers, our_headers = gw.requests[0][2], gw.requests[1][2]
    assert (ck_headers["Authorization"], ck_headers["target-sr-cluster"]) == ("Bearer tok-1", "lsrc-1")
    assert (our_headers["Authorization"], our_headers["target-sr-cluster"]) == ("Bearer tok-2", "lsrc-1")
    ck_token_form, our_token_form = sorted(tokens.requests[0][3].split(b"&")), sorted(tokens.requests[1][3].split(b"&"))
    assert ck_token_form == our_token_form == [b"grant_type=client_credentials", b"scope=schema_registry"]


# -- custom provider and configuration errors --------------------------------------------------------------------


def test_custom_bearer_provider_is_asked_before_every_request(gateway) -> None:
    gw = gateway(lambda h: h.get("Authorization", "").startswith("Bearer custom-"))
    calls: list[dict] = []

    def provider(config: dict) -> dict:
        calls.append(config)
        return {"bearer.auth.token": f"custom-{len(calls)}", "bearer.auth.logical.cluster": config["cluster"]}

    conf = {
        "url": gw.url,
        "bearer.auth.credentials.source": "CUSTOM",
        "bearer.auth.custom.provider.function": provider,
        "bearer.auth.custom.provider.config": {"cluster": "lsrc-9"},
    }
    with RegistryClient.from_config(conf) as c:
        c.get_subjects()
        c.get_subjects()
    assert gw.authorizations() == ["Bearer custom-1", "Bearer custom-2"]
    assert [h["target-sr-cluster"] for _, _, h, _ in gw.requests] == ["lsrc-9", "lsrc-9"]


@pytest.mark.parametrize(
    ("conf", "error", "message"),
    [
        ({"bearer.auth.credentials.source": "STATIC_TOKEN"}, ValueError, "STATIC_TOKEN needs bearer.auth.token"),
        (
            {"bearer.auth.credentials.source": "OAUTHBEARER", "bearer.auth.client.id": "a"},
            ValueError,
            "OAUTHBEARER needs bearer.auth.issuer.endpoint.url, bearer.auth.client.secret",
        ),
        ({"bearer.auth.credentials.source": "KERBEROS"}, ValueError, "unsupported bearer.auth.credentials.source"),
        (
            {"basic.auth.user.info": "a:b", "bearer.auth.credentials.source": "STATIC_TOKEN", "bearer.auth.token": "t"},
            ValueError,
            "not both",
        ),
        ({"basic.auth.credentials.source": "USER_INFO"}, ValueError, "needs basic.auth.user.info"),
        ({"basic.auth.user.info": "no-colon"}, ValueError, "must be 'user:password'"),
        ({"ssl.key.location": "/k.pem"}, ValueError, "ssl.certificate.location is required"),
        ({"cache.capacity": "ten"}, TypeError, "cache.capacity must be a number"),
        (
            {
                "bearer.auth.credentials.source": "CUSTOM",
                "bearer.auth.custom.provider.function": "f",
                "bearer.auth.custom.provider.config": {},
            },
            TypeError,
            "must be callable",
        ),
    ],
)
def test_configuration_errors_name_the_key(conf: dict, error: type[Exception], message: str) -> None:
    for cls in (RegistryClient, AsyncRegistryClient):
        with pytest.raises(error, match=message.replace(".", r"\.").replace("(", r"\(")):
            cls.from_config({"url": "http://127.0.0.1:1", **conf})


def test_credentials_in_the_url_and_in_the_config_conflict() -> None:
    with pytest.raises(ValueError, match="both in the URL and as auth/user_info"):
        RegistryClient.from_config({"url": "http://u:p@127.0.0.1:1", "basic.auth.user.info": "a:b"})
