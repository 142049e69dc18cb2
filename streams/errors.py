"""Typed errors of the streams runtime; each carries what went wrong and where."""

from __future__ import annotations


class StreamsError(Exception):
    """Base of every error the streams runtime raises."""


class TopologyError(StreamsError):
    """The topology is malformed: unknown parent, duplicate name, store not connected, ..."""


class CoPartitioningError(TopologyError):
    """Topics read by one sub-topology have different partition counts."""


class MissingTopicError(StreamsError):
    """A source or sink topic the application needs does not exist."""


class SerdeError(StreamsError):
    """A serde could not (de)serialize a key or value."""


class DeserializationError(SerdeError):
    """An input record could not be deserialized; names the topic, partition and offset."""

    def __init__(self, topic: str, partition: int, offset: int, is_key: bool, cause: BaseException) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.is_key = is_key
        self.cause = cause
        what = "key" if is_key else "value"
        super().__init__(
            f"cannot deserialize the {what} of the record at {topic}[{partition}] offset {offset}: "
            f"{type(cause).__name__}: {cause}"
        )


class ProcessingError(StreamsError):
    """User code raised while a task processed a record or punctuated. When a record was being processed,
    ``topic``, ``partition`` and ``offset`` say which (else None)."""

    def __init__(
        self, message: str, *, topic: str | None = None, partition: int | None = None, offset: int | None = None
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        super().__init__(message)


class ProductionError(StreamsError):
    """The log refused an output record (too large, or otherwise not writable as it is) and the production
    exception handler said to stop; names the sink topic and the input record it came from."""

    def __init__(
        self,
        task_id: str,
        sink_topic: str,
        topic: str | None,
        partition: int,
        offset: int,
        cause: BaseException,
        sink_partition: int = -1,
        source: str | None = None,
    ) -> None:
        self.task_id = task_id
        self.sink_topic = sink_topic
        self.sink_partition = sink_partition  # -1: not known (the log had not chosen one)
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.cause = cause
        if source is None:  # else the caller's description (a late failure: the inputs of the transaction)
            source = f"the record at {topic}[{partition}] offset {offset}" if topic is not None else "a punctuation"
        where = f" partition {sink_partition}" if sink_partition >= 0 else ""
        super().__init__(
            f"task {task_id}: cannot send to topic {sink_topic!r}{where} the output of {source}: "
            f"{type(cause).__name__}: {cause}"
        )


class StateStoreError(StreamsError):
    """A state store could not be opened, restored or written."""


class InvalidStateStoreError(StateStoreError):
    """The store is not available here (unknown name, or the task is not running on this instance)."""


class IllegalStateError(StreamsError):
    """A call was made in the wrong application state (e.g. start() twice)."""


class TaskMigratedError(StreamsError):
    """A task's writes were fenced: another instance took the task over (this one was presumed dead, e.g.
    paused past the session timeout). The task is closed without committing; the group's next assignment
    says where it runs. Kafka Streams' ``TaskMigratedException``."""

    def __init__(self, task_id: str, detail: str) -> None:
        self.task_id = task_id
        super().__init__(f"task {task_id} was fenced by a newer owner and is closed here: {detail}")


class TaskCorruptedError(StreamsError):
    """A task's commit failed for another reason than fencing; its uncommitted work is dropped and the
    task starts again from its committed offsets."""

    def __init__(self, task_id: str, detail: str) -> None:
        self.task_id = task_id
        super().__init__(f"task {task_id}: commit failed, restarting it from its committed offsets: {detail}")
