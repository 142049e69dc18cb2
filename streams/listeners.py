"""How the parts of a running application report back to their owner (``StreamsApp`` implements all three).

Kafka Streams is the model: a stream thread reports its failure (where Kafka's
``StreamThread.StateListener`` sees it die), a task manager reports that the set of tasks it runs
changed, and the changelog reader reports each store's restore (``StateRestoreListener``, with the same
method names). Callbacks run on the stream thread that reports, so an implementation guards what it
shares with other threads.
"""

from __future__ import annotations

from typing import Protocol

from streams.log.base import TopicPartition

__all__ = ["RestoreListener", "TaskListener", "ThreadListener"]


class ThreadListener(Protocol):
    def on_thread_failed(self, thread_name: str, error: BaseException) -> None:
        """The thread stopped on ``error``; it has closed its tasks without committing."""


class TaskListener(Protocol):
    def on_tasks_changed(self) -> None:
        """Tasks were assigned, revoked or closed; ``TaskManager.task_ids()`` gives the new set."""


class RestoreListener(Protocol):
    """Every store of a starting task is reported, also one with nothing to restore (start == end)."""

    def on_restore_start(
        self, task_id: str, store: str, changelog: TopicPartition, start_offset: int, end_offset: int
    ) -> None:
        """Restoring ``store`` of ``task_id`` from ``changelog`` offsets ``start_offset`` up to
        ``end_offset`` (exclusive: the restore barrier) begins."""

    def on_batch_restored(
        self, task_id: str, store: str, changelog: TopicPartition, batch_end_offset: int, num_restored: int
    ) -> None:
        """``num_restored`` changelog records up to offset ``batch_end_offset`` were written to the store."""

    def on_restore_end(self, task_id: str, store: str, changelog: TopicPartition, total_restored: int) -> None:
        """The store is up to date; ``total_restored`` records were applied (stale ones are not counted)."""
