"""The log abstraction: topics of partitions of records, addressed by offset.

Two backends implement it (``sqlite:///dir`` and ``kafka://host:port``); ``streams.log.open_log(url)``
picks one. Everything above this package (the registry, the streams runtime) is written against these
classes only, and ``tests/log/`` holds the contract both backends must pass.

The API is synchronous and thread-safe per object, like confluent-kafka's: a producer may be shared by
threads, a consumer belongs to one thread. Async callers run the blocking calls in a thread.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

Headers = tuple[tuple[str, bytes | None], ...]


class LogError(Exception):
    """Base of every error the log raises."""


class TopicExistsError(LogError):
    """``create_topic`` on a topic that already exists."""


class UnknownTopicError(LogError):
    """The topic does not exist."""


class TopicConfigError(LogError):
    """An existing topic does not have the partitions or cleanup policy that was required."""


class ProducerFencedError(LogError):
    """Another producer with the same transactional id has started; this one may no longer write."""


class TransactionError(LogError):
    """A transaction call was made in the wrong state (e.g. commit without begin)."""


class LogTimeoutError(LogError):
    """The backend did not answer within the timeout; the operation may or may not have taken effect."""


class RecordTooLargeError(LogError):
    """The record exceeds the backend's maximum record size."""


@dataclass(frozen=True, slots=True)
class TopicPartition:
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    partitions: int
    compacted: bool
    config: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None  # None is a tombstone
    timestamp: int  # milliseconds since the epoch
    headers: Headers = ()


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    """Where a produced record landed."""

    topic: str
    partition: int
    offset: int
    timestamp: int


DeliveryCallback = Callable[[RecordMetadata | None, LogError | None], None]
RebalanceCallback = Callable[[list[TopicPartition]], None]


class Producer(abc.ABC):
    """Writes records. ``produce`` is durable when it returns; ``send`` + ``flush`` batch."""

    @abc.abstractmethod
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
        """Queue a record. With no partition, the key picks one (murmur2, as Kafka's Java client) or,
        without a key, any partition. ``on_delivery`` is called once the record is durable or failed."""

    @abc.abstractmethod
    def flush(self, timeout: float | None = None) -> None:
        """Block until every queued record is durable; raise the first delivery error, if any."""

    def produce(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        partition: int | None = None,
        headers: Iterable[tuple[str, bytes | None]] | None = None,
        timestamp: int | None = None,
        timeout: float | None = None,
    ) -> RecordMetadata:
        """Write one record and return where it landed; the record is durable when this returns."""
        result: list[RecordMetadata] = []
        errors: list[LogError] = []

        def done(md: RecordMetadata | None, err: LogError | None) -> None:
            if err is not None:
                errors.append(err)
            elif md is not None:
                result.append(md)

        self.send(
            topic, value, key, partition=partition, headers=headers, timestamp=timestamp, on_delivery=done
        )
        self.flush(timeout)
        if errors:
            raise errors[0]
        if not result:
            raise LogTimeoutError(f"no delivery report for a record to {topic!r}")
        return result[0]

    # Transactions: only for producers created with a transactional id.
    @abc.abstractmethod
    def init_transactions(self, timeout: float | None = None) -> None:
        """Register the transactional id, fencing any older producer that used it."""

    @abc.abstractmethod
    def begin_transaction(self) -> None: ...

    @abc.abstractmethod
    def send_offsets_to_transaction(self, group: str, offsets: dict[TopicPartition, int]) -> None:
        """Commit these consumer offsets (next offset to read) atomically with the transaction."""

    @abc.abstractmethod
    def commit_transaction(self, timeout: float | None = None) -> None: ...

    @abc.abstractmethod
    def abort_transaction(self, timeout: float | None = None) -> None: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Consumer(abc.ABC):
    """Reads records from assigned partitions, in offset order per partition.

    Either ``assign`` explicit partitions (no group), or ``subscribe`` to topics as a member of the
    consumer's group, which calls ``on_assign``/``on_revoke`` as partitions move between members.
    Offsets given and returned are always "next offset to read".
    """

    group: str | None

    @abc.abstractmethod
    def assign(self, partitions: dict[TopicPartition, int]) -> None:
        """Read exactly these partitions from these offsets (``OFFSET_BEGINNING``/``OFFSET_END`` allowed)."""

    @abc.abstractmethod
    def subscribe(
        self,
        topics: Sequence[str],
        on_assign: RebalanceCallback | None = None,
        on_revoke: RebalanceCallback | None = None,
    ) -> None:
        """Join the group; assigned partitions start at the group's committed offset (else the beginning)."""

    @abc.abstractmethod
    def assignment(self) -> list[TopicPartition]: ...

    @abc.abstractmethod
    def poll(self, timeout: float = 1.0, max_records: int = 500) -> list[Record]:
        """Return up to ``max_records`` records, waiting up to ``timeout`` seconds for the first one."""

    @abc.abstractmethod
    def seek(self, tp: TopicPartition, offset: int) -> None: ...

    @abc.abstractmethod
    def position(self, tp: TopicPartition) -> int:
        """The offset of the next record ``poll`` will return for ``tp``."""

    @abc.abstractmethod
    def commit(self, offsets: dict[TopicPartition, int] | None = None) -> None:
        """Commit ``offsets`` (default: current positions) for the consumer's group, synchronously."""

    @abc.abstractmethod
    def committed(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]: ...

    @abc.abstractmethod
    def close(self) -> None:
        """Leave the group (calling ``on_revoke``) and release resources."""

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


