"""``KafkaConsumer``: a confluent-kafka Consumer behind ``Consumer``, with manual commits and its own positions."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from operator import itemgetter
from typing import Any, cast

import confluent_kafka
from confluent_kafka import KafkaError, KafkaException, Message

from streams.log.base import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    LogError,
    RebalanceCallback,
    Record,
    RecordColumns,
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
    topic_metadata,
)

__all__ = ["KafkaConsumer"]

_SECOND = itemgetter(1)


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
        # Asked over the consumer's own connection, which its fetches then use: no admin client per consumer.
        for topic in {tp.topic for tp in partitions}:
            if topic_metadata(self._consumer, topic, self._log.timeout, self._log.bootstrap) is None:
                tp = next(tp for tp in partitions if tp.topic == topic)
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

    def _messages(self, timeout: float, max_records: int) -> list[Any]:
        """Up to ``max_records`` consumed messages, none of them an error: up to the first error, which is raised
        when it comes first and else kept for the next call (what was read before it is handed out first)."""
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
        # map over the unbound method: a third of a list comprehension's cost per message (no attribute look-up).
        # Not errors.count(None): that compares a KafkaError with None, which confluent-kafka answers with a TypeError.
        errors = list(map(Message.error, messages))
        failed = [i for i, err in enumerate(errors) if err is not None]
        if not failed:
            return messages
        good: list[Any] = []
        kept = 0
        for i in failed:
            good += messages[kept:i]
            kept = i + 1
            msg = messages[i]
            err = msg.error()
            if err.code() == KafkaError._PARTITION_EOF:
                continue
            error = from_kafka_error(err, f"consume from {msg.topic()}[{msg.partition()}]")
            if not good:
                raise error
            self._pending_error = error
            return good
        return good + messages[kept:]

    def poll(self, timeout: float = 1.0, max_records: int = 500) -> list[Record]:
        records = [
            Record(
                msg.topic(),
                msg.partition(),
                msg.offset(),
                msg.key(),
                msg.value(),
                msg.timestamp()[1],
                tuple(msg.headers() or ()),
            )
            for msg in self._messages(timeout, max_records)
        ]
        # The next position per partition, set once per poll: a TopicPartition per record costs more than the
        # Record itself.
        last = {(record.topic, record.partition): record.offset for record in records}
        for (topic, partition), offset in last.items():
            self._positions[TopicPartition(topic, partition)] = offset + 1
        return records

    def poll_columns(
        self, timeout: float = 1.0, max_records: int = 500, *, headers: bool = False
    ) -> list[RecordColumns]:
        messages = self._messages(timeout, max_records)
        return self._columns(self._by_partition(messages), headers) if messages else []

    def poll_runs(self, timeout: float = 1.0, max_records: int = 500) -> list[RecordColumns]:
        # As ``poll_columns``, but split where the partition changes instead of grouped: the poll order is kept.
        messages = self._messages(timeout, max_records)
        return self._columns(self._runs(messages), True) if messages else []

    def _columns(self, parts: list[tuple[tuple[str, int], list[Any]]], headers: bool) -> list[RecordColumns]:
        """Each ``((topic, partition), messages)`` of ``parts`` as one ``RecordColumns``, straight from the messages
        (a C-level loop per column instead of a ``Record`` per message); the positions move past them."""
        out = []
        for (topic, partition), group in parts:
            offsets: list[int] = cast("list[int]", list(map(Message.offset, group)))  # the stubs say int | None
            pairs: Any = map(Message.headers, group) if headers else None  # lists of pairs or None (not dicts)
            out.append(
                RecordColumns(
                    topic,
                    partition,
                    offsets,
                    list(map(Message.key, group)),
                    list(map(Message.value, group)),
                    list(map(_SECOND, map(Message.timestamp, group))),  # (type, timestamp)
                    None if pairs is None else [() if h is None else tuple(h) for h in pairs],
                )
            )
            self._positions[TopicPartition(topic, partition)] = offsets[-1] + 1
        return out

    def _partition_keys(self, messages: list[Any]) -> list[Any]:
        """Each message's partition: its number when every assigned partition is of one topic, else (topic,
        number)."""
        if len({tp.topic for tp in self._positions}) == 1:
            return list(map(Message.partition, messages))
        return [(msg.topic(), msg.partition()) for msg in messages]

    def _runs(self, messages: list[Any]) -> list[tuple[tuple[str, int], list[Any]]]:
        """``messages`` as runs of consecutive messages of one partition, in order (librdkafka hands out a fetched
        batch of one partition at a time: a poll has few runs, often one)."""
        keys = self._partition_keys(messages)
        if keys.count(keys[0]) == len(keys):
            return [((messages[0].topic(), messages[0].partition()), messages)]
        cuts = [i for i in range(1, len(keys)) if keys[i] != keys[i - 1]]
        bounds = zip([0, *cuts], [*cuts, len(keys)], strict=True)
        return [((messages[a].topic(), messages[a].partition()), messages[a:b]) for a, b in bounds]

    def _by_partition(self, messages: list[Any]) -> list[tuple[tuple[str, int], list[Any]]]:
        """``messages`` grouped by partition, in the order each partition first appears (librdkafka returns one
        partition's messages in offset order). librdkafka hands out only the assigned partitions' messages, so a
        consumer assigned one partition (a bulk reader) has nothing to group; one of one topic tells partitions
        apart by number alone, and a poll from one partition is found by one count instead of a loop."""
        first = messages[0]
        if len(self._positions) == 1 and not self._subscribed:
            return [((first.topic(), first.partition()), messages)]
        keys = self._partition_keys(messages)
        if keys.count(keys[0]) == len(keys):
            return [((first.topic(), first.partition()), messages)]
        groups: dict[Any, list[Any]] = {}
        for key, msg in zip(keys, messages, strict=True):
            groups.setdefault(key, []).append(msg)
        return [((group[0].topic(), group[0].partition()), group) for group in groups.values()]

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
