"""``KafkaProducer``: an idempotent (optionally transactional) confluent-kafka Producer behind ``Producer``."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

import confluent_kafka
from confluent_kafka import KafkaError, KafkaException

from streams.log.base import (
    BatchSendError,
    DeliveryCallback,
    HeaderPairs,
    KeyedRecord,
    LogError,
    LogTimeoutError,
    Producer,
    ProducerFencedError,
    Record,
    RecordMetadata,
    TopicPartition,
    TransactionError,
    TransactionState,
    UnknownTopicError,
    check_offsets,
)
from streams.log.kafka.connection import OwningLog, from_kafka_error, from_kafka_exception, librdkafka_log, to_ck_tp
from streams.log.kafka.positional import ANY_PARTITION, NOW, produce_record

__all__ = ["KafkaProducer"]

_POLL_EVERY = 100  # sends between two polls for delivery reports (flush serves the rest)


class KafkaProducer(Producer):
    """An idempotent (optionally transactional) confluent-kafka Producer."""

    def __init__(self, log: OwningLog, transactional_id: str | None) -> None:
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
        headers: HeaderPairs | None = None,
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
            produce_record(
                self._producer,
                topic,
                value,
                key,
                ANY_PARTITION if partition is None else partition,
                callback,
                NOW if timestamp is None else timestamp,
                None if headers is None else list(headers),
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
        error = from_kafka_exception(exc, f"send to topic {topic!r}")
        if isinstance(error, ProducerFencedError) and self.transactional_id is not None:
            self.transaction.fence()
        return error

    def _batch_callback(
        self, topic: str, partition: int | None, first_key: bytes | None
    ) -> Callable[[KafkaError | None, Any], None]:
        """A batch's checks, once (the producer open, the transaction, the topic and partition), and the topic's
        delivery callback for its records."""
        if self._closed:
            raise LogError("the producer is closed")
        self.transaction.check_send()
        self._check_target(topic, partition, first_key)
        callback = self._plain_callbacks.get(topic)
        if callback is None:
            callback = self._plain_callbacks[topic] = self._delivery_callback(topic, None)
        return callback

    def send_batch(
        self,
        topic: str,
        partition: int,
        records: Sequence[tuple[bytes | None, bytes | None]],
        *,
        headers: HeaderPairs | None = None,
        on_last_delivery: DeliveryCallback | None = None,
    ) -> None:
        """The checks once, then one ``produce`` per record (a changelog flush sends thousands)."""
        if not records:
            return
        callback = self._batch_callback(topic, partition, records[0][0])
        if self._topics[topic][1] and None in map(itemgetter(0), records):
            raise LogError(f"topic {topic!r} is compacted: every record needs a key")
        header_list: list[tuple[str, str | bytes | None]] | None = None if headers is None else list(headers)
        try:
            producer = self._producer
            for key, value in records if on_last_delivery is None else records[:-1]:
                produce_record(producer, topic, value, key, partition, callback, NOW, header_list)
            if on_last_delivery is not None:
                key, value = records[-1]
                last_callback = self._delivery_callback(topic, on_last_delivery)
                produce_record(producer, topic, value, key, partition, last_callback, NOW, header_list)
            self._producer.poll(0)
        except KafkaException as exc:
            raise self._send_error(exc, topic) from exc

    def send_records(self, topic: str, records: Sequence[KeyedRecord], *, headers: HeaderPairs | None = None) -> None:
        """The checks and the callback look-up once, then one ``produce`` per record with its own timestamp and
        ``ANY_PARTITION``: librdkafka's partitioner hashes the key, as for ``send`` without a partition (a
        window's final results sent in one call)."""
        if not records:
            return
        callback = self._batch_callback(topic, None, records[0][0])
        compacted = self._topics[topic][1]
        header_list: list[tuple[str, str | bytes | None]] | None = None if headers is None else list(headers)
        producer = self._producer
        index = 0
        try:
            for index, (key, value, timestamp) in enumerate(records):  # index: of a failure
                if key is None and compacted:
                    raise BatchSendError(index, LogError(f"topic {topic!r} is compacted: every record needs a key"))
                produce_record(
                    producer,
                    topic,
                    value,
                    key,
                    ANY_PARTITION,
                    callback,
                    NOW if timestamp is None else timestamp,
                    header_list,
                )
        except KafkaException as exc:
            error = self._send_error(exc, topic)
            if isinstance(error, (ProducerFencedError, TransactionError)):
                raise error from exc
            raise BatchSendError(index, error) from exc
        try:
            producer.poll(0)  # (every record is queued: an error here is the producer's, not one record's)
        except KafkaException as exc:
            raise self._send_error(exc, topic) from exc

    def _delivery_callback(
        self, topic: str, on_delivery: DeliveryCallback | None
    ) -> Callable[[KafkaError | None, Any], None]:
        def delivered(err: KafkaError | None, msg: Any) -> None:
            if err is not None:
                error = from_kafka_error(err, f"delivery to topic {topic!r} partition {msg.partition()}")
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
            raise from_kafka_exception(exc, f"flush (transactional id {self.transactional_id!r})") from exc
        self._raise_first_error()
        if remaining:
            raise LogTimeoutError(f"{remaining} records were not delivered within {timeout}s")

    def _txn(self, call: Callable[..., None], what: str, *args: object) -> None:
        try:
            call(*args)
        except KafkaException as exc:
            error = from_kafka_exception(exc, f"{what} (transactional id {self.transactional_id!r})")
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
        positions = [to_ck_tp(tp, offset) for tp, offset in offsets.items()]
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
            librdkafka_log.warning("closing producer %r: %s", self.transactional_id, exc)
