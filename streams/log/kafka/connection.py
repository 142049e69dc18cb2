"""What every client of the Kafka log shares: the ``kafka://`` URL and the librdkafka settings it carries,
routed to the producer, consumer or admin client; librdkafka's errors as the log's own; conversions between
our ``TopicPartition`` and confluent-kafka's.

Query parameters and ``**client_options`` are librdkafka settings. A key prefixed ``producer.``, ``consumer.``
or ``admin.`` goes to that client only; well-known consumer-only and producer-only keys are routed to their
client (so librdkafka does not warn about ignored properties); any other key goes to every client.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol
from urllib.parse import parse_qsl, unquote, urlsplit

import confluent_kafka
from confluent_kafka import KafkaError, KafkaException

from streams.log.base import (
    GroupSettings,
    LogError,
    LogTimeoutError,
    ProducerFencedError,
    RecordTooLargeError,
    TopicExistsError,
    TopicInfo,
    TopicPartition,
    TransactionError,
    UnknownTopicError,
)
from streams.log.redact import redact_url

__all__ = [
    "UNKNOWN_TOPIC_CODES",
    "OwningLog",
    "committed_offsets",
    "from_ck_tp",
    "from_kafka_error",
    "from_kafka_exception",
    "group_options",
    "librdkafka_log",
    "option_value",
    "parse_kafka_url",
    "split_options",
    "to_ck_tp",
    "topic_metadata",
]


class OwningLog(Protocol):
    """What a producer or consumer asks of the ``KafkaLog`` that made it. The clients are typed against this, not
    the log's class, so the log imports its clients and never the other way round."""

    timeout: float
    bootstrap: str

    def client_config(self, role: str) -> dict[str, Any]: ...

    def describe_topic(self, name: str) -> TopicInfo | None: ...

    def partition_count(self, name: str) -> int | None: ...

    def group_metadata(self, group: str) -> object: ...


# librdkafka's own log lines, from every client of the log (their ``logger`` setting).
librdkafka_log = logging.getLogger("streams.log.kafka.librdkafka")

_CONSUMER_ONLY_PREFIXES = ("fetch.", "group.", "queued.", "auto.commit.")
_CONSUMER_ONLY = frozenset(
    {
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "partition.assignment.strategy",
        "max.poll.interval.ms",
        "enable.auto.commit",
        "enable.auto.offset.store",
        "isolation.level",
        "auto.offset.reset",
        "check.crcs",
        "enable.partition.eof",
        "coordinator.query.interval.ms",
        "max.partition.fetch.bytes",
        "consume.callback.max.messages",
    }
)
_PRODUCER_ONLY_PREFIXES = ("queue.buffering.", "batch.", "compression.", "sticky.partitioning.")
_PRODUCER_ONLY = frozenset(
    {
        "acks",
        "request.required.acks",
        "linger.ms",
        "enable.idempotence",
        "enable.gapless.guarantee",
        "transaction.timeout.ms",
        "message.timeout.ms",
        "delivery.timeout.ms",
        "retries",
        "message.send.max.retries",
        "partitioner",
        "compression.codec",
        "compression.type",
        "transactional.id",
    }
)
_ROLES = ("producer", "consumer", "admin")

# Errors that mean "another producer with this transactional id took over".
_FENCED_CODES = frozenset({KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH})
_STATE_CODES = frozenset({KafkaError._STATE, KafkaError._NOT_CONFIGURED, KafkaError.INVALID_TXN_STATE})
_TIMEOUT_CODES = frozenset({KafkaError._TIMED_OUT, KafkaError._MSG_TIMED_OUT, KafkaError.REQUEST_TIMED_OUT})
_TOO_LARGE_CODES = frozenset({KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE})
UNKNOWN_TOPIC_CODES = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC})


def parse_kafka_url(url: str) -> tuple[str, dict[str, str]]:
    """``kafka://h:p,h2:p2?k=v`` -> (``"h:p,h2:p2"``, ``{"k": "v"}``); ValueError names what is wrong.

    User info is SASL credentials: ``kafka://user:pw@h:p`` sets ``sasl.username`` and ``sasl.password`` (URL
    decoded) and, unless the query says otherwise, ``security.protocol=SASL_SSL`` and ``sasl.mechanism=PLAIN``
    (a password never travels in clear by default). Messages show the URL with its secrets redacted."""
    shown = redact_url(url)
    parts = urlsplit(url)
    if parts.scheme != "kafka":
        raise ValueError(f"not a Kafka log URL: {shown!r} (expected kafka://host:port[,host:port][?option=value])")
    if parts.path not in ("", "/") or parts.fragment:
        raise ValueError(f"Kafka log URL {shown!r} must not have a path or fragment, only hosts and ?options")
    userinfo, at, netloc = parts.netloc.rpartition("@")
    hosts = [h.strip() for h in netloc.split(",")]
    if not netloc or not all(hosts):
        raise ValueError(f"Kafka log URL {shown!r} names no bootstrap server (expected kafka://host:port)")
    for hostport in hosts:
        host, sep, port = hostport.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"bootstrap server {hostport!r} in {shown!r} is not host:port with a port in 1-65535")
    options: dict[str, str] = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True, strict_parsing=False):
        if not key:
            raise ValueError(f"Kafka log URL {shown!r} has an option without a name")
        options[key] = value
    if at:
        user, colon, password = userinfo.partition(":")
        if not user or not colon:
            raise ValueError(f"Kafka log URL {shown!r}: user info must be user:password (SASL credentials)")
        options.setdefault("sasl.username", unquote(user))
        options.setdefault("sasl.password", unquote(password))
        options.setdefault("security.protocol", "SASL_SSL")
        if "sasl.mechanisms" not in options:
            options.setdefault("sasl.mechanism", "PLAIN")
    return ",".join(hosts), options


