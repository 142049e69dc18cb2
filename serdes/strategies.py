"""Subject-name strategies: which registry subject a record's schema lives under.

Each strategy is ``(ctx, record_name) -> subject`` with ``ctx`` confluent-kafka's ``SerializationContext``
(or None), the same signature as confluent-kafka's, so either library's strategies plug into the other.
"""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka.serialization import SerializationContext

from serdes.errors import SerializationError

SubjectNameStrategy = Callable[[SerializationContext | None, str | None], str]


def topic_subject_name_strategy(ctx: SerializationContext | None, record_name: str | None) -> str:
    """``<topic>-key`` / ``<topic>-value`` (the default)."""
    if ctx is None:
        raise SerializationError(
            "the topic subject-name strategy needs a SerializationContext (topic and "
            "key/value); pass ctx or use strategy='record'"
        )
    return f"{ctx.topic}-{ctx.field}"


def record_subject_name_strategy(ctx: SerializationContext | None, record_name: str | None) -> str:
    """The record's fully qualified name, whatever the topic."""
    if not record_name:
        raise SerializationError(
            "the record subject-name strategy needs a named record schema", topic=ctx.topic if ctx else None
        )
    return record_name


def topic_record_subject_name_strategy(ctx: SerializationContext | None, record_name: str | None) -> str:
    """``<topic>-<fully qualified record name>``."""
    if ctx is None:
        raise SerializationError("the topic_record subject-name strategy needs a SerializationContext")
    if not record_name:
        raise SerializationError("the topic_record subject-name strategy needs a named record schema", topic=ctx.topic)
    return f"{ctx.topic}-{record_name}"


_BY_NAME: dict[str, SubjectNameStrategy] = {
    "topic": topic_subject_name_strategy,
    "record": record_subject_name_strategy,
    "topic_record": topic_record_subject_name_strategy,
}


def resolve_strategy(strategy: str | SubjectNameStrategy) -> tuple[SubjectNameStrategy, bool]:
    """The strategy function and whether its subject depends on the topic (then it is resolved per topic)."""
    if callable(strategy):
        return strategy, strategy is not record_subject_name_strategy
    try:
        fn = _BY_NAME[strategy.lower()]
    except KeyError:
        raise ValueError(
            f"unknown subject-name strategy {strategy!r}; use one of {', '.join(_BY_NAME)} "
            f"or a callable (ctx, record_name) -> subject"
        ) from None
    return fn, fn is not record_subject_name_strategy
