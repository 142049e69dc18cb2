"""Changelogs: writing store changes, the local checkpoint, and restoring a store before processing.

- Every changelog record carries a ``schemakit.src`` header: the task's input positions when the change
  was flushed. A restore skips records whose positions are past the group's committed offsets: that
  state came from input that will be processed again, so applying it would count that input twice.
- "Restored to the end" is decided with a barrier, not with end offsets (which some brokers report
  wrongly): before restoring, the task's new owner writes a tombstone with a reserved key to each
  changelog partition (through its fenced ``TaskProducer``, so the previous owner can no longer write)
  and reads up to that record's offset. Everything before the barrier is everything there is. The
  barrier carries the input offsets committed when it was written: a standby reading it knows that
  changes before it with later positions were never committed (``streams/standby.py``).
- The checkpoint file (``<state_dir>/<application_id>/<task_id>/.checkpoint``) holds, per persistent
  store, the changelog offset up to which its local RocksDB data is complete. Under exactly-once it is
  removed when an active task starts and written again only at a clean close, so after a crash no
  checkpoint is trusted: the stores are wiped and restored from the committed changelog.

The reader reports each store's restore (start, batches, end) to a ``RestoreListener``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from streams.errors import StateStoreError
from streams.listeners import RestoreListener
from streams.log.base import Consumer, HeaderPairs, Producer, Record, RecordMetadata, TopicPartition
from streams.record_serdes import json_bytes
from streams.state.base import StateStore

__all__ = [
    "BARRIER_KEY",
    "SOURCE_HEADER",
    "ChangelogReader",
    "ChangelogWriter",
    "RestoreJob",
    "barrier_headers",
    "committed_from_positions",
    "positions_of",
    "read_checkpoint",
    "remove_checkpoint",
    "source_header",
    "uncommitted",
    "write_checkpoint",
]

log = logging.getLogger("streams.changelog")

SOURCE_HEADER = "schemakit.src"
BARRIER_HEADER = "schemakit.barrier"
BARRIER_KEY = b"\x00schemakit.restore-barrier\x00"
CHECKPOINT_FILE = ".checkpoint"
_PROGRESS_EVERY = 2.0
_STALL_TIMEOUT = 120.0


def source_header(positions: list[tuple[str, int, int]]) -> tuple[tuple[str, bytes], ...]:
    """The header naming the input positions a flush reflects: ``[[topic, partition, next_offset], ...]``."""
    return ((SOURCE_HEADER, json_bytes(positions)),)


Committed = dict[tuple[str, int], int | None]


def barrier_headers(committed: Committed) -> tuple[tuple[str, bytes], ...]:
    """A restore barrier's headers: the marker, and the input offsets committed when it was written
    (-1 where nothing was committed)."""
    positions = [[t, p, -1 if o is None else o] for (t, p), o in sorted(committed.items())]
    return ((BARRIER_HEADER, b"1"), (SOURCE_HEADER, json_bytes(positions)))


def positions_of(headers: HeaderPairs) -> bytes | None:
    """The raw ``schemakit.src`` header of a changelog record, if it has one."""
    for name, value in headers:
        if name == SOURCE_HEADER:
            return value
    return None


def committed_from_positions(value: bytes) -> Committed:
    """A barrier's committed offsets, as ``uncommitted`` takes them."""
    try:
        positions = orjson.loads(value)
    except orjson.JSONDecodeError:
        return {}
    return {(t, p): (None if o < 0 else o) for t, p, o in positions}


def uncommitted(value: bytes, committed: Committed) -> bool:
    """Whether a changelog record whose ``schemakit.src`` header is ``value`` reflects input past the
    ``committed`` offsets (input partitions not in ``committed`` are not checked)."""
    try:
        positions = orjson.loads(value)
    except orjson.JSONDecodeError:
        return False
    for topic, partition, offset in positions:
        key = (topic, partition)
        if key in committed:
            c = committed[key]
            if c is None or offset > c:
                return True
    return False


