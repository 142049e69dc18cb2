"""The log abstraction: topics of partitions of records, addressed by offset.

Two backends implement it (``sqlite:///dir`` and ``kafka://host:port``); ``streams.log.open_log(url)``
picks one by URL scheme. Everything above this package (the registry, the streams runtime) is written
against these classes only: what a backend can do is in ``Log.capabilities``, never in its URL, and
``tests/log/`` holds the contract every backend must pass.

The API is synchronous and thread-safe per object, like confluent-kafka's: a producer may be shared by
threads, a consumer belongs to one thread. Async callers run the blocking calls in a thread.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from streams.log.redact import redact_url

#: One record header: its name and value.
Header = tuple[str, bytes | None]
#: A record's headers, as a ``Record`` carries them.
Headers = tuple[Header, ...]
#: Headers as a caller hands them to ``send``: any iterable of ``(name, value)`` pairs.
HeaderPairs = Iterable[Header]


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


class StorageError(LogError):
    """The backend's own storage failed (an I/O error, a damaged or unreadable file, no permission); the
    operation did not take effect. The message names the storage and the cause."""


class StorageFullError(StorageError):
    """No room left to store the records (disk, file system or size limit full); nothing was written."""


class BatchSendError(LogError):
    """``Producer.send_records`` stopped at ``records[index]``, which the log refused with ``error`` (a record's
    own error, e.g. ``RecordTooLargeError``): the records before it were sent, the ones after it were not. The
    caller decides about that one record (a production handler) and sends the rest."""

    def __init__(self, index: int, error: LogError) -> None:
        super().__init__(f"record {index} of the batch: {error}")
        self.index = index
        self.error = error


#: One record of ``Producer.send_records``: key, value and timestamp (None: the producer's clock).
KeyedRecord = tuple[bytes | None, bytes | None, int | None]


def send_each(
    send: Callable[..., None], topic: str, records: Sequence[KeyedRecord], headers: HeaderPairs | None
) -> None:
    """``send`` of each record of ``records`` to ``topic``, with no partition (the key picks it) and ``headers``,
    in order: ``Producer.send_records`` on a backend with no faster way. A record's own error stops the batch
    as ``BatchSendError`` (its index); errors of the producer or its transaction (fenced, no transaction)
    concern every record and propagate as they are."""
    for index, (key, value, timestamp) in enumerate(records):
        try:
            send(topic, value, key, headers=headers, timestamp=timestamp)
        except (ProducerFencedError, TransactionError):
            raise
        except LogError as exc:
            raise BatchSendError(index, exc) from exc


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a backend can do. Code above the log branches on these, never on the URL."""

    #: ``subscribe`` shares a group's partitions among members in any number of processes and rebalances
    #: as members come and go. Without it a process owns what it assigns itself, and several registry
    #: instances cannot elect a leader.
    group_membership: bool
    #: Transactional producers (see ``Producer``): atomic writes with consumer offsets, zombie fencing.
    transactions: bool
    #: Compacted topics are compacted by the backend itself; otherwise ``Log.compact`` does it on demand.
    compacts_itself: bool
    #: ``Producer.send`` holds records until ``flush``; otherwise the client sends in the background, and
    #: callers that want records to move on before a commit need not flush them.
    buffers_until_flush: bool
    #: ``Log.lease`` gives exclusive ownership of a name among all of the log's clients, processes
    #: included (through group membership where the backend has it, else through the backend's own
    #: storage). Instances of an application elect their leader with it.
    leases: bool = False


@dataclass(frozen=True, slots=True)
class GroupSettings:
    """Defaults for consumer-group behaviour, for backends with group membership. Settings the log URL
    itself carries win, so an operator (or a test) can always override them."""

    #: Partition assignment: ``"range"`` (a member gets the same partition numbers of every topic),
    #: ``"roundrobin"`` or ``"cooperative-sticky"`` (members keep their partitions when one joins).
    assignment: str | None = None
    #: How long a silent member keeps its partitions, in milliseconds.
    session_timeout_ms: int | None = None
    heartbeat_interval_ms: int | None = None