def group_options(groups: GroupSettings | None) -> dict[str, str]:
    """librdkafka consumer settings for ``GroupSettings``."""
    if groups is None:
        return {}
    named = {
        "partition.assignment.strategy": groups.assignment,
        "session.timeout.ms": groups.session_timeout_ms,
        "heartbeat.interval.ms": groups.heartbeat_interval_ms,
    }
    return {key: str(value) for key, value in named.items() if value is not None}


def option_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def split_options(options: dict[str, str]) -> dict[str, dict[str, str]]:
    """Route each librdkafka option to the clients it applies to."""
    routed: dict[str, dict[str, str]] = {role: {} for role in _ROLES}
    for key, value in options.items():
        role, _, rest = key.partition(".")
        if role in _ROLES and rest:
            routed[role][rest] = value
        elif key in _CONSUMER_ONLY or key.startswith(_CONSUMER_ONLY_PREFIXES):
            routed["consumer"][key] = value
        elif key in _PRODUCER_ONLY or key.startswith(_PRODUCER_ONLY_PREFIXES):
            routed["producer"][key] = value
        else:
            for role in _ROLES:
                routed[role][key] = value
    return routed


def from_kafka_error(err: KafkaError, context: str) -> LogError:
    """Map a librdkafka error to the base exception that means the same thing."""
    code = err.code()
    text = f"{context}: {err.str()} ({err.name()})"
    if code in _FENCED_CODES:
        return ProducerFencedError(text)
    if err.fatal() or code == KafkaError._FATAL:
        # A fatal error ends the producer for good; callers must do what they do when fenced: start anew.
        return ProducerFencedError(f"{text}; the producer is unusable (fatal error)")
    if code in _STATE_CODES:
        return TransactionError(text)
    if code in _TIMEOUT_CODES:
        return LogTimeoutError(text)
    if code in _TOO_LARGE_CODES:
        return RecordTooLargeError(text)
    if code in UNKNOWN_TOPIC_CODES:
        return UnknownTopicError(text)
    if code == KafkaError.TOPIC_ALREADY_EXISTS:
        return TopicExistsError(text)
    if err.txn_requires_abort():
        return TransactionError(f"{text}; the transaction must be aborted")
    return LogError(text)


def from_kafka_exception(exc: KafkaException, context: str) -> LogError:
    err = exc.args[0] if exc.args else None
    if isinstance(err, KafkaError):
        return from_kafka_error(err, context)
    return LogError(f"{context}: {exc}")


def to_ck_tp(tp: TopicPartition, offset: int | None = None) -> confluent_kafka.TopicPartition:
    if offset is None:
        return confluent_kafka.TopicPartition(tp.topic, tp.partition)
    return confluent_kafka.TopicPartition(tp.topic, tp.partition, offset)


def from_ck_tp(ck: confluent_kafka.TopicPartition) -> TopicPartition:
    return TopicPartition(ck.topic, ck.partition)


def committed_offsets(results: list[confluent_kafka.TopicPartition], context: str) -> dict[TopicPartition, int | None]:
    out: dict[TopicPartition, int | None] = {}
    for r in results:
        if r.error is not None and r.error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
            raise from_kafka_error(r.error, f"{context} {r.topic}[{r.partition}]")
        out[from_ck_tp(r)] = r.offset if r.offset >= 0 else None
    return out


def topic_metadata(client: Any, name: str, timeout: float, bootstrap: str) -> Any:
    """``name``'s metadata as ``client`` (an admin client, or a consumer, which asks over its own connection) gets
    it from the cluster at ``bootstrap``, or None if the topic does not exist."""
    try:
        topic = client.list_topics(topic=name, timeout=timeout).topics.get(name)
    except KafkaException as exc:
        raise from_kafka_exception(exc, f"metadata from {bootstrap}") from exc
    if topic is None or (topic.error is not None and topic.error.code() in UNKNOWN_TOPIC_CODES):
        return None
    # A topic whose leaders are still being elected is there, just not writable yet.
    if topic.error is not None and not (topic.error.code() == KafkaError.LEADER_NOT_AVAILABLE and topic.partitions):
        raise from_kafka_error(topic.error, f"metadata of topic {name!r}")
    return topic