OFFSET_BEGINNING = -2
OFFSET_END = -1


class Log(abc.ABC):
    """A connection to one backend. Creates producers, consumers and topics."""

    url: str

    @abc.abstractmethod
    def create_topic(
        self, name: str, partitions: int = 1, *, compacted: bool = False, config: dict[str, str] | None = None
    ) -> TopicInfo:
        """Create a topic; ``TopicExistsError`` if it exists."""

    @abc.abstractmethod
    def describe_topic(self, name: str) -> TopicInfo | None:
        """The topic's partitions and policy, or None if it does not exist."""

    @abc.abstractmethod
    def delete_topic(self, name: str) -> None: ...

    @abc.abstractmethod
    def list_topics(self) -> list[str]: ...

    def ensure_topic(self, name: str, partitions: int = 1, *, compacted: bool = False) -> TopicInfo:
        """Create the topic, or check that the existing one has exactly these properties."""
        info = self.describe_topic(name)
        if info is None:
            try:
                return self.create_topic(name, partitions, compacted=compacted)
            except TopicExistsError:
                info = self.describe_topic(name)
                assert info is not None
        if info.partitions != partitions:
            raise TopicConfigError(
                f"topic {name!r} has {info.partitions} partitions, expected exactly {partitions}"
            )
        if compacted and not info.compacted:
            raise TopicConfigError(f"topic {name!r} must have cleanup.policy=compact")
        return info

    @abc.abstractmethod
    def producer(self, transactional_id: str | None = None) -> Producer: ...

    @abc.abstractmethod
    def consumer(self, group: str | None = None, *, client_id: str | None = None) -> Consumer: ...

    @abc.abstractmethod
    def end_offsets(self, topic: str) -> dict[int, int]:
        """Per partition, the offset the next produced record will get (the high watermark).

        Some Kafka-protocol brokers report this wrongly; code that must know it has read everything
        uses a barrier (produce a record, read up to its offset) instead."""

    @abc.abstractmethod
    def committed(self, group: str, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
        """The group's committed offsets (None where nothing was committed)."""

    def compact(self, topic: str) -> int:
        """Drop records superseded by a newer record with the same key, where the backend does not do it
        by itself, and return how many went. Kafka brokers compact on their own: the default does nothing."""
        return 0

    @abc.abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Log:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
