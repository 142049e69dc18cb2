"""``KafkaLog``: a Kafka cluster as a log, through confluent-kafka's AdminClient (topics, end offsets, group
offsets) and the producers and consumers it opens.

``KafkaLog("kafka://h1:9092,h2:9092?session.timeout.ms=6000")``; keyword names may use ``_`` for ``.``
(``session_timeout_ms=6000``). Defaults are production ones: idempotent producer with ``acks=all``,
``murmur2_random`` partitioning (the Java client's, and the SQLite backend's), manual commits, reading from
the earliest offset when a group has no committed offset, and ``read_committed`` isolation.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any

import confluent_kafka
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    ConfigSource,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

from streams.log.base import (
    Capabilities,
    GroupSettings,
    Log,
    LogError,
    LogTimeoutError,
    TopicInfo,
    TopicPartition,
    UnknownTopicError,
    check_partitions,
    check_topic_name,
)
from streams.log.kafka.connection import (
    committed_offsets,
    from_kafka_exception,
    group_options,
    librdkafka_log,
    option_value,
    parse_kafka_url,
    split_options,
    to_ck_tp,
    topic_metadata,
)
from streams.log.kafka.consumer import KafkaConsumer
from streams.log.kafka.producer import KafkaProducer
from streams.log.lease import GroupLease

__all__ = ["FETCH_QUEUE_BACKOFF_MS", "KafkaLog"]

# How long admin calls and metadata look-ups wait for the cluster.
DEFAULT_TIMEOUT = 30.0
_LIBRDKAFKA_SESSION_TIMEOUT_MS = 45000
# librdkafka waits this long (its default: 1000 ms) before it fetches again for a partition whose local queue was
# over its thresholds; a reader faster than the fetches then finds the queue empty and waits. 1,000,000 records
# from the test broker by one plain consumer: 4.4 s (32 empty polls of 100 ms) with the default, 0.42 s (none)
# with 50; a windowed count over them 12.6 s -> 9.0 s. (The streams benchmarks give Quix Streams the same.)
FETCH_QUEUE_BACKOFF_MS = 50


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
            options[key.replace("_", ".")] = option_value(value)
        for key, value in group_options(groups).items():
            if key not in options and f"consumer.{key}" not in options:
                options[f"consumer.{key}"] = value
        self._options = split_options(options)
        base: dict[str, Any] = {"bootstrap.servers": self.bootstrap, "logger": librdkafka_log}
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
            "fetch.queue.backoff.ms": str(FETCH_QUEUE_BACKOFF_MS),
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
            raise from_kafka_exception(exc, context) from exc
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
            raise from_kafka_exception(exc, f"metadata from {self.bootstrap}") from exc

    def _topic_metadata(self, name: str) -> Any:
        """The topic's metadata, or None if it does not exist."""
        return topic_metadata(self._admin, name, self.timeout, self.bootstrap)

    def partition_count(self, name: str) -> int | None:
        """How many partitions the topic has, or None when it does not exist (no config lookup)."""
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
        topic_config = {k: option_value(v) for k, v in (config or {}).items()}
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
        partitions = self.partition_count(name)
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
        return self._list_offsets(topic, OffsetSpec.latest(), "end")

    def start_offsets(self, topic: str) -> dict[int, int]:
        return self._list_offsets(topic, OffsetSpec.earliest(), "start")

    def _list_offsets(self, topic: str, spec: OffsetSpec, which: str) -> dict[int, int]:
        partitions = self.partition_count(topic)
        if partitions is None:
            raise UnknownTopicError(f"{which} offsets: topic {topic!r} does not exist")
        request = {confluent_kafka.TopicPartition(topic, p): spec for p in range(partitions)}
        futures = self._admin.list_offsets(
            request,
            isolation_level=confluent_kafka.IsolationLevel.READ_UNCOMMITTED,
            request_timeout=self.timeout,
        )
        return {
            tp.partition: self._result(f, f"{which} offset of {topic}[{tp.partition}]").offset
            for tp, f in futures.items()
        }

    def committed(self, group: str, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
        # A consumer that never subscribes reads the group's offsets without joining (no rebalance).
        consumer = confluent_kafka.Consumer({**self._consumer_conf, "group.id": group})
        try:
            results = consumer.committed([to_ck_tp(tp) for tp in partitions], timeout=self.timeout)
        except KafkaException as exc:
            raise from_kafka_exception(exc, f"committed offsets of group {group!r}") from exc
        finally:
            consumer.close()
        return committed_offsets(results, f"committed offset of group {group!r} for")

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
