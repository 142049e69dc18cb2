"""The Kafka backend of the log: confluent-kafka's Producer, Consumer and AdminClient behind ``base.py``.

``KafkaLog("kafka://h1:9092,h2:9092?session.timeout.ms=6000")``. Query parameters and ``**client_options``
are librdkafka settings. A key prefixed ``producer.``, ``consumer.`` or ``admin.`` goes to that client only;
well-known consumer-only and producer-only keys are routed to their client (so librdkafka does not warn
about ignored properties); any other key goes to every client. Keyword names may use ``_`` for ``.``
(``session_timeout_ms=6000``). Defaults are production ones: idempotent producer with ``acks=all``,
``murmur2_random`` partitioning (the Java client's, and the SQLite backend's), manual commits, reading from
the earliest offset when a group has no committed offset, and ``read_committed`` isolation.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import confluent_kafka
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    ConfigSource,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

from streams.log.base import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Capabilities,
    Consumer,
    DeliveryCallback,
    GroupSettings,
    Log,
    LogError,
    LogTimeoutError,
    Producer,
    ProducerFencedError,
    RebalanceCallback,
    Record,
    RecordMetadata,
    RecordTooLargeError,
    TopicExistsError,
    TopicInfo,
    TopicPartition,
    TransactionError,
    TransactionState,
    UnknownTopicError,
    check_offsets,
    check_partitions,
    check_topic_name,
)
from streams.log.lease import GroupLease
from streams.log.redact import redact_url

__all__ = ["KafkaLog", "parse_kafka_url"]

_librdkafka_log = logging.getLogger("streams.log.kafka.librdkafka")

# How long admin calls and metadata look-ups wait for the cluster.
DEFAULT_TIMEOUT = 30.0
_LIBRDKAFKA_SESSION_TIMEOUT_MS = 45000
_POLL_EVERY = 100  # sends between two polls for delivery reports (flush serves the rest)
# Records are produced with positional arguments: confluent-kafka parses keyword arguments on every call, ~0.6 us
# of a ~1.5 us produce. Its order: (topic, value, key, partition, callback, on_delivery, timestamp, headers); the
# log contract tests (tests/log/) check the partition, timestamp and headers of records sent this way.
_ANY_PARTITION = -1  # the partitioner chooses (RD_KAFKA_PARTITION_UA)
_NOW = 0  # no timestamp of ours: the producer's clock

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
_UNKNOWN_TOPIC_CODES = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC})


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


def _group_options(groups: GroupSettings | None) -> dict[str, str]:
    """librdkafka consumer settings for ``GroupSettings``."""
    if groups is None:
        return {}
    named = {
        "partition.assignment.strategy": groups.assignment,
        "session.timeout.ms": groups.session_timeout_ms,
        "heartbeat.interval.ms": groups.heartbeat_interval_ms,
    }
    return {key: str(value) for key, value in named.items() if value is not None}


def _option_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _split_options(options: dict[str, str]) -> dict[str, dict[str, str]]:
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


def _error(err: KafkaError, context: str) -> LogError:
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
    if code in _UNKNOWN_TOPIC_CODES:
        return UnknownTopicError(text)
    if code == KafkaError.TOPIC_ALREADY_EXISTS:
        return TopicExistsError(text)
    if err.txn_requires_abort():
        return TransactionError(f"{text}; the transaction must be aborted")
    return LogError(text)


def _exc_error(exc: KafkaException, context: str) -> LogError:
    err = exc.args[0] if exc.args else None
    if isinstance(err, KafkaError):
        return _error(err, context)
    return LogError(f"{context}: {exc}")


def _ck_tp(tp: TopicPartition, offset: int | None = None) -> confluent_kafka.TopicPartition:
    if offset is None:
        return confluent_kafka.TopicPartition(tp.topic, tp.partition)
    return confluent_kafka.TopicPartition(tp.topic, tp.partition, offset)


def _tp(ck: confluent_kafka.TopicPartition) -> TopicPartition:
    return TopicPartition(ck.topic, ck.partition)


def _committed_map(results: list[confluent_kafka.TopicPartition], context: str) -> dict[TopicPartition, int | None]:
    out: dict[TopicPartition, int | None] = {}
    for r in results:
        if r.error is not None and r.error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
            raise _error(r.error, f"{context} {r.topic}[{r.partition}]")
        out[_tp(r)] = r.offset if r.offset >= 0 else None
    return out


class KafkaLog(Log):
    """A Kafka cluster as a log. Thread-safe; producers and consumers it creates share its options.

    ``groups`` gives consumer-group defaults; the URL's and ``client_options``' own settings win."""

    capabilities = Capabilities(
        group_membership=True, transactions=True, compacts_itself=True, buffers_until_flush=False, leases=True
    )

    def __init__(
        self,
        url: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        groups: GroupSettings | None = None,
        **client_options: object,
    ) -> None:
        self.url = url
        self.timeout = timeout
        self.bootstrap, options = parse_kafka_url(url)
        for key, value in client_options.items():
            options[key.replace("_", ".")] = _option_value(value)
        for key, value in _group_options(groups).items():
            if key not in options and f"consumer.{key}" not in options:
                options[f"consumer.{key}"] = value
        self._options = _split_options(options)
        base: dict[str, Any] = {"bootstrap.servers": self.bootstrap, "logger": _librdkafka_log}
        # Producer-type handles auto-create topics on a metadata request unless told not to.
        self._admin_conf = {**base, "allow.auto.create.topics": "false", **self._options["admin"]}
        self._producer_conf: dict[str, Any] = {
            **base,
            "enable.idempotence": "true",
            "acks": "all",
            "partitioner": "murmur2_random",
            "linger.ms": "5",
            "allow.auto.create.topics": "false",
            **self._options["producer"],
        }
        self._consumer_conf: dict[str, Any] = {
            **base,
            "enable.auto.commit": "false",
            "auto.offset.reset": "earliest",
            "allow.auto.create.topics": "false",
            **self._options["consumer"],
        }
        self._lock = threading.Lock()
        self._admin_client: AdminClient | None = None
        self._consumers: weakref.WeakSet[KafkaConsumer] = weakref.WeakSet()
        self._metadata_consumers: dict[str, confluent_kafka.Consumer] = {}
        self._closed = False

    def describe(self) -> str:
        return f"kafka, bootstrap {self.bootstrap}"

    @property
    def group_session_timeout(self) -> float:
        return int(self._consumer_conf.get("session.timeout.ms", _LIBRDKAFKA_SESSION_TIMEOUT_MS)) / 1000

    def client_config(self, role: str) -> dict[str, Any]:
        """A copy of the librdkafka configuration this log gives its ``"producer"`` or ``"consumer"``."""
        return dict(self._producer_conf if role == "producer" else self._consumer_conf)

    # -- admin ---------------------------------------------------------------------------------------

    @property
    def _admin(self) -> AdminClient:
        if self._closed:
            raise LogError(f"the Kafka log {self.safe_url!r} is closed")
        with self._lock:
            if self._admin_client is None:
                self._admin_client = AdminClient(self._admin_conf)
            return self._admin_client

    def _result(self, future: Any, context: str) -> Any:
        try:
            return future.result(timeout=self.timeout)
        except KafkaException as exc:
            raise _exc_error(exc, context) from exc
        except TimeoutError as exc:
            raise LogTimeoutError(f"{context}: no answer from {self.bootstrap} within {self.timeout}s") from exc
        finally:
            admin = self._admin_client
            if admin is not None:
                admin.poll(0)  # serve queued librdkafka log lines

    def _metadata(self, topic: str | None = None) -> Any:
        try:
            if topic is None:
                return self._admin.list_topics(timeout=self.timeout)
            return self._admin.list_topics(topic=topic, timeout=self.timeout)
        except KafkaException as exc:
            raise _exc_error(exc, f"metadata from {self.bootstrap}") from exc

    def _topic_metadata(self, name: str) -> Any:
        """The topic's metadata, or None if it does not exist."""
        topic = self._metadata(name).topics.get(name)
        if topic is None or (topic.error is not None and topic.error.code() in _UNKNOWN_TOPIC_CODES):
            return None
        # A topic whose leaders are still being elected is there, just not writable yet.
        if topic.error is not None and not (topic.error.code() == KafkaError.LEADER_NOT_AVAILABLE and topic.partitions):
            raise _error(topic.error, f"metadata of topic {name!r}")
        return topic

    def _partitions(self, name: str) -> int | None:
        topic = self._topic_metadata(name)
        return None if topic is None else len(topic.partitions)

    def _wait_for_metadata(self, name: str, present: bool) -> None:
        # Topic creation and deletion propagate asynchronously through a real cluster; wait until every
        # partition has a leader (or the topic is gone) so that clients created right after can use it.
        def settled() -> bool:
            topic = self._topic_metadata(name)
            if topic is None:
                return not present
            return present and all(p.leader >= 0 for p in topic.partitions.values())

        deadline = time.monotonic() + self.timeout
        while not settled():
            if time.monotonic() > deadline:
                state = "appear" if present else "disappear"
                raise LogTimeoutError(f"topic {name!r} did not {state} in metadata within {self.timeout}s")
            time.sleep(0.05)

    def create_topic(
        self, name: str, partitions: int = 1, *, compacted: bool = False, config: dict[str, str] | None = None
    ) -> TopicInfo:
        check_topic_name(name)
        check_partitions(name, partitions)
        topic_config = {k: _option_value(v) for k, v in (config or {}).items()}
        if compacted and "compact" not in topic_config.get("cleanup.policy", ""):
            topic_config["cleanup.policy"] = "compact"
        replication = min(len(self._metadata().brokers), 3)
        new = NewTopic(name, num_partitions=partitions, replication_factor=replication, config=topic_config)
        futures = self._admin.create_topics([new], operation_timeout=self.timeout, request_timeout=self.timeout)
        self._result(futures[name], f"create topic {name!r}")
        self._wait_for_metadata(name, present=True)
        return TopicInfo(name, partitions, "compact" in topic_config.get("cleanup.policy", ""), topic_config)

    def describe_topic(self, name: str) -> TopicInfo | None:
        check_topic_name(name)
        partitions = self._partitions(name)
        if partitions is None:
            return None
        resource = ConfigResource(ResourceType.TOPIC, name)
        try:
            entries = self._result(self._admin.describe_configs([resource])[resource], f"configs of {name!r}")
        except UnknownTopicError:
            return None  # deleted between the two calls
        policy_entry = entries.get("cleanup.policy")
        policy = (policy_entry.value or "") if policy_entry is not None else ""
        # Only the topic's own settings. A real broker lists every config and marks overrides as
        # DYNAMIC_TOPIC_CONFIG; tansu lists only the overrides, labelled as defaults, and lacks the
        # always-present max.message.bytes, which tells the two apart.
        lists_all = "max.message.bytes" in entries
        explicit = {
            key: entry.value
            for key, entry in entries.items()
            if entry.value is not None and (not lists_all or entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
        }
        return TopicInfo(name, partitions, "compact" in policy, explicit)

    def delete_topic(self, name: str) -> None:
        check_topic_name(name)
        futures = self._admin.delete_topics([name], operation_timeout=self.timeout, request_timeout=self.timeout)
        self._result(futures[name], f"delete topic {name!r}")
        self._wait_for_metadata(name, present=False)

    def list_topics(self) -> list[str]:
        return sorted(t for t in self._metadata().topics if not t.startswith("__"))

    def end_offsets(self, topic: str) -> dict[int, int]:
        """High watermarks. tansu (the test broker) reports the last batch's base offset + 1 instead,
        which is why callers that must have read everything use a produce-and-read barrier."""
        partitions = self._partitions(topic)
        if partitions is None:
            raise UnknownTopicError(f"end offsets: topic {topic!r} does not exist")
        request = {confluent_kafka.TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)}
        futures = self._admin.list_offsets(
            request,
            isolation_level=confluent_kafka.IsolationLevel.READ_UNCOMMITTED,
            request_timeout=self.timeout,
        )
        return {
            tp.partition: self._result(f, f"end offset of {topic}[{tp.partition}]").offset for tp, f in futures.items()
        }

    def committed(self, group: str, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
        # A consumer that never subscribes reads the group's offsets without joining (no rebalance).
        consumer = confluent_kafka.Consumer({**self._consumer_conf, "group.id": group})
        try:
            results = consumer.committed([_ck_tp(tp) for tp in partitions], timeout=self.timeout)
        except KafkaException as exc:
            raise _exc_error(exc, f"committed offsets of group {group!r}") from exc
        finally:
            consumer.close()
        return _committed_map(results, f"committed offset of group {group!r} for")

    # -- clients -------------------------------------------------------------------------------------

    def lease(self, name: str, holder: str, timeout: float) -> GroupLease:
        return GroupLease(self, name, holder)  # the group's session timeout decides, not ``timeout``

    def producer(self, transactional_id: str | None = None) -> KafkaProducer:
        if self._closed:
            raise LogError(f"the Kafka log {self.safe_url!r} is closed")
        return KafkaProducer(self, transactional_id)

    def consumer(
        self, group: str | None = None, *, client_id: str | None = None, read_committed: bool = True
    ) -> KafkaConsumer:
        if self._closed:
            raise LogError(f"the Kafka log {self.safe_url!r} is closed")
        consumer = KafkaConsumer(self, group, client_id, read_committed)
        with self._lock:
            self._consumers.add(consumer)
        return consumer

    def group_metadata(self, group: str) -> object:
        """librdkafka's opaque group metadata for ``send_offsets_to_transaction``.

        A live member of the group created by this log gives its generation and member id, so the broker
        fences offsets from a member that was rebalanced away (KIP-447). Otherwise a consumer that never
        joins stands in, which commits by group id alone."""
        with self._lock:
            members = [c for c in self._consumers if c.group == group]
        for member in members:
            metadata = member.group_metadata()
            if metadata is not None:
                return metadata
        with self._lock:
            helper = self._metadata_consumers.get(group)
            if helper is None:
                helper = confluent_kafka.Consumer({**self._consumer_conf, "group.id": group})
                self._metadata_consumers[group] = helper
        return helper.consumer_group_metadata()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            helpers, self._metadata_consumers = list(self._metadata_consumers.values()), {}
            self._admin_client = None
        for helper in helpers:
            helper.close()


class KafkaProducer(Producer):
    """An idempotent (optionally transactional) confluent-kafka Producer."""

    def __init__(self, log: KafkaLog, transactional_id: str | None) -> None:
        self._log = log
        self.transactional_id = transactional_id
        conf = log.client_config("producer")
        if transactional_id is not None:
            conf["transactional.id"] = transactional_id
        self._producer = confluent_kafka.Producer(conf)
        self.transaction = TransactionState(transactional_id)
        self._topics: dict[str, tuple[int, bool]] = {}  # topics known to exist -> (partitions, compacted)
        self._plain_callbacks: dict[str, Callable[[KafkaError | None, Any], None]] = {}  # per topic, no on_delivery
        self._unpolled = 0
        self._lock = threading.Lock()
        self._first_error: LogError | None = None
        self._closed = False

    def _check_target(self, topic: str, partition: int | None, key: bytes | None) -> None:
        # librdkafka would hold a record for a missing topic until message.timeout.ms (5 min by default);
        # one look-up per new topic turns that into an immediate, specific error.
        known = self._topics.get(topic)
        if known is None or (partition is not None and partition >= known[0]):
            info = self._log.describe_topic(topic)
            if info is None:
                raise UnknownTopicError(f"topic {topic!r} does not exist: create it first (Log.create_topic)")
            known = self._topics[topic] = (info.partitions, info.compacted)
        count, compacted = known
        if partition is not None and (isinstance(partition, bool) or not 0 <= partition < count):
            raise UnknownTopicError(f"partition {partition!r} does not exist: topic {topic!r} has {count} partitions")
        if compacted and key is None:
            # Kafka rejects the whole batch for this; say so before it is queued.
            raise LogError(f"topic {topic!r} is compacted: every record needs a key")

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        partition: int | None = None,
        headers: Iterable[tuple[str, bytes | None]] | None = None,
        timestamp: int | None = None,
        on_delivery: DeliveryCallback | None = None,
    ) -> None:
        if self._closed:
            raise LogError("the producer is closed")
        self.transaction.check_send()
        self._check_target(topic, partition, key)
        if on_delivery is None:
            callback = self._plain_callbacks.get(topic)
            if callback is None:
                callback = self._plain_callbacks[topic] = self._delivery_callback(topic, None)
        else:
            callback = self._delivery_callback(topic, on_delivery)
        try:
            self._produce_when_queued(
                (
                    topic,
                    value,
                    key,
                    _ANY_PARTITION if partition is None else partition,
                    callback,
                    None,
                    _NOW if timestamp is None else timestamp,
                    None if headers is None else list(headers),
                )
            )
            # Serve delivery reports now and then (flush serves the rest): once per send costs a call into
            # librdkafka for every record.
            self._unpolled += 1
            if self._unpolled >= _POLL_EVERY:
                self._unpolled = 0
                self._producer.poll(0)
        except KafkaException as exc:
            raise self._send_error(exc, topic) from exc

    def _send_error(self, exc: KafkaException, topic: str) -> LogError:
        # e.g. a fatal error (a fenced transactional producer) that librdkafka raises from poll
        error = _exc_error(exc, f"send to topic {topic!r}")
        if isinstance(error, ProducerFencedError) and self.transactional_id is not None:
            self.transaction.fence()
        return error

    def send_batch(
        self,
        topic: str,
        partition: int,
        records: Sequence[tuple[bytes | None, bytes | None]],
        *,
        headers: Iterable[tuple[str, bytes | None]] | None = None,
        on_last_delivery: DeliveryCallback | None = None,
    ) -> None:
        """The checks once, then one ``produce`` per record (a changelog flush sends thousands)."""
        if not records:
            return
        if self._closed:
            raise LogError("the producer is closed")
        self.transaction.check_send()
        self._check_target(topic, partition, records[0][0])
        if self._topics[topic][1] and None in map(itemgetter(0), records):
            raise LogError(f"topic {topic!r} is compacted: every record needs a key")
        callback = self._plain_callbacks.get(topic)
        if callback is None:
            callback = self._plain_callbacks[topic] = self._delivery_callback(topic, None)
        header_list: list[tuple[str, str | bytes | None]] | None = None if headers is None else list(headers)
        produce = self._producer.produce
        try:
            for key, value in records if on_last_delivery is None else records[:-1]:
                try:
                    produce(topic, value, key, partition, callback, None, _NOW, header_list)  # (see _ANY_PARTITION)
                except BufferError:
                    self._produce_when_queued((topic, value, key, partition, callback, None, _NOW, header_list))
            if on_last_delivery is not None:
                key, value = records[-1]
                self._produce_when_queued(
                    (
                        topic,
                        value,
                        key,
                        partition,
                        self._delivery_callback(topic, on_last_delivery),
                        None,
                        _NOW,
                        header_list,
                    )
                )
            self._producer.poll(0)
        except KafkaException as exc:
            raise self._send_error(exc, topic) from exc

    def _produce_when_queued(self, args: tuple[Any, ...]) -> None:
        """``produce(*args)`` (positional, see ``_ANY_PARTITION``), waiting while the local queue is full."""
        while True:
            try:
                self._producer.produce(*args)
                return
            except BufferError:
                self._producer.poll(0.05)  # the local queue is full: let deliveries drain it

    def _delivery_callback(
        self, topic: str, on_delivery: DeliveryCallback | None
    ) -> Callable[[KafkaError | None, Any], None]:
        def delivered(err: KafkaError | None, msg: Any) -> None:
            if err is not None:
                error = _error(err, f"delivery to topic {topic!r} partition {msg.partition()}")
                with self._lock:
                    if self._first_error is None:
                        self._first_error = error
                if self.on_delivery_failure is not None:
                    failed = Record(
                        topic,
                        msg.partition(),
                        -1,
                        msg.key(),
                        msg.value(),
                        msg.timestamp()[1],
                        tuple(msg.headers() or ()),
                    )
                    self.on_delivery_failure(failed, error)
                if on_delivery is not None:
                    on_delivery(None, error)
            elif on_delivery is not None:
                md = RecordMetadata(msg.topic(), msg.partition(), msg.offset(), msg.timestamp()[1])
                on_delivery(md, None)

        return delivered

    def _raise_first_error(self) -> None:
        with self._lock:
            error, self._first_error = self._first_error, None
        if error is not None:
            if isinstance(error, ProducerFencedError) and self.transactional_id is not None:
                self.transaction.fence()
            raise error

    def flush(self, timeout: float | None = None) -> None:
        try:
            remaining = self._producer.flush(-1 if timeout is None else timeout)
        except KafkaException as exc:  # e.g. a fenced transactional producer: librdkafka raises from flush
            raise _exc_error(exc, f"flush (transactional id {self.transactional_id!r})") from exc
        self._raise_first_error()
        if remaining:
            raise LogTimeoutError(f"{remaining} records were not delivered within {timeout}s")

    def _txn(self, call: Callable[..., None], what: str, *args: object) -> None:
        try:
            call(*args)
        except KafkaException as exc:
            error = _exc_error(exc, f"{what} (transactional id {self.transactional_id!r})")
            if isinstance(error, ProducerFencedError):
                self.transaction.fence()
            raise error from exc

    def _timeout(self, timeout: float | None) -> float:
        return self._log.timeout if timeout is None else timeout

    def init_transactions(self, timeout: float | None = None) -> None:
        self.transaction.init()
        self._txn(self._producer.init_transactions, "init transactions", self._timeout(timeout))
        self.transaction.mark_initialized()

    def begin_transaction(self) -> None:
        self.transaction.begin()
        try:
            self._txn(self._producer.begin_transaction, "begin transaction")
        except LogError:
            self.transaction.end()
            raise

    def send_offsets_to_transaction(self, group: str, offsets: dict[TopicPartition, int]) -> None:
        if not group:
            raise ValueError("send_offsets_to_transaction needs a consumer group name")
        check_offsets(offsets)
        self.transaction.check_in_transaction("send_offsets_to_transaction")
        positions = [_ck_tp(tp, offset) for tp, offset in offsets.items()]
        if not positions:
            return
        metadata = self._log.group_metadata(group)
        self._txn(
            self._producer.send_offsets_to_transaction,
            f"send offsets of group {group!r}",
            positions,
            metadata,
            self._log.timeout,
        )

    def commit_transaction(self, timeout: float | None = None) -> None:
        self.transaction.check_in_transaction("commit_transaction")
        # librdkafka flushes inside the commit and serves the delivery callbacks, so every record's
        # on_delivery has fired when this returns (the contract).
        self._txn(self._producer.commit_transaction, "commit transaction", self._timeout(timeout))
        self.transaction.end()
        self._raise_first_error()

    def abort_transaction(self, timeout: float | None = None) -> None:
        self.transaction.check_in_transaction("abort_transaction")
        self._txn(self._producer.abort_transaction, "abort transaction", self._timeout(timeout))
        self.transaction.end()
        with self._lock:
            self._first_error = None  # the aborted records' failures are moot

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.transaction.fenced:
            return  # a fenced producer can deliver nothing more (librdkafka raises from flush)
        # Deliver what is queued (their callbacks report failures), within the log's timeout.
        try:
            self._producer.flush(self._log.timeout)
        except KafkaException as exc:
            _librdkafka_log.warning("closing producer %r: %s", self.transactional_id, exc)


class KafkaConsumer(Consumer):
    """A confluent-kafka Consumer with manual commits and its own view of positions.

    librdkafka's ``position()`` is unknown until a record of the partition has been consumed, so the
    consumer tracks "next offset" itself: from ``assign``/``seek`` (logical offsets resolved through the
    watermarks), from the committed offset after a group assignment, and from every record returned."""

    def __init__(self, log: KafkaLog, group: str | None, client_id: str | None, read_committed: bool = True) -> None:
        self._log = log
        self.group = group
        conf = log.client_config("consumer")
        if not read_committed:
            conf["isolation.level"] = "read_uncommitted"
        # confluent-kafka insists on a group.id; a consumer without a group uses a unique one it never
        # joins and never commits to.
        conf["group.id"] = group if group is not None else f"schemakit-nogroup-{uuid.uuid4().hex}"
        if client_id is not None:
            conf["client.id"] = client_id
        self._consumer = confluent_kafka.Consumer(conf)
        self._positions: dict[TopicPartition, int | None] = {}
        self._subscribed = False
        self._pending_error: LogError | None = None
        self._closed = False

    def group_metadata(self) -> object | None:
        """librdkafka's group metadata (generation, member id) while this consumer is a live group member."""
        if not self._subscribed or self._closed:
            return None
        try:
            return self._consumer.consumer_group_metadata()
        except RuntimeError:
            return None  # closed meanwhile by its own thread

    def _check_open(self) -> None:
        if self._closed:
            raise LogError("the consumer is closed")

    def _resolve(self, tp: TopicPartition, offset: int) -> int:
        if offset >= 0:
            return offset
        if offset not in (OFFSET_BEGINNING, OFFSET_END):
            raise ValueError(f"{tp.topic}[{tp.partition}]: offset must be >= 0, OFFSET_BEGINNING or OFFSET_END")
        try:
            low, high = self._consumer.get_watermark_offsets(_ck_tp(tp), timeout=self._log.timeout)
        except KafkaException as exc:
            raise _exc_error(exc, f"watermarks of {tp.topic}[{tp.partition}]") from exc
        return low if offset == OFFSET_BEGINNING else high

    def assign(self, partitions: dict[TopicPartition, int]) -> None:
        self._check_open()
        if self._subscribed:
            raise LogError(f"consumer of group {self.group!r} is subscribed; it cannot also assign partitions")
        for tp in partitions:
            if self._log._partitions(tp.topic) is None:
                raise UnknownTopicError(f"cannot assign {tp.topic}[{tp.partition}]: the topic does not exist")
        resolved = {tp: self._resolve(tp, offset) for tp, offset in partitions.items()}
        try:
            self._consumer.assign([_ck_tp(tp, offset) for tp, offset in resolved.items()])
        except KafkaException as exc:
            raise _exc_error(exc, "assign") from exc
        self._positions = dict(resolved)

    def subscribe(
        self,
        topics: Sequence[str],
        on_assign: RebalanceCallback | None = None,
        on_revoke: RebalanceCallback | None = None,
    ) -> None:
        self._check_open()
        if self.group is None:
            raise LogError("a consumer without a group cannot subscribe; create it with a group")
        if isinstance(topics, str):
            raise TypeError(f"subscribe takes a list of topics, got the string {topics!r}")

        def assigned(_: Any, partitions: list[confluent_kafka.TopicPartition]) -> None:
            tps = [_tp(p) for p in partitions]
            for tp in tps:
                self._positions[tp] = None  # the committed offset, looked up when asked
            if on_assign is not None:
                on_assign(tps)

        def revoked(_: Any, partitions: list[confluent_kafka.TopicPartition]) -> None:
            tps = [_tp(p) for p in partitions]
            if on_revoke is not None:
                on_revoke(tps)
            for tp in tps:
                self._positions.pop(tp, None)

        try:
            self._consumer.subscribe(list(topics), on_assign=assigned, on_revoke=revoked, on_lost=revoked)
        except KafkaException as exc:
            raise _exc_error(exc, f"subscribe to {list(topics)}") from exc
        self._subscribed = True

    def assignment(self) -> list[TopicPartition]:
        self._check_open()
        return sorted((_tp(p) for p in self._consumer.assignment()), key=lambda tp: (tp.topic, tp.partition))

    def poll(self, timeout: float = 1.0, max_records: int = 500) -> list[Record]:
        self._check_open()
        if max_records < 1:
            raise ValueError(f"max_records must be >= 1, got {max_records}")
        if self._pending_error is not None:
            error, self._pending_error = self._pending_error, None
            raise error
        # consume(n, timeout) waits for n messages; wait only for the first, then take what is buffered.
        first = self._consumer.poll(timeout)
        if first is None:
            return []
        # Any: confluent-kafka's stubs make every field optional, which a consumed record's are not.
        messages: list[Any] = [first]
        if max_records > 1:
            messages += self._consumer.consume(max_records - 1, 0)
        records: list[Record] = []
        for msg in messages:
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                error = _error(err, f"consume from {msg.topic()}[{msg.partition()}]")
                if records:
                    self._pending_error = error  # hand out what was read first
                    break
                raise error
            tp = TopicPartition(msg.topic(), msg.partition())
            offset = msg.offset()
            records.append(
                Record(
                    tp.topic,
                    tp.partition,
                    offset,
                    msg.key(),
                    msg.value(),
                    msg.timestamp()[1],
                    tuple(msg.headers() or ()),
                )
            )
            self._positions[tp] = offset + 1
        return records

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._check_open()
        if tp not in self._positions:
            raise LogError(f"cannot seek {tp.topic}[{tp.partition}]: it is not assigned to this consumer")
        resolved = self._resolve(tp, offset)
        try:
            self._consumer.seek(_ck_tp(tp, resolved))
        except KafkaException as exc:
            raise _exc_error(exc, f"seek {tp.topic}[{tp.partition}] to {resolved}") from exc
        self._positions[tp] = resolved

    def position(self, tp: TopicPartition) -> int:
        self._check_open()
        if tp not in self._positions:
            raise LogError(f"{tp.topic}[{tp.partition}] is not assigned to this consumer")
        position = self._positions[tp]
        if position is None:
            # Just assigned by the group: librdkafka starts at the committed offset, else the beginning.
            committed = self.committed([tp])[tp]
            position = committed if committed is not None else self._resolve(tp, OFFSET_BEGINNING)
            self._positions[tp] = position
        return position

    def commit(self, offsets: dict[TopicPartition, int] | None = None) -> None:
        self._check_open()
        if self.group is None:
            raise LogError("commit() needs a consumer group: create the consumer with log.consumer(group=...)")
        if offsets is None:
            offsets = {tp: self.position(tp) for tp in list(self._positions)}
        check_offsets(offsets)
        if not offsets:
            return
        try:
            results = self._consumer.commit(offsets=[_ck_tp(tp, o) for tp, o in offsets.items()], asynchronous=False)
        except KafkaException as exc:
            raise _exc_error(exc, f"commit offsets of group {self.group!r}") from exc
        for r in results or ():
            if r.error is not None:
                raise _error(r.error, f"commit offset of group {self.group!r} for {r.topic}[{r.partition}]")

    def committed(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
        self._check_open()
        if self.group is None:
            raise LogError("committed() needs a consumer group: create the consumer with log.consumer(group=...)")
        try:
            results = self._consumer.committed([_ck_tp(tp) for tp in partitions], timeout=self._log.timeout)
        except KafkaException as exc:
            raise _exc_error(exc, f"committed offsets of group {self.group!r}") from exc
        return _committed_map(results, f"committed offset of group {self.group!r} for")

    def close(self) -> None:
        if self._closed:
            return
        try:
            self._consumer.close()  # leaves the group; on_revoke runs in here
        finally:
            self._closed = True
            self._positions.clear()
