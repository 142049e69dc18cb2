"""``KafkaConsumer``: a confluent-kafka Consumer behind ``Consumer``, with manual commits and its own positions."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import confluent_kafka
from confluent_kafka import KafkaError, KafkaException

from streams.log.base import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    LogError,
    RebalanceCallback,
    Record,
    TopicPartition,
    UnknownTopicError,
    check_offsets,
)
from streams.log.kafka.connection import (
    OwningLog,
    committed_offsets,
    from_ck_tp,
    from_kafka_error,
    from_kafka_exception,
    to_ck_tp,
)

__all__ = ["KafkaConsumer"]


class KafkaConsumer(Consumer):
    """A confluent-kafka Consumer with manual commits and its own view of positions.

    librdkafka's ``position()`` is unknown until a record of the partition has been consumed, so the
    consumer tracks "next offset" itself: from ``assign``/``seek`` (logical offsets resolved through the
    watermarks), from the committed offset after a group assignment, and from every record returned."""

    def __init__(self, log: OwningLog, group: str | None, client_id: str | None, read_committed: bool = True) -> None:
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
            low, high = self._consumer.get_watermark_offsets(to_ck_tp(tp), timeout=self._log.timeout)
        except KafkaException as exc:
            raise from_kafka_exception(exc, f"watermarks of {tp.topic}[{tp.partition}]") from exc
        return low if offset == OFFSET_BEGINNING else high

    def assign(self, partitions: dict[TopicPartition, int]) -> None:
        self._check_open()
        if self._subscribed:
            raise LogError(f"consumer of group {self.group!r} is subscribed; it cannot also assign partitions")
        for tp in partitions:
            if self._log.partition_count(tp.topic) is None:
                raise UnknownTopicError(f"cannot assign {tp.topic}[{tp.partition}]: the topic does not exist")
        resolved = {tp: self._resolve(tp, offset) for tp, offset in partitions.items()}
        try:
            self._consumer.assign([to_ck_tp(tp, offset) for tp, offset in resolved.items()])
        except KafkaException as exc:
            raise from_kafka_exception(exc, "assign") from exc
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
            tps = [from_ck_tp(p) for p in partitions]
            for tp in tps:
                self._positions[tp] = None  # the committed offset, looked up when asked
            if on_assign is not None:
                on_assign(tps)

        def revoked(_: Any, partitions: list[confluent_kafka.TopicPartition]) -> None:
            tps = [from_ck_tp(p) for p in partitions]
            if on_revoke is not None:
                on_revoke(tps)
            for tp in tps:
                self._positions.pop(tp, None)

        try:
            self._consumer.subscribe(list(topics), on_assign=assigned, on_revoke=revoked, on_lost=revoked)
        except KafkaException as exc:
            raise from_kafka_exception(exc, f"subscribe to {list(topics)}") from exc
        self._subscribed = True

    def assignment(self) -> list[TopicPartition]:
        self._check_open()
        return sorted((from_ck_tp(p) for p in self._consumer.assignment()), key=lambda tp: (tp.topic, tp.partition))

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
        append = records.append
        # The next position per partition, set once per poll: a TopicPartition per record costs more than the
        # Record itself.
        last: dict[tuple[str, int], int] = {}
        for msg in messages:
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                error = from_kafka_error(err, f"consume from {msg.topic()}[{msg.partition()}]")
                if records:
                    self._pending_error = error  # hand out what was read first
                    break
                raise error
            record = Record(
                msg.topic(),
                msg.partition(),
                msg.offset(),
                msg.key(),
                msg.value(),
                msg.timestamp()[1],
                tuple(msg.headers() or ()),
            )
            append(record)
            last[record.topic, record.partition] = record.offset
        for (topic, partition), offset in last.items():
            self._positions[TopicPartition(topic, partition)] = offset + 1
        return records

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._check_open()
        if tp not in self._positions:
            raise LogError(f"cannot seek {tp.topic}[{tp.partition}]: it is not assigned to this consumer")
        resolved = self._resolve(tp, offset)
        try:
            self._consumer.seek(to_ck_tp(tp, resolved))
        except KafkaException as exc:
            raise from_kafka_exception(exc, f"seek {tp.topic}[{tp.partition}] to {resolved}") from exc
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
            results = self._consumer.commit(offsets=[to_ck_tp(tp, o) for tp, o in offsets.items()], asynchronous=False)
        except KafkaException as exc:
            raise from_kafka_exception(exc, f"commit offsets of group {self.group!r}") from exc
        for r in results or ():
            if r.error is not None:
                raise from_kafka_error(r.error, f"commit offset of group {self.group!r} for {r.topic}[{r.partition}]")

    def committed(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
        self._check_open()
        if self.group is None:
            raise LogError("committed() needs a consumer group: create the consumer with log.consumer(group=...)")
        try:
            results = self._consumer.committed([to_ck_tp(tp) for tp in partitions], timeout=self._log.timeout)
        except KafkaException as exc:
            raise from_kafka_exception(exc, f"committed offsets of group {self.group!r}") from exc
        return committed_offsets(results, f"committed offset of group {self.group!r} for")

    def close(self) -> None:
        if self._closed:
            return
        try:
            self._consumer.close()  # leaves the group; on_revoke runs in here
        finally:
            self._closed = True
            self._positions.clear()