_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")


def check_topic_name(name: object) -> None:
    """Kafka's topic-name rule, which every backend applies so that names move between them unchanged."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"topic name must be a non-empty string, got {name!r}")
    if name in (".", ".."):
        raise ValueError(f"topic name {name!r} is not allowed")
    if len(name) > 249:
        raise ValueError(f"topic name {name[:40]!r}... is {len(name)} characters; Kafka allows 249")
    if not _TOPIC_NAME.fullmatch(name):
        bad = "".join(sorted(set(re.sub(r"[A-Za-z0-9._-]", "", name))))
        raise ValueError(f"topic name {name!r} contains {bad!r}; only ASCII letters, digits, '.', '_', '-'")


def check_partitions(name: str, partitions: object) -> int:
    """The partition count of a topic to create: an integer >= 1."""
    if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
        raise ValueError(f"topic {name!r}: partitions must be an integer >= 1, got {partitions!r}")
    return partitions


def check_offsets(offsets: Mapping[TopicPartition, int]) -> None:
    """Offsets to commit: keyed by ``TopicPartition``, each the next offset to read (an integer >= 0)."""
    for tp, offset in offsets.items():
        if not isinstance(tp, TopicPartition):
            raise TypeError(f"offsets must be keyed by TopicPartition, got {tp!r}")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset for {tp.topic}[{tp.partition}] must be an integer >= 0, got {offset!r}")


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
class RecordColumns:
    """Records of one partition, in offset order, as one list per field: what ``Consumer.poll_columns`` returns.

    A bulk reader (the Spark data source) turns the lists into Arrow arrays. Building a ``Record`` per message
    costs as much as reading the message, and the reader would only take it apart again."""

    topic: str
    partition: int
    offsets: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]  # None is a tombstone
    timestamps: list[int]  # milliseconds since the epoch
    #: Each record's headers; None unless ``poll_columns`` was asked for them.
    headers: list[Headers] | None = None

    def __len__(self) -> int:
        return len(self.offsets)


def runs_of(records: Sequence[Record]) -> list[RecordColumns]:
    """``records`` (in poll order) as ``RecordColumns`` with headers, one per run of consecutive records of one
    partition: the same records in the same order (what ``Consumer.poll_runs`` returns)."""
    runs: list[list[Record]] = []
    for record in records:
        if runs and (runs[-1][0].topic, runs[-1][0].partition) == (record.topic, record.partition):
            runs[-1].append(record)
        else:
            runs.append([record])
    return [_as_columns(run, headers=True) for run in runs]


def columns_of(records: Sequence[Record], *, headers: bool = False) -> list[RecordColumns]:
    """``records`` (in poll order) as ``RecordColumns``, one per partition in the order each first appears."""
    groups: dict[tuple[str, int], list[Record]] = {}
    for record in records:
        groups.setdefault((record.topic, record.partition), []).append(record)
    return [_as_columns(group, headers=headers) for group in groups.values()]


def _as_columns(group: list[Record], *, headers: bool) -> RecordColumns:
    """Records of one partition, in order, as one ``RecordColumns`` (their headers only when ``headers``)."""
    return RecordColumns(
        group[0].topic,
        group[0].partition,
        [r.offset for r in group],
        [r.key for r in group],
        [r.value for r in group],
        [r.timestamp for r in group],
        [r.headers for r in group] if headers else None,
    )


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    """Where a produced record landed."""

    topic: str
    partition: int
    offset: int
    timestamp: int


DeliveryCallback = Callable[[RecordMetadata | None, LogError | None], None]
#: Told of every record whose delivery failed: the record as sent (``offset`` -1) and the log's error.
DeliveryFailureListener = Callable[[Record, LogError], None]
RebalanceCallback = Callable[[list[TopicPartition]], None]


class Producer(abc.ABC):
    """Writes records. ``produce`` is durable when it returns; ``send`` + ``flush`` batch.

    The transaction contract, the same on every backend (``TransactionState`` enforces its state rules):

    * Only a producer created with a ``transactional_id`` has transactions, and only one object at a time
      owns that id: ``init_transactions`` registers it and fences every older producer with the same id,
      whose every later call raises ``ProducerFencedError``. A fenced producer's open transaction never
      commits. This is how a new registry leader or a new owner of a stream task shuts out a zombie.
    * A transactional producer writes only inside a transaction: ``begin_transaction``, then ``send``
      (any topics and partitions) and ``send_offsets_to_transaction`` (a consumer group's next offsets),
      then ``commit_transaction`` (all of it becomes visible at once) or ``abort_transaction`` (none of it
      ever does). ``send`` outside a transaction raises ``TransactionError``; so do ``begin`` before
      ``init_transactions``, a second ``begin``, and ``commit``/``abort`` with nothing begun.
    * ``produce`` (which returns a final offset) is not allowed inside a transaction: ``send`` with
      ``on_delivery`` reports each record's offset once ``commit_transaction`` returns.
    * One transaction is open at a time and one thread drives it; records sent by other producers are not
      part of it. Readers see committed records only (Kafka: ``isolation.level=read_committed``).

    ``on_delivery_failure`` (set by the owner) is told of every record whose delivery failed after the send
    (e.g. a broker refusing a record above the topic's ``max.message.bytes``), with the record itself, at no
    cost to successful deliveries: what a transaction's owner needs to know which output made it fail.
    """

    transaction: TransactionState
    on_delivery_failure: DeliveryFailureListener | None = None

    @abc.abstractmethod
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
        """Queue a record. With no partition, the key picks one (murmur2, as Kafka's Java client) or,
        without a key, any partition. ``on_delivery`` is called once the record is durable or failed."""

    def send_batch(
        self,
        topic: str,
        partition: int,
        records: Sequence[tuple[bytes | None, bytes | None]],
        *,
        headers: HeaderPairs | None = None,
        on_last_delivery: DeliveryCallback | None = None,
    ) -> None:
        """``send`` each ``(key, value)`` of ``records`` to ``partition``, all with ``headers``;
        ``on_last_delivery`` reports the last one (a store's changelog flush). Backends may do it faster."""
        last = len(records) - 1
        for i, (key, value) in enumerate(records):
            self.send(
                topic,
                value,
                key,
                partition=partition,
                headers=headers,
                on_delivery=on_last_delivery if i == last else None,
            )

    def send_records(self, topic: str, records: Sequence[KeyedRecord], *, headers: HeaderPairs | None = None) -> None:
        """``send`` of each ``(key, value, timestamp)`` of ``records`` to ``topic``, in order, all with ``headers``
        and with no partition: each record lands where ``send`` puts it by its key, at its own timestamp
        (emitted final results of closed windows: many records, one call). Delivery failures reach
        ``on_delivery_failure`` per record, as with ``send``. A record refused at the send raises
        ``BatchSendError`` with its index (the records before it were sent); errors of the producer or its
        transaction raise as ``send`` raises them. Backends may do it faster."""
        send_each(self.send, topic, records, headers)

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
        headers: HeaderPairs | None = None,
        timestamp: int | None = None,
        timeout: float | None = None,
    ) -> RecordMetadata:
        """Write one record and return where it landed; the record is durable when this returns.

        Not inside a transaction, whose records have no final offset before the commit: there, ``send``
        with ``on_delivery``, which reports each record's offset once ``commit_transaction`` returns."""
        if self.transaction.open:
            raise TransactionError(
                f"produce() inside transaction of {self.transaction.transactional_id!r}: a transaction's records "
                "land at commit, so use send(on_delivery=...) and read the offsets after commit_transaction()"
            )
        result: list[RecordMetadata] = []
        errors: list[LogError] = []

        def done(md: RecordMetadata | None, err: LogError | None) -> None:
            if err is not None:
                errors.append(err)
            elif md is not None:
                result.append(md)

        self.send(topic, value, key, partition=partition, headers=headers, timestamp=timestamp, on_delivery=done)
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


class TransactionState:
    """The state rules of the transaction contract (see ``Producer``), kept once for every backend.

    A backend calls these before acting; fencing is the backend's to detect and report (``fence``)."""

    def __init__(self, transactional_id: str | None) -> None:
        self.transactional_id = transactional_id
        self.initialized = False
        self.open = False
        self.fenced = False
        self._fenced_as = ""

    def _require(self, what: str) -> str:
        if self.transactional_id is None:
            raise TransactionError(f"{what}: this producer has no transactional_id")
        if self.fenced:
            raise self._fenced_error()
        return self.transactional_id

    def _fenced_error(self) -> ProducerFencedError:
        return ProducerFencedError(
            f"producer {self.transactional_id!r}{self._fenced_as} was fenced by a newer producer with the "
            "same transactional id"
        )

    def init(self) -> None:
        tid = self._require("init_transactions")
        if self.initialized:
            raise TransactionError(f"init_transactions already called for producer {tid!r}")

    def mark_initialized(self) -> None:
        self.initialized = True

    def begin(self) -> None:
        tid = self._require("begin_transaction")
        if not self.initialized:
            raise TransactionError(f"producer {tid!r}: call init_transactions() before begin_transaction()")
        if self.open:
            raise TransactionError(f"producer {tid!r}: a transaction is already open")
        self.open = True

    def check_send(self) -> None:
        """Before a send: a transactional producer must have a transaction open."""
        if self.transactional_id is None:
            return
        tid = self._require("send")
        if not self.open:
            raise TransactionError(f"producer {tid!r} is transactional: call begin_transaction() before send()")

    def check_in_transaction(self, what: str) -> None:
        tid = self._require(what)
        if not self.open:
            raise TransactionError(f"producer {tid!r}: {what}() without begin_transaction()")

    def end(self) -> None:
        """The open transaction committed or aborted (or failed and is gone)."""
        self.open = False

    def fence(self, which: str = "") -> ProducerFencedError:
        """The backend found a newer producer with this id; ``which`` names this one (e.g. its epoch).
        Returns the error every later call raises, for the backend to raise now."""
        self.fenced = True
        self.open = False
        self._fenced_as = f" ({which})" if which else ""
        return self._fenced_error()


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

    def poll_columns(
        self, timeout: float = 1.0, max_records: int = 500, *, headers: bool = False
    ) -> list[RecordColumns]:
        """``poll``, with the records as columns: one ``RecordColumns`` per partition that had records, each in
        offset order, with each record's headers only when ``headers`` is true. The same records, errors and
        positions as ``poll`` gives, without a ``Record`` per message where the backend can do so (both of ours
        do); this default builds them from ``poll`` so that any backend has it."""
        return columns_of(self.poll(timeout, max_records), headers=headers)

    def poll_runs(self, timeout: float = 1.0, max_records: int = 500) -> list[RecordColumns]:
        """``poll``, in the same order, as columns: one ``RecordColumns`` (headers included) per run of
        consecutive records of one partition. What a stream thread reads: it hands each run to its task in one
        call, with no ``Record`` per message, and the records keep their poll order across partitions (a task
        reading two topics sees them interleaved as polled). This default builds them from ``poll``."""
        return runs_of(self.poll(timeout, max_records))

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


class Lease(abc.ABC):
    """Exclusive ownership of ``name`` among all clients of one log, processes included.

    At most one holder has it at a time, as far as the backend can see. The holder keeps it by calling
    ``poll`` (several times per ``timeout``); another holder takes it over when this one closes its lease
    or stays silent for longer than ``timeout`` (a crash, a pause). A holder that was paused learns on its
    next ``poll`` that the lease is gone; what it does meanwhile must be fenced by other means (e.g. a
    transactional producer), which is why whoever takes a lease over should fence first."""

    name: str
    holder: str
    #: Seconds of silence after which the lease may go to another holder (the backend's own setting, such
    #: as a group's session timeout, where it has one).
    timeout: float

    @abc.abstractmethod
    def poll(self) -> bool:
        """Keep the lease or try to take it; True while this holder has it. Never blocks for long."""

    @property
    @abc.abstractmethod
    def held(self) -> bool:
        """Whether this holder had the lease at its last ``poll`` and has not been silent since for longer
        than the backend lets it keep the lease unseen."""

    @abc.abstractmethod
    def close(self) -> None:
        """Give the lease up (if held) so that another holder can take it at once."""

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Log(abc.ABC):
    """A connection to one backend. Creates producers, consumers and topics."""

    url: str
    capabilities: Capabilities

    @abc.abstractmethod
    def describe(self) -> str:
        """One line for a startup log: which backend, and where its data lives."""

    @property
    def safe_url(self) -> str:
        """``url`` with passwords and other secrets redacted: the form every message shows."""
        return redact_url(self.url)

    @property
    def local_path(self) -> Path | None:
        """The file that holds this log's data on this machine; None where the data lives elsewhere."""
        return None

    @property
    def group_session_timeout(self) -> float | None:
        """Seconds a silent group member keeps its partitions; None without group membership."""
        return None

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

    def ensure_topic(
        self, name: str, partitions: int = 1, *, compacted: bool = False, config: dict[str, str] | None = None
    ) -> TopicInfo:
        """Create the topic (with ``config``, if given), or check that the existing one has exactly these
        partitions and, if ``compacted``, is compacted."""
        info = self.describe_topic(name)
        if info is None:
            try:
                return self.create_topic(name, partitions, compacted=compacted, config=config)
            except TopicExistsError:
                info = self.describe_topic(name)
                assert info is not None
        if info.partitions != partitions:
            raise TopicConfigError(f"topic {name!r} has {info.partitions} partitions, expected exactly {partitions}")
        if compacted and not info.compacted:
            raise TopicConfigError(f"topic {name!r} must have cleanup.policy=compact")
        return info

    @abc.abstractmethod
    def producer(self, transactional_id: str | None = None) -> Producer: ...

    @abc.abstractmethod
    def consumer(
        self, group: str | None = None, *, client_id: str | None = None, read_committed: bool = True
    ) -> Consumer:
        """A consumer of ``group`` (None: no group, ``assign`` only). ``read_committed=False`` also returns
        records of transactions not committed yet, where the backend stores them before the commit (Kafka);
        a backend that writes a transaction's records only at its commit (SQLite) has nothing more to show."""

    def lease(self, name: str, holder: str, timeout: float) -> Lease:
        """Exclusive ownership of ``name`` (see ``Lease``; ``capabilities.leases``) for ``holder`` (a name
        for logs), given up after ``timeout`` seconds of silence unless the backend has its own setting.
        A backend with group membership can answer with ``streams.log.lease.GroupLease`` (the member that
        owns partition 0 of a one-partition topic named ``name`` holds it), as the Kafka backend does."""
        raise LogError(f"{type(self).__name__} cannot hold a lease {name!r}")

    @abc.abstractmethod
    def end_offsets(self, topic: str) -> dict[int, int]:
        """Per partition, the offset the next produced record will get (the high watermark).

        Some Kafka-protocol brokers report this wrongly; code that must know it has read everything
        uses a barrier (produce a record, read up to its offset) instead."""

    def start_offsets(self, topic: str) -> dict[int, int]:
        """Per partition, the offset of the oldest record still stored (the log start offset; the end offset
        when the partition holds none): where ``OFFSET_BEGINNING`` starts reading. Records before it were
        compacted or deleted. ``UnknownTopicError`` when the topic does not exist."""
        raise LogError(f"{type(self).__name__} cannot tell the start offsets of {topic!r}")

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
