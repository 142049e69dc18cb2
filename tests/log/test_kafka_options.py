"""Parsing of ``kafka://`` URLs and routing of client options to the producer, consumer and admin."""

from __future__ import annotations

import pytest

from streams.log import LogError, open_log, redact_url
from streams.log.kafka import KafkaLog, parse_kafka_url


def test_url_hosts_and_options() -> None:
    hosts, options = parse_kafka_url("kafka://a:9092, b:19092?session.timeout.ms=6000&fetch.wait.max.ms=100")
    assert hosts == "a:9092,b:19092"
    assert options == {"session.timeout.ms": "6000", "fetch.wait.max.ms": "100"}


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://a:9092", "not a Kafka log URL"),
        ("kafka://", "names no bootstrap server"),
        ("kafka://a:9092,,b:9092", "names no bootstrap server"),
        ("kafka://a", "'a' in 'kafka://a' is not host:port"),
        ("kafka://a:0", "with a port in 1-65535"),
        ("kafka://a:x1", "'a:x1'"),
        ("kafka://a:9092/topic", "must not have a path"),
    ],
)
def test_bad_url_names_the_problem(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        parse_kafka_url(url)


def test_open_log_builds_a_kafka_log_without_connecting() -> None:
    # Nothing listens on this port: construction must not contact the cluster.
    log = open_log("kafka://127.0.0.1:1")
    assert isinstance(log, KafkaLog)
    assert log.bootstrap == "127.0.0.1:1"
    log.close()


def test_options_are_routed_to_the_clients_they_belong_to() -> None:
    log = KafkaLog(
        "kafka://h:1?session.timeout.ms=6000&linger.ms=20&client.rack=r1&consumer.client.id=c&admin.debug=admin",
        heartbeat_interval_ms=500,
        enable_idempotence=True,
    )
    consumer, producer, admin = log._consumer_conf, log._producer_conf, log._admin_conf
    assert consumer["session.timeout.ms"] == "6000" and "session.timeout.ms" not in producer
    assert consumer["heartbeat.interval.ms"] == "500" and "heartbeat.interval.ms" not in admin
    assert producer["linger.ms"] == "20" and "linger.ms" not in consumer
    assert producer["enable.idempotence"] == "true"
    assert consumer["client.rack"] == producer["client.rack"] == admin["client.rack"] == "r1"
    assert consumer["client.id"] == "c" and "client.id" not in producer
    assert admin["debug"] == "admin" and "debug" not in consumer


def test_production_defaults() -> None:
    log = KafkaLog("kafka://h:1")
    producer, consumer = log._producer_conf, log._consumer_conf
    assert (producer["enable.idempotence"], producer["acks"], producer["partitioner"]) == (
        "true",
        "all",
        "murmur2_random",
    )
    assert (consumer["enable.auto.commit"], consumer["auto.offset.reset"]) == ("false", "earliest")
    # Production keeps librdkafka's own session timeout; only the tests shorten it.
    assert "session.timeout.ms" not in consumer
    # An explicit option overrides a default.
    assert KafkaLog("kafka://h:1?linger.ms=0")._producer_conf["linger.ms"] == "0"


def test_user_info_is_sasl_credentials_over_tls_by_default() -> None:
    hosts, options = parse_kafka_url("kafka://svc%40acme:p%26ss@a:9092,b:9092")
    assert hosts == "a:9092,b:9092"
    assert options == {
        "sasl.username": "svc@acme",
        "sasl.password": "p&ss",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
    }
    _, options = parse_kafka_url("kafka://u:pw@a:9092?security.protocol=SASL_PLAINTEXT&sasl.mechanisms=SCRAM-SHA-512")
    assert options == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "u",
        "sasl.password": "pw",
    }


SECRET_URL = "kafka://alice:s3cret@127.0.0.1:1?sasl.oauthbearer.client.secret=t0ken&linger.ms=5&ssl.key.password=k3y"


def test_secrets_never_reach_a_message() -> None:
    shown = "kafka://alice:***@127.0.0.1:1?sasl.oauthbearer.client.secret=***&linger.ms=5&ssl.key.password=***"
    log = open_log(SECRET_URL)
    assert log.safe_url == shown
    assert log.describe() == "kafka, bootstrap 127.0.0.1:1"
    log.close()
    with pytest.raises(LogError) as closed:
        log.producer()
    assert str(closed.value) == f"the Kafka log {shown!r} is closed"
    for bad in (SECRET_URL.replace(":1?", ":99999?"), SECRET_URL.replace("kafka:", "kafkaa:")):
        with pytest.raises(ValueError) as caught:
            open_log(bad)
        assert "s3cret" not in str(caught.value) and "t0ken" not in str(caught.value), caught.value
        assert "alice:***@" in str(caught.value)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("sqlite:///./data", "sqlite:///./data"),
        (
            "kafka://a:1,b:2?sasl.password=x&consumer.sasl.password=y",
            "kafka://a:1,b:2?sasl.password=***&consumer.sasl.password=***",
        ),
        ("kafka://bob@a:1", "kafka://bob@a:1"),
        ("kafka://bob:pw:more@a:1#frag", "kafka://bob:***@a:1#frag"),
        ("kafka://u:p@w@a:1?ssl.key.pem=-----BEGIN", "kafka://u:***@a:1?ssl.key.pem=***"),
        ("not a url at all", "not a url at all"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown
