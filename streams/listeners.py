"""How the parts of a running application report back to their owner (``StreamsApp`` implements them),
and what a user may listen to (``StateListener``).

Kafka Streams is the model: a stream thread reports its failure (where Kafka's
``StreamThread.StateListener`` sees it die), a task manager reports that the set of tasks it runs
changed, each task's state and the tasks it lost, and the changelog reader reports each store's restore
(``StateRestoreListener``, with the same method names); the membership thread reports assignments
(``MembershipListener``). Callbacks run on the thread that reports, so an implementation guards what it
shares with other threads.
"""

from __future__ import annotations

from typing import Protocol

from streams.log.base import TopicPartition

__all__ = ["RestoreListener", "StateListener", "TaskListener", "TaskState", "ThreadListener"]


class TaskState:
    """What a task is doing on this instance (``app.metrics()["task_states"]``, ``on_task_state_change``)."""

    RESTORING = "RESTORING"  # active, bringing its stores up to date before processing
    RUNNING = "RUNNING"  # active, processing
    STANDBY = "STANDBY"  # a standby replica tailing the changelog
    WARMUP = "WARMUP"  # a warm-up replica: a standby placed to take the active over once caught up
    CLOSED = "CLOSED"  # no longer on this instance


class StateListener(Protocol):
    """What a user hears (``StreamsApp(state_listener=...)``): the application's state changes, Kafka
    Streams' ``KafkaStreams.StateListener``, and every task's (``TaskState``)."""

    def on_state_change(self, old: str, new: str) -> None:
        """The application went from ``old`` to ``new`` (``AppState``)."""

    def on_task_state_change(self, task_id: str, old: str, new: str) -> None:
        """Task ``task_id`` went from ``old`` to ``new`` on this instance (``TaskState``)."""


class ThreadListener(Protocol):
    def on_thread_failed(self, thread_name: str, error: BaseException) -> None:
        """The thread stopped on ``error``; it has closed its tasks without committing."""


class TaskListener(Protocol):
    def on_tasks_changed(self) -> None:
        """Tasks were assigned, revoked or closed; ``TaskManager.task_ids()`` gives the new set."""

    def on_task_state_change(self, task_id: str, old: str, new: str) -> None:
        """Task ``task_id`` went from ``old`` to ``new`` (``TaskState``)."""

    def on_revoked(self, thread_name: str, generation: int) -> None:
        """The thread applied the revocations of assignment ``generation``: it runs nothing the assignment
        does not give it (tasks it gained may still be restoring)."""

    def on_task_lost(self, thread_name: str, task_id: str, error: BaseException) -> None:
        """The thread closed ``task_id`` without committing: fenced by a newer owner, or its commit failed."""


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