class ChangelogWriter:
    """Sends a store's changes to its changelog partition and learns the offset of the last one.
    ``send_batch``: a producer's ``send_batch`` (faster for large flushes), else ``send`` per record."""

    def __init__(
        self, send: Callable[..., None], topic: str, partition: int, send_batch: Callable[..., None] | None = None
    ) -> None:
        self._send = send
        self._send_batch = send_batch
        self.topic = topic
        self.partition = partition
        self.written_offset: int | None = None  # the changelog offset after our last durable record

    def _delivered(self, md: RecordMetadata | None, err: Exception | None) -> None:
        if md is not None:
            self.written_offset = md.offset + 1

    def send_batch(self, entries: list[tuple[bytes, bytes | None]], headers: Any) -> None:
        if not entries:
            return
        if self._send_batch is not None:
            self._send_batch(self.topic, self.partition, entries, headers=headers, on_last_delivery=self._delivered)
            return
        send, topic, partition = self._send, self.topic, self.partition
        for kb, vb in entries[:-1]:
            send(topic, vb, kb, partition=partition, headers=headers)
        kb, vb = entries[-1]
        send(topic, vb, kb, partition=partition, headers=headers, on_delivery=self._delivered)


def read_checkpoint(task_dir: Path) -> dict[str, int]:
    """``{"<changelog topic>:<partition>": offset}``; empty when missing or unreadable (then restore fully)."""
    path = task_dir / CHECKPOINT_FILE
    try:
        data = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, orjson.JSONDecodeError) as exc:
        log.warning("ignoring unreadable checkpoint %s (%s): the stores restore from the beginning", path, exc)
        return {}
    offsets = data.get("offsets") if isinstance(data, dict) else None
    if not isinstance(offsets, dict):
        return {}
    return {k: v for k, v in offsets.items() if isinstance(v, int) and v >= 0}


def write_checkpoint(task_dir: Path, offsets: dict[str, int]) -> None:
    """Replace the checkpoint atomically (write a temp file, then rename)."""
    task_dir.mkdir(parents=True, exist_ok=True)
    tmp = task_dir / (CHECKPOINT_FILE + ".tmp")
    tmp.write_bytes(orjson.dumps({"version": 1, "offsets": offsets}))
    os.replace(tmp, task_dir / CHECKPOINT_FILE)


def remove_checkpoint(task_dir: Path) -> None:
    """Forget how far local state reaches: the next start wipes the persistent stores and restores them."""
    with contextlib.suppress(FileNotFoundError):
        (task_dir / CHECKPOINT_FILE).unlink()


def checkpoint_key(topic: str, partition: int) -> str:
    return f"{topic}:{partition}"


@dataclass
class RestoreJob:
    """One store of one task to bring up to date from its changelog partition."""

    task_id: str
    store: StateStore
    tp: TopicPartition
    start: int
    committed: dict[tuple[str, int], int | None]
    end: int = -1  # the barrier's offset
    restored: int = 0
    skipped: int = 0
    _stale_cache: dict[bytes, bool] = field(default_factory=dict)

    def is_stale(self, value: bytes) -> bool:
        stale = self._stale_cache.get(value)
        if stale is None:
            stale = self._stale_cache[value] = uncommitted(value, self.committed)
        return stale


