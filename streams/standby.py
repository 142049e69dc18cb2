"""Standby and warm-up tasks: restore-only copies of a task's stores on another instance, kept current
by tailing the task's changelog partitions, so that taking the task over restores only the tail.

A ``StandbyTask`` wraps a ``StreamTask`` that is built but never initialized (its stores are open, its
processors never run). Promotion hands that very task to the task manager, which restores from where the
standby got to and starts it: in-memory stores keep what they hold, RocksDB stores keep their files.

Only committed state is applied. A changelog record carries the input offsets its change reflects
(``schemakit.src``); the active commits those offsets right after flushing the changes, in the same
transaction. A standby therefore holds records back (``pending``) until the group's committed offsets
cover them, checking every ``confirm_interval`` seconds, and applies them in changelog order. A restore
barrier, written by a new owner after it fenced the old one, carries the offsets committed at takeover:
records before it that reflect later input were never committed (the old owner died first) and are
dropped. The checkpoint (``<task>/.checkpoint``) records, per persistent store, the offset before which
everything is applied, so a restart, and a promotion, read the changelog from there.

One ``StandbyUpdater`` per stream thread tails the changelogs of that thread's standbys with one consumer,
a batch per loop iteration, between the active tasks' batches.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from streams.changelog import (
    BARRIER_KEY,
    checkpoint_key,
    committed_from_positions,
    positions_of,
    uncommitted,
    write_checkpoint,
)
from streams.log.base import Consumer, Record, TopicPartition
from streams.task import StreamTask

if TYPE_CHECKING:
    from streams.state.base import StateStore

__all__ = ["StandbyTask", "StandbyUpdater"]

log = logging.getLogger("streams.standby")

CommittedOffsets = Callable[[list[TopicPartition]], dict[TopicPartition, "int | None"]]


@dataclass
class _Tail:
    """One changelog partition of a standby task."""

    store: StateStore
    tp: TopicPartition
    applied: int  # every change before this offset is applied (or known dead)
    next_read: int
    pending: list[Record] = field(default_factory=list)


class StandbyTask:
    """The stores of task ``task.id`` kept by tailing their changelogs; ``role`` is ``STANDBY`` or
    ``WARMUP`` (a replica placed to take the active over once caught up)."""

    def __init__(self, task: StreamTask, role: str, checkpoint: dict[str, int]) -> None:
        self.task = task
        self.id = task.id
        self.role = role
        self.inputs = [tp for tp in task.input_partitions]
        self.applied_records = 0
        self.tails: dict[TopicPartition, _Tail] = {}
        for store in task.stores.values():
            if store.changelog is None:
                continue
            tp = TopicPartition(store.changelog.topic, store.changelog.partition)
            start = checkpoint.get(checkpoint_key(tp.topic, tp.partition)) if store.persistent else None
            if start is None:
                if store.persistent:
                    store.wipe()  # local data of unknown age: rebuild it from the changelog
                start = 0
            self.tails[tp] = _Tail(store, tp, start, start)
        self._checkpointed = self.starts()

    def starts(self) -> dict[TopicPartition, int]:
        """Per changelog partition, the offset a restore continues from."""
        return {tp: tail.applied for tp, tail in self.tails.items()}

    def position(self) -> int:
        """Sum of the applied offsets: compared with the active's written offsets, the standby's lag."""
        return sum(tail.applied for tail in self.tails.values())

    def pending(self) -> int:
        return sum(len(tail.pending) for tail in self.tails.values())

    def checkpoint(self) -> None:
        """Record how far the persistent stores are applied, when that moved."""
        starts = self.starts()
        if self.task.task_dir is None or starts == self._checkpointed:
            return
        offsets = {
            checkpoint_key(tp.topic, tp.partition): tail.applied
            for tp, tail in self.tails.items()
            if tail.store.persistent
        }
        if offsets:
            write_checkpoint(self.task.task_dir, offsets)
        self._checkpointed = starts

    def close(self) -> None:
        self.checkpoint()
        self.task.close(clean=True)


class StandbyUpdater:
    """Tails the changelogs of one thread's standby tasks. ``committed(partitions)`` gives the group's
    committed input offsets (the thread's consumer asks the log)."""

    def __init__(
        self,
        consumer_factory: Callable[[], Consumer],
        committed: CommittedOffsets,
        batch_size: int = 10_000,
        confirm_interval: float = 0.2,
    ) -> None:
        self._consumer_factory = consumer_factory
        self._consumer: Consumer | None = None
        self._committed = committed
        self._batch_size = batch_size
        self._confirm_interval = confirm_interval
        self._confirm_at = 0.0
        self.tasks: dict[str, StandbyTask] = {}
        self.applied_records = 0  # changelog records applied to replicas, all tasks
        self._by_tp: dict[tuple[str, int], tuple[StandbyTask, _Tail]] = {}

    # -- membership --------------------------------------------------------------------------------------

    def add(self, standby: StandbyTask) -> None:
        self.tasks[standby.id] = standby
        self._reassign()

    def remove(self, task_id: str) -> StandbyTask | None:
        """Stop tailing ``task_id``; its task is returned (still open) for promotion or closing."""
        standby = self.tasks.pop(task_id, None)
        if standby is not None:
            self._reassign()
        return standby

    def _reassign(self) -> None:
        by_tp = {}
        positions: dict[TopicPartition, int] = {}
        for standby in self.tasks.values():
            for tp, tail in standby.tails.items():
                by_tp[(tp.topic, tp.partition)] = (standby, tail)
                positions[tp] = tail.next_read
        self._by_tp = by_tp
        if self._consumer is None:
            if not positions:
                return
            self._consumer = self._consumer_factory()
        self._consumer.assign(positions)

    # -- tailing -----------------------------------------------------------------------------------------

    def poll(self) -> int:
        """Read one batch (without waiting) and apply what is known to be committed; returns records read."""
        consumer = self._consumer
        if consumer is None or not self._by_tp:
            return 0
        records = consumer.poll(0.0, self._batch_size)
        by_tp = self._by_tp
        for rec in records:
            entry = by_tp.get((rec.topic, rec.partition))
            if entry is None:
                continue
            standby, tail = entry
            tail.next_read = rec.offset + 1
            if rec.key == BARRIER_KEY:
                self._barrier(standby, tail, rec)
            else:
                tail.pending.append(rec)
        now = time.monotonic()
        if now >= self._confirm_at:
            self._confirm_at = now + self._confirm_interval
            self._confirm()
        return len(records)

    def _barrier(self, standby: StandbyTask, tail: _Tail, barrier: Record) -> None:
        """A new owner took over: what it found committed is applied, the rest was never committed."""
        source = positions_of(barrier.headers)
        committed = committed_from_positions(source) if source is not None else {}
        keep = [r for r in tail.pending if not _is_uncommitted(r, committed)]
        dropped = len(tail.pending) - len(keep)
        if dropped:
            log.info(
                "standby %s: dropping %d uncommitted change(s) of %s[%d] before a new owner's barrier",
                standby.id,
                dropped,
                tail.tp.topic,
                tail.tp.partition,
            )
        self._apply(standby, tail, keep)
        tail.pending = []
        tail.applied = barrier.offset + 1

    def _confirm(self) -> None:
        waiting = [(standby, tail) for standby, tail in self._by_tp.values() if tail.pending]
        if waiting:
            inputs = sorted(
                {tp for standby, _ in waiting for tp in standby.inputs}, key=lambda tp: (tp.topic, tp.partition)
            )
            offsets = self._committed(inputs)
            committed = {(tp.topic, tp.partition): offset for tp, offset in offsets.items()}
            for standby, tail in waiting:
                n = 0
                for rec in tail.pending:
                    if _is_uncommitted(rec, committed):
                        break
                    n += 1
                if n:
                    self._apply(standby, tail, tail.pending[:n])
                    tail.pending = tail.pending[n:]
        for _, tail in self._by_tp.values():
            tail.applied = tail.pending[0].offset if tail.pending else tail.next_read

    def _apply(self, standby: StandbyTask, tail: _Tail, records: list[Record]) -> None:
        entries = [(r.key, r.value) for r in records if r.key is not None]
        if entries:
            tail.store.restore_batch(entries)
            standby.applied_records += len(entries)
            self.applied_records += len(entries)

    def close(self) -> None:
        if self._consumer is not None:
            with contextlib.suppress(Exception):
                self._consumer.close()
            self._consumer = None


def _is_uncommitted(rec: Record, committed: dict[tuple[str, int], int | None]) -> bool:
    source = positions_of(rec.headers)
    return source is not None and uncommitted(source, committed)
