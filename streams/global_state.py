"""The global thread: keeps this instance's global tables (``streams/global_table.py``) up to date with all
partitions of their topics, and checkpoints the offsets their RocksDB stores hold.

What Kafka Streams does (``GlobalStateManagerImpl``, ``GlobalStreamThread``), and so what happens here:

- Global stores live in ``<state_dir>/<application_id>/global/``; the file ``.checkpoint`` there maps each
  partition of a persistent store's topic to the offset up to which the store holds it.
- At start every partition is read from its checkpointed offset (from the beginning without one) up to its
  end, before the stream threads start. A store whose checkpoint is missing or unreadable, or whose
  checkpointed offsets are out of the partition's range (the topic was re-created or its records deleted),
  is wiped and read from the beginning, with a warning saying why. An in-memory store always is.
- The checkpoint is written after the stores are flushed to disk: at the end of the start-up read, at a clean
  close, and while running every commit interval once 10,000 records went by. After a crash the store may be
  ahead of its checkpoint; reading those records again writes the same latest values (a table is idempotent).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streams.changelog import checkpoint_key, read_checkpoint, write_checkpoint
from streams.config import DEFAULT_CACHE_MAX_ENTRIES
from streams.global_table import global_inputs
from streams.handlers import DeserializationHandler
from streams.log.base import OFFSET_BEGINNING, Consumer, Log, LogError, Producer, Record, TopicPartition
from streams.topology import Topology

__all__ = ["GLOBAL_DIR", "GlobalStateThread"]

log = logging.getLogger("streams.global_state")

GLOBAL_DIR = "global"
#: Records read since the last checkpoint before a periodic one is written (Kafka Streams'
#: ``OFFSET_DELTA_THRESHOLD_FOR_CHECKPOINT``); a start-up read and a clean close always write one.
CHECKPOINT_DELTA = 10_000


class GlobalStateThread(threading.Thread):
    """Keeps this instance's global stores up to date with all partitions of their topics.

    ``restore()`` reads every topic to its end (call it before the stream threads start); ``start()``
    then follows the topics until ``shutdown()``. A failure is reported to ``on_failed`` (the app goes
    to ERROR, as Kafka Streams does when its global thread dies). ``app_dir``: the application's state
    directory (RocksDB stores and the checkpoint go in its ``global/``); None keeps every store in memory.
    ``cache_entries``: deserialized values the readers of a RocksDB store keep."""

    def __init__(
        self,
        topology: Topology,
        log_backend: Log,
        client_id: str,
        on_failed: Callable[[str, BaseException], None],
        *,
        handler: DeserializationHandler,
        app_dir: Path | None = None,
        default_kind: str = "rocksdb",
        cache_entries: int = DEFAULT_CACHE_MAX_ENTRIES,
        checkpoint_interval_s: float = 5.0,
        poll_timeout_s: float = 0.1,
        progress_interval_s: float = 10.0,
    ) -> None:
        super().__init__(name=client_id, daemon=True)
        self._dir = None if app_dir is None else app_dir / GLOBAL_DIR
        self._log = log_backend
        self._dlq: Producer | None = None
        self._by_topic = global_inputs(topology, handler, self._send, self._dir, default_kind, cache_entries)
        #: What the stream threads, ``app.store`` and the HTTP API read: read-only views, safe from any thread.
        self.stores = {t.spec.store: t.view for t in self._by_topic.values()}
        self._consumer: Consumer | None = log_backend.consumer(None, client_id=client_id)
        self._on_failed = on_failed
        self._poll_timeout = poll_timeout_s
        self._progress_interval = progress_interval_s
        self._checkpoint_interval = checkpoint_interval_s
        self._stopping = threading.Event()
        self._failed = False
        #: Per partition of a persistent store's topic, the next offset to apply (what a checkpoint records).
        self._applied: dict[TopicPartition, int] = {}
        self._checkpointed: dict[TopicPartition, int] = {}
        self._last_checkpoint = time.monotonic()
        self.records = 0  # read from the global topics since start (skipped ones included)
        self.restored = 0  # of which while restoring, before the stream threads started

    # -- what the app reads ----------------------------------------------------------------------------

    @property
    def skipped(self) -> int:
        """Records the deserialization handler skipped."""
        return sum(t.skipped for t in self._by_topic.values())

    def metrics(self) -> dict[str, Any]:
        """``restored`` (records read before the stream threads started), ``records`` (read since start),
        ``skipped`` (by the deserialization handler), ``dropped`` (null keys) and each store's entries."""
        return {
            "restored": self.restored,
            "records": self.records,
            "skipped": self.skipped,
            "dropped": sum(t.dropped for t in self._by_topic.values()),
            "stores": {t.spec.store: t.store.estimate_num_entries() for t in self._by_topic.values()},
        }

    # -- reading ---------------------------------------------------------------------------------------

    def _send(self, topic: str, value: bytes | None, key: bytes | None = None, **kwargs: Any) -> None:
        """Where a dead-letter handler sends a global record that does not deserialize (a producer made then)."""
        if self._dlq is None:
            self._dlq = self._log.producer()
        self._dlq.send(topic, value, key, **kwargs)

    def _apply(self, records: list[Record]) -> None:
        if not records:
            return
        by_topic: dict[str, list[Record]]
        if len(self._by_topic) == 1:
            by_topic = {records[0].topic: records}
        else:
            by_topic = {}
            for rec in records:
                by_topic.setdefault(rec.topic, []).append(rec)
        for topic, recs in by_topic.items():
            table = self._by_topic[topic]
            table.apply(recs)
            if table.store.persistent:
                last = {rec.partition: rec.offset for rec in recs}  # offsets rise within a partition
                for partition, offset in last.items():
                    self._applied[TopicPartition(topic, partition)] = offset + 1
        self.records += len(records)

    def _start_offsets(self) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
        """Where to start reading each partition, and its end offset: a persistent store's checkpointed
        offset if it is in the partition's range, else the beginning (a store read from the beginning is
        wiped first)."""
        checkpoint = read_checkpoint(self._dir) if self._dir is not None else {}
        starts: dict[TopicPartition, int] = {}
        all_ends: dict[TopicPartition, int] = {}
        for topic, table in self._by_topic.items():
            ends = self._log.end_offsets(topic)
            saved: dict[int, int] = {}
            if table.store.persistent:
                keys = {p: checkpoint_key(topic, p) for p in ends}
                saved = {p: checkpoint[k] for p, k in keys.items() if k in checkpoint}
                why = self._unusable(topic, saved, ends)
                if why and table.store.estimate_num_entries() > 0:  # a new store just reads from the beginning
                    log.warning(
                        "global store %s: %s; wiping it and reading %s from the beginning", table.spec.store, why, topic
                    )
                if why:
                    table.store.wipe()
                    saved = {}
            for p in ends:
                tp = TopicPartition(topic, p)
                starts[tp] = saved.get(p, OFFSET_BEGINNING)
                all_ends[tp] = ends[p]
                if p in saved:
                    self._applied[tp] = saved[p]
        self._checkpointed = dict(self._applied)
        return starts, all_ends

    def _unusable(self, topic: str, saved: dict[int, int], ends: dict[int, int]) -> str:
        """Why the checkpointed offsets ``saved`` of ``topic`` cannot be trusted ("" if they can)."""
        if not saved:
            return f"no checkpointed offsets of {topic} in {self._dir}"
        try:
            lows = self._log.start_offsets(topic)
        except LogError:  # a backend that cannot tell: only the end offsets are checked
            lows = {}
        for p, offset in sorted(saved.items()):
            low, high = lows.get(p, 0), ends[p]
            if not low <= offset <= high:
                return (
                    f"the checkpointed offset {offset} of {topic}[{p}] is out of its range {low}..{high} "
                    "(the topic was re-created or records were deleted)"
                )
        return ""

    def restore(self) -> None:
        """Read all partitions of every global topic from their checkpointed offsets (the beginning without
        one) up to their end offsets, and on until a poll finds nothing more (some brokers report end
        offsets short); then checkpoint."""
        starts, ends = self._start_offsets()
        consumer = self._consumer
        assert consumer is not None
        consumer.assign(starts)
        started = last_report = time.monotonic()
        total = sum(end - max(starts[tp], 0) for tp, end in ends.items())
        while True:
            records = consumer.poll(self._poll_timeout, 5000)
            self._apply(records)
            self.restored += len(records)
            if not records and all(consumer.position(tp) >= end for tp, end in ends.items()):
                break
            now = time.monotonic()
            if now - last_report >= self._progress_interval:
                last_report = now
                log.info("global tables %s: restored %d of about %d records", sorted(self.stores), self.restored, total)
        for tp in starts:
            if self._by_topic[tp.topic].store.persistent:
                self._applied[tp] = max(self._applied.get(tp, 0), consumer.position(tp))
        self.checkpoint()
        log.info(
            "global tables %s: restored %d records from %d partitions in %.1f s",
            sorted(self.stores),
            self.restored,
            len(starts),
            time.monotonic() - started,
        )

    def checkpoint(self, force: bool = True) -> None:
        """Flush the persistent stores to disk, then record the offsets they hold; nothing when they did not
        move. Not ``force``d (while running), only once ``CHECKPOINT_DELTA`` records went by since the last
        one, as Kafka Streams does: each flush writes a RocksDB file."""
        self._last_checkpoint = time.monotonic()
        if self._dir is None or self._applied == self._checkpointed:
            return
        if not force:
            moved = sum(o - self._checkpointed.get(tp, 0) for tp, o in self._applied.items())
            if moved < CHECKPOINT_DELTA:
                return
        if self._dlq is not None:
            self._dlq.flush()  # a skipped record's dead letter is sent before the checkpoint passes it
        for table in self._by_topic.values():
            if table.store.persistent and not table.store.closed:
                table.store.flush_to_disk()
        write_checkpoint(self._dir, {checkpoint_key(tp.topic, tp.partition): o for tp, o in self._applied.items()})
        self._checkpointed = dict(self._applied)

    def run(self) -> None:
        try:
            consumer = self._consumer
            assert consumer is not None
            while not self._stopping.is_set():
                self._apply(consumer.poll(self._poll_timeout, 5000))
                if time.monotonic() - self._last_checkpoint >= self._checkpoint_interval:
                    self.checkpoint(force=False)
        except BaseException as exc:
            self._failed = True
            log.exception("global state thread %s failed", self.name)
            self._on_failed(self.name, exc)
        finally:
            self.close_clients()

    def shutdown(self, timeout: float | None = 10.0) -> None:
        self._stopping.set()
        if self.is_alive():
            self.join(timeout)
        else:
            self.close_clients()

    def close_clients(self) -> None:
        """Checkpoint (unless the thread failed) and close the consumer, the stores and any producer."""
        consumer, self._consumer = self._consumer, None
        if consumer is None:
            return
        try:
            if not self._failed:
                self.checkpoint()
        finally:
            consumer.close()
            dlq, self._dlq = self._dlq, None
            if dlq is not None:
                dlq.close()
            for table in self._by_topic.values():
                if not table.store.closed:
                    table.store.close()