class ChangelogReader:
    """Restores stores from their changelogs with one consumer (no group), in batches, and reports each
    store's restore to ``listener``. The consumer is created on the first restore that reads anything."""

    def __init__(
        self,
        producer: Producer | None,
        consumer_factory: Callable[[], Consumer],
        listener: RestoreListener,
        batch_size: int = 10_000,
    ) -> None:
        self._producer = producer
        self._consumer_factory = consumer_factory
        self._consumer: Consumer | None = None
        self._listener = listener
        self._batch_size = batch_size
        self.restore_seconds = 0.0  # time spent in restore(), barriers included

    def prepare(self) -> None:
        """Create the restore consumer now, so that the first restore does not wait for it to connect."""
        if self._consumer is None:
            self._consumer = self._consumer_factory()

    def _place_barriers(self, jobs: list[RestoreJob]) -> None:
        """Barriers for jobs whose owner did not write one itself (``end`` not set)."""
        jobs = [job for job in jobs if job.end < 0]
        if not jobs:
            return
        if self._producer is None:
            raise StateStoreError(f"no restore barrier for {[(j.task_id, j.store.name) for j in jobs]}")
        for job in jobs:

            def delivered(md: RecordMetadata | None, err: Exception | None, job: RestoreJob = job) -> None:
                if md is not None:
                    job.end = md.offset

            self._producer.send(
                job.tp.topic,
                None,
                BARRIER_KEY,
                partition=job.tp.partition,
                headers=[(BARRIER_HEADER, b"1")],
                on_delivery=delivered,
            )
        self._producer.flush()
        for job in jobs:
            if job.end < 0:
                raise StateStoreError(
                    f"no delivery report for the restore barrier of {job.tp.topic}[{job.tp.partition}]"
                )

    def restore(self, jobs: list[RestoreJob]) -> None:
        """Bring every job's store up to its barrier (``job.end``, written here if not set). Records before a
        job's start are not read."""
        if not jobs:
            return
        started = time.monotonic()
        self._place_barriers(jobs)
        active: dict[TopicPartition, RestoreJob] = {}
        for job in jobs:
            if job.start > job.end:
                # The changelog is shorter than the checkpoint says: it was re-created. Start over.
                log.warning(
                    "task %s store %s: checkpoint offset %d is past the end of %s[%d] (%d); "
                    "wiping the local store and restoring from the beginning",
                    job.task_id,
                    job.store.name,
                    job.start,
                    job.tp.topic,
                    job.tp.partition,
                    job.end,
                )
                job.store.wipe()
                job.start = 0
            if job.start < job.end:
                active[job.tp] = job
            self._listener.on_restore_start(job.task_id, job.store.name, job.tp, job.start, job.end)
        if active:
            total = sum(j.end - j.start for j in active.values())
            log.info("restoring %d store partition(s), up to %d changelog records", len(active), total)
            self.prepare()
            consumer = self._consumer
            assert consumer is not None
            consumer.assign({tp: job.start for tp, job in active.items()})
            self._read(consumer, active, total)
            consumer.assign({})
        for job in jobs:
            if job.store.changelog is not None:
                job.store.changelog.written_offset = job.end + 1
            self._listener.on_restore_end(job.task_id, job.store.name, job.tp, job.restored)
            log.info(
                "task %s store %s restored %d records from %s[%d] offsets %d..%d (%d skipped as uncommitted) in %.2fs",
                job.task_id,
                job.store.name,
                job.restored,
                job.tp.topic,
                job.tp.partition,
                job.start,
                job.end,
                job.skipped,
                time.monotonic() - started,
            )
        self.restore_seconds += time.monotonic() - started

    def _read(self, consumer: Consumer, active: dict[TopicPartition, RestoreJob], total: int) -> None:
        pending = dict(active)
        by_topic: dict[str, dict[int, RestoreJob]] = {}
        for tp, job in active.items():
            by_topic.setdefault(tp.topic, {})[tp.partition] = job
        done_records = 0
        last_progress = last_log = time.monotonic()
        while pending:
            records = consumer.poll(0.5, self._batch_size)
            now = time.monotonic()
            if not records:
                if now - last_progress > _STALL_TIMEOUT:
                    waiting = ", ".join(
                        f"{tp.topic}[{tp.partition}] at {consumer.position(tp)} of {j.end}" for tp, j in pending.items()
                    )
                    raise StateStoreError(f"changelog restore made no progress for {_STALL_TIMEOUT:.0f}s: {waiting}")
                continue
            last_progress = now
            self._apply(records, by_topic)
            done_records += len(records)
            for tp in list(pending):
                if consumer.position(tp) > pending[tp].end:
                    del pending[tp]
            if now - last_log >= _PROGRESS_EVERY:
                last_log = now
                log.info("restore progress: %d of up to %d changelog records read", done_records, total)

    def _apply(self, records: list[Record], by_topic: dict[str, dict[int, RestoreJob]]) -> None:
        """Apply a polled batch, one ``restore_batch`` per store; records of a partition arrive together,
        so the job look-up is done once per run of records."""
        entries: list[tuple[bytes, bytes | None]] = []
        job: RestoreJob | None = None
        current: tuple[str, int] | None = None
        last_offset = -1
        for rec in records:
            if current is None or rec.partition != current[1] or rec.topic != current[0]:
                self._restore_batch(job, entries, last_offset)
                entries = []
                current = (rec.topic, rec.partition)
                job = by_topic.get(rec.topic, {}).get(rec.partition)
            key = rec.key
            if job is None or rec.offset >= job.end or key is None or key == BARRIER_KEY:
                continue
            source = positions_of(rec.headers)
            if source is not None and job.is_stale(source):
                job.skipped += 1
                continue
            job.restored += 1
            entries.append((key, rec.value))
            last_offset = rec.offset
        self._restore_batch(job, entries, last_offset)

    def _restore_batch(
        self, job: RestoreJob | None, entries: list[tuple[bytes, bytes | None]], last_offset: int
    ) -> None:
        if job is None or not entries:
            return
        job.store.restore_batch(entries)
        self._listener.on_batch_restored(job.task_id, job.store.name, job.tp, last_offset, len(entries))

    def close(self) -> None:
        if self._consumer is not None:
            with contextlib.suppress(Exception):
                self._consumer.close()
            self._consumer = None
