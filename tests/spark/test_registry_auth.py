"""Registry options (confluent-kafka's keys) reach both engines: executors fetch writer schemas through an auth
gateway (a real HTTP server in front of the real registry that lets through only correctly authenticated
requests), from an OAuth token endpoint started here, and over mutual TLS from a registry that requires a client
certificate. The secrets never show in the query plan."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from pyspark.sql import Row

from serdes import AvroSerializer, wire
from serdes.spark import from_registry
from tests.serdes.http_servers import AuthGateway, TokenEndpoint, basic
from tests.serdes.test_mtls import KEY_PASSWORD, mtls_registry, pki  # noqa: F401  (module fixtures)

V1 = {"type": "record", "name": "Ping", "namespace": "sk.auth", "fields": [{"name": "n", "type": "long"}]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "note", "type": "string", "default": "-"}]}
SECRET = "s3cret-Pa55"


@pytest.fixture
def gateways(registry_url: str) -> Iterator[Callable[..., AuthGateway]]:
    started: list = []

    def make(allow: Callable[[dict[str, str]], bool]) -> AuthGateway:
        gw = AuthGateway(registry_url, allow)
        started.append(gw)
        return gw

    yield make
    for server in started:
        server.close()


def header(headers: dict[str, str], name: str) -> str | None:
    return next((v for k, v in headers.items() if k.lower() == name.lower()), None)


def writer_fetches(gw: AuthGateway, schema_id: int) -> list[dict[str, str]]:
    """The headers of the writer-schema requests the gateway let through."""
    return [h for method, path, h, _ in gw.requests if path == f"/schemas/ids/{schema_id}"]


def decode(spark, frames: list[bytes], registry, subject: str, engine: str) -> list:
    df = spark.createDataFrame([(i, f) for i, f in enumerate(frames)], "n int, value binary").coalesce(1)
    col = from_registry("value", registry, subject=subject, engine=engine)
    plan = df.select(col)._jdf.queryExecution().toString()
    assert SECRET not in plan and "from_registry(value" in plan
    # sorted here, not with orderBy: its sampling job would decode the rows a second time, maybe in another worker
    return [r.o for r in sorted(df.select("n", col.alias("o")).collect(), key=lambda r: r.n)]


def test_basic_auth(spark, client, registry_url, subject, engine, gateways) -> None:
    gw = gateways(lambda h: header(h, "Authorization") == basic("ann", SECRET))
    frame = AvroSerializer(client, V1, subject=subject)({"n": 7})
    options = {"url": gw.url, "basic.auth.credentials.source": "USER_INFO", "basic.auth.user.info": f"ann:{SECRET}"}
    assert decode(spark, [frame], options, subject, engine) == [Row(n=7)]
    assert len(writer_fetches(gw, wire.read_schema_id(frame))) == 1 and gw.rejected == 0
    # the same credentials in the URL work too; wrong ones are refused before any query runs
    assert decode(spark, [frame], f"http://ann:{SECRET}@{gw.url.removeprefix('http://')}", subject, engine) == [
        Row(n=7)
    ]
    with pytest.raises(Exception, match="401"):
        from_registry("value", {"url": gw.url, "basic.auth.user.info": "ann:wrong"}, subject=subject, engine=engine)


def test_static_bearer_token_with_confluent_cloud_headers(spark, client, subject, engine, gateways) -> None:
    def allow(h: dict[str, str]) -> bool:
        return (
            header(h, "Authorization") == f"Bearer {SECRET}"
            and header(h, "target-sr-cluster") == "lsrc-42"
            and header(h, "Confluent-Identity-Pool-Id") == "pool-1"
        )

    gw = gateways(allow)
    frame = AvroSerializer(client, V1, subject=subject)({"n": 3})
    options = {
        "url": gw.url,
        "bearer.auth.credentials.source": "STATIC_TOKEN",
        "bearer.auth.token": SECRET,
        "bearer.auth.logical.cluster": "lsrc-42",
        "bearer.auth.identity.pool.id": "pool-1",
    }
    assert decode(spark, [frame], options, subject, engine) == [Row(n=3)]
    assert len(writer_fetches(gw, wire.read_schema_id(frame))) == 1 and gw.rejected == 0


def test_oauth_client_credentials_fetched_and_refreshed(spark, client, subject, engine, gateways) -> None:
    endpoint = TokenEndpoint("spark-app", SECRET, "schema_registry", expires_in=2.0)
    try:
        gw = gateways(lambda h: endpoint.valid(header(h, "Authorization")))
        options = {
            "url": gw.url,
            "bearer.auth.credentials.source": "OAUTHBEARER",
            "bearer.auth.issuer.endpoint.url": endpoint.url,
            "bearer.auth.client.id": "spark-app",
            "bearer.auth.client.secret": SECRET,
            "bearer.auth.scope": "schema_registry",
        }
        first = AvroSerializer(client, V1, subject=subject)({"n": 1})
        assert decode(spark, [first], options, subject, engine) == [Row(n=1)]
        issued = len(endpoint.issued)
        time.sleep(1.7)  # past 80% of the token's 2 s: the next registry call needs a new token
        second = AvroSerializer(client, V2, subject=subject)({"n": 2, "note": "x"})  # a new id: not cached yet
        assert decode(spark, [first, second], options, subject, engine) == [Row(n=1, note="-"), Row(n=2, note="x")]
        assert len(endpoint.issued) > issued
        assert gw.rejected == 0 and len(writer_fetches(gw, wire.read_schema_id(second))) == 1
    finally:
        endpoint.close()


def test_mutual_tls_with_a_ca_bundle(spark, engine, mtls_registry, pki) -> None:  # noqa: F811
    from serdes import RegistryClient

    options = {
        "url": mtls_registry,
        "ssl.ca.location": pki["ca.crt"],
        "ssl.certificate.location": pki["client.crt"],
        "ssl.key.location": pki["client.key"],
        "ssl.key.password": KEY_PASSWORD,
    }
    with RegistryClient.from_config(options) as c:
        frame = AvroSerializer(c, V1, subject=f"mtls-spark-{engine}")({"n": 11})
    assert decode(spark, [frame], {**options, "ssl.key.password": KEY_PASSWORD}, f"mtls-spark-{engine}", engine) == [
        Row(n=11)
    ]
