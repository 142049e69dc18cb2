"""The ``_schemas`` log as the registry sees it: a reader that feeds ``State``, and writes that wait for it.

A reader thread polls the log and hands batches to the event loop (``call_soon_threadsafe``), where
``State.apply`` runs; so state is only touched on the loop thread. A write produces in a worker thread and
then awaits the moment its own reader has applied that offset (read-your-writes), never blocking the loop.

Where several instances share the log, only the elected leader may write: such a store is given an
``AppenderProvider`` and appends through whatever ``Appender`` it provides at the time (the leader's fenced
producer), or refuses with 50004 while there is none. (Appender, not writer: in ``serdes`` a writer is a
serializer.)

The reader is a ``PartitionFollower``: it never dies silently, it retries and starts over on a new
consumer. While it cannot read, the store is not ``ready`` and refuses writes with 50001 naming the cause
(a write it could not read back would only time out, after it had been applied). A record that cannot be
applied is logged and skipped, as Confluent's reader does.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from typing import Generic, Protocol, TypeVar

from registry import errors
from registry.follower import PartitionFollower
from registry.offsets import OffsetWatcher
from registry.schemas_topic import Key
from registry.state import State
from streams.log import (
    OFFSET_BEGINNING,
    Log,
    LogError,
    LogTimeoutError,
    Producer,
    ProducerFencedError,
    Record,
    RecordMetadata,
    RecordTooLargeError,
    TopicPartition,
)

log = logging.getLogger(__name__)

NOOP_KEY = Key("NOOP").encode()


class Appender(Protocol):
    """Appends one record to partition 0 of ``topic`` (``_schemas``) and returns where it landed once it is
    durable."""

    def __call__(self, topic: str, value: bytes | None, key: bytes, timeout: float) -> RecordMetadata: ...


class AppenderProvider(Protocol):
    """Where a store that may not append on its own gets its appender (``registry.leader.AppenderSlot``)."""

    def current(self) -> Appender | None:
        """The appender to use now; None while this node may not write (it is not the leader)."""
        ...


class Replica(Protocol):
    """What a log store keeps up to date: a state machine over one compacted topic, changed only by ``apply``
    (``State`` over ``_schemas``, ``registry.dek.state.DekState`` over ``_dek_registry_keys``)."""

    offset: int  # the last applied offset

    def apply(self, offset: int, key_raw: bytes | None, value_raw: bytes | None, timestamp: int) -> None: ...

    def summary(self) -> str:
        """What the replay rebuilt, for the startup log line."""
        ...


R = TypeVar("R", bound=Replica)


class LogStore(Generic[R]):
    """One compacted, one-partition topic replayed into a ``Replica`` and written through the leader's
    appender; ``Store`` is the ``_schemas`` one."""

    def __init__(
        self,
        log_backend: Log,
        topic: str,
        state: R,
        *,
        timeout: float,
        appenders: AppenderProvider | None = None,
    ) -> None:
        """``appenders``: None when this store is the only one to append to the log (it produces itself);
        otherwise every write goes through ``appenders.current()``."""
        self.log = log_backend
        self.topic = topic
        self.timeout = timeout
        self.state = state
        #: the offset up to which ``state`` has applied the log
        self.applied = OffsetWatcher()
        self.records_replayed = 0
        self._appenders = appenders
        self._tp = TopicPartition(topic, 0)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reader: PartitionFollower | None = None
        self._producer: Producer | None = None

    # ---- lifecycle --------------------------------------------------------------------------------------

    def open(self) -> None:
        """Create or validate the topic and replay it to the end (blocking; call before serving)."""
        info = self.log.ensure_topic(self.topic, 1, compacted=True)
        log.info("store topic %r: %d partition, compacted=%s", info.name, info.partitions, info.compacted)
        self.log.compact(self.topic)  # a no-op where the backend compacts by itself
        self._producer = self.log.producer()
        client_id = f"KafkaStore-reader-{self.topic}"
        consumer = self.log.consumer(None, client_id=client_id)
        consumer.assign({self._tp: OFFSET_BEGINNING})
        # Catching up is decided by a barrier: our own NOOP's offset, then read up to it.
        target = self._producer.produce(self.topic, None, NOOP_KEY, partition=0).offset
        started = time.monotonic()
        last_report = started
        while self.state.offset < target:
            batch = consumer.poll(0.5, 5000)
            self._apply_records(batch)
            self.records_replayed += len(batch)
            if time.monotonic() - last_report > 5:
                last_report = time.monotonic()
                log.info("replaying %s: at offset %d of %d", self.topic, self.state.offset, target)
        log.info(
            "replayed %d records of %s in %.2fs: %s",
            self.records_replayed,
            self.topic,
            time.monotonic() - started,
            self.state.summary(),
        )
        self.applied.advance(self.state.offset)
        self._reader = PartitionFollower(
            self.log, self._tp, self._hand_over, consumer=consumer, offset=self.state.offset + 1, client_id=client_id
        )

    @property
    def reader_failure(self) -> str | None:
        """Why the reader cannot read the log right now; None while it can (or before ``open``)."""
        return self._reader.failure if self._reader is not None else None

    @property
    def ready(self) -> bool:
        """Replayed, and the reader follows the log: what a readiness check should report."""
        return self._reader is not None and self._reader.failure is None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start following the log; from now on state changes happen on ``loop``."""
        assert self._reader is not None, "Store.open() first"
        self._loop = loop
        self._reader.start(f"{self.topic}-reader")

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
        self.applied.close()
        if self._producer is not None:
            self._producer.close()

    def _hand_over(self, batch: list[Record]) -> bool:
        """The reader's batch, to be applied on the loop thread (False once the loop is closed)."""
        assert self._loop is not None
        try:
            self._loop.call_soon_threadsafe(self._apply_batch, batch)
        except RuntimeError:  # loop closed during shutdown
            return False
        return True

    def _apply_batch(self, batch: list[Record]) -> None:
        self._apply_records([r for r in batch if r.offset > self.state.offset])
        self.applied.advance(self.state.offset)

    def _apply_records(self, records: list[Record]) -> None:
        st = self.state
        for r in records:
            try:
                st.apply(r.offset, r.key, r.value, r.timestamp)
            except Exception:  # State.apply skips what it knows to be malformed; this is the backstop
                log.exception("skipping %s record at offset %d: applying it failed", self.topic, r.offset)
                st.offset = r.offset

    # ---- writing ----------------------------------------------------------------------------------------

    def _appender(self) -> Appender:
        if self._appenders is None:
            return self._produce
        appender = self._appenders.current()
        if appender is None:
            raise errors.leader_not_known()
        return appender

    def _produce(self, topic: str, value: bytes | None, key: bytes, timeout: float) -> RecordMetadata:
        """The appender of a store that is the only one to append to the log: its own producer."""
        assert self._producer is not None, "Store.open() first"
        return self._producer.produce(topic, value, key, partition=0, timeout=timeout)

    async def write(self, key: bytes, value: bytes | None, operation: str = "Register") -> int:
        """Produce one record and return once this node's state includes it."""
        if self.reader_failure is not None:
            cause = self.reader_failure
            raise errors.store_error(f"{operation} operation failed: the store cannot read its log ({cause})")
        call = functools.partial(self._appender(), self.topic, value, key, self.timeout)
        try:
            md = await asyncio.to_thread(call)
        except ProducerFencedError as e:  # a newer leader took over while this write was on its way
            raise errors.leader_not_known() from e
        except RecordTooLargeError as e:
            raise errors.schema_too_large() from e
        except LogTimeoutError as e:
            raise errors.store_timeout(f"{operation} operation timed out") from e
        except LogError as e:
            raise errors.store_error(f"{operation} operation failed while writing to the Kafka store: {e}") from e
        except Exception as e:  # a backend bug must still answer Confluent's envelope, with the cause
            log.exception("%s operation: writing to %s failed unexpectedly", operation, self.topic)
            raise errors.store_error(f"{operation} operation failed while writing to the Kafka store: {e!r}") from e
        if not await self.applied.wait(md.offset, self.timeout):
            raise errors.store_timeout(
                "KafkaStoreReaderThread failed to reach target offset within the timeout interval"
            )
        return md.offset

    def log_end(self) -> int | None:
        """The offset of the topic's last record (-1 when empty), for monitoring; None when the log cannot tell
        now. Blocking (it may ask the broker); never a substitute for ``barrier``."""
        try:
            return self.log.end_offsets(self.topic).get(0, 0) - 1
        except LogError as e:
            log.debug("end offset of %s unavailable: %s", self.topic, e)
            return None

    async def barrier(self) -> None:
        """Wait until every record written before now (by anyone) is applied here."""
        await self.write(NOOP_KEY, None, "Noop")


class Store(LogStore[State]):
    """The ``_schemas`` store: its log replayed into a ``State``."""

    def __init__(
        self, log_backend: Log, topic: str, *, timeout: float, appenders: AppenderProvider | None = None
    ) -> None:
        super().__init__(log_backend, topic, State(), timeout=timeout, appenders=appenders)
