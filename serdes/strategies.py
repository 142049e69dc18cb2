"""Subject-name strategies: which registry subject a record's schema lives under.

Each strategy is ``(ctx, record_name) -> subject`` with ``ctx`` confluent-kafka's ``SerializationContext``
(or None), the same signature as confluent-kafka's, so either library's strategies plug into the other.
``AssociatedNameStrategy`` asks the registry (Confluent 8's topic-subject associations); it also offers
``plan(ctx, record_name)``, a plan step (``plans.py``) the serdes run with their own client, sync or async.
"""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka.serialization import MessageField, SerializationContext

from serdes.caches import DEFAULT_CAPACITY, LruCache
from serdes.errors import RegistryError, SerializationError
from serdes.plans import ClientCall, Plan

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


#: ``fallback`` of ``AssociatedNameStrategy`` that makes a topic without an association an error
NO_FALLBACK = "none"
#: ``kafka_cluster_id`` that matches associations of any namespace (the default)
ANY_NAMESPACE = "-"


class AssociatedNameStrategy:
    """The subject the registry associates with the topic's key or value (Confluent 8's topic-subject
    associations, ``GET /associations/resources/{kafka_cluster_id}/{topic}``), as confluent-kafka's strategy of
    the same name resolves it: one association is the subject; more than one is an error; none (or a 404) falls
    back to ``fallback`` (``"topic"``, ``"record"``, ``"topic_record"``, or ``"none"``: an error).

    ``kafka_cluster_id`` is the association's resource namespace (or a callable giving it, asked on a cache
    miss); the default ``"-"`` matches any. Resolved subjects are kept (``cache_capacity`` of them, by topic,
    key or value and record name) until ``clear_cache()``: an association changed later is seen by new
    strategies only, as with confluent-kafka's. Pass one instance as ``strategy=`` to a serializer."""

    def __init__(
        self,
        *,
        kafka_cluster_id: str | Callable[[], str] | None = None,
        fallback: str = "topic",
        cache_capacity: int = DEFAULT_CAPACITY,
    ) -> None:
        fallback = fallback.lower()
        if fallback != NO_FALLBACK and fallback not in _BY_NAME:
            raise ValueError(
                f"unknown fallback {fallback!r} of the associated subject-name strategy; "
                f"use one of {', '.join([*_BY_NAME, NO_FALLBACK])}"
            )
        self.kafka_cluster_id = kafka_cluster_id
        self.fallback = fallback
        self._cache: LruCache[tuple[str, bool, str | None], str] = LruCache(cache_capacity)

    def _namespace(self) -> str:
        cluster_id = self.kafka_cluster_id
        if callable(cluster_id):
            try:
                cluster_id = cluster_id()
            except Exception as e:
                raise SerializationError(
                    f"associated subject-name strategy: cannot resolve the Kafka cluster id: {e}"
                ) from e
            if not cluster_id:
                raise SerializationError("associated subject-name strategy: the Kafka cluster id resolved to ''")
        return cluster_id or ANY_NAMESPACE

    @staticmethod
    def _key(ctx: SerializationContext | None, record_name: str | None) -> tuple[str, bool, str | None]:
        if ctx is None or ctx.topic is None:
            raise SerializationError(
                "the associated subject-name strategy needs a SerializationContext (topic and key/value)"
            )
        return ctx.topic, ctx.field == MessageField.KEY, record_name

    def plan(self, ctx: SerializationContext | None, record_name: str | None) -> Plan[str]:
        """The subject, asking the registry on a cache miss (a plan step: the serde's client runs it)."""
        key = self._key(ctx, record_name)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        topic, is_key, _ = key
        try:
            associations = yield ClientCall(
                "get_associations_by_resource_name",
                (topic, self._namespace(), "topic", ["key" if is_key else "value"]),
            )
        except RegistryError as e:
            if e.status != 404:
                raise
            associations = []
        if len(associations) > 1:
            raise SerializationError(f"Multiple associated subjects found for topic {topic}", topic=topic)
        if associations:
            subject = str(associations[0]["subject"])
        elif self.fallback == NO_FALLBACK:
            raise SerializationError(f"No associated subject found for topic {topic}", topic=topic)
        else:
            subject = _BY_NAME[self.fallback](ctx, record_name)
        return self._cache.put(key, subject)

    def __call__(self, ctx: SerializationContext | None, record_name: str | None) -> str:
        """The subject already resolved by ``plan`` (a strategy call without a client cannot ask the registry)."""
        hit = self._cache.get(self._key(ctx, record_name))
        if hit is None:
            raise SerializationError(
                "the associated subject-name strategy resolves a subject through the registry: "
                "use it as a serializer's strategy=",
                topic=ctx.topic if ctx else None,
            )
        return hit

    def clear_cache(self) -> None:
        """Forget the resolved subjects (the next record of each topic asks the registry again)."""
        self._cache.clear()


_BY_NAME: dict[str, SubjectNameStrategy] = {
    "topic": topic_subject_name_strategy,
    "record": record_subject_name_strategy,
    "topic_record": topic_record_subject_name_strategy,
}


def resolve_strategy(strategy: str | SubjectNameStrategy) -> tuple[SubjectNameStrategy, bool]:
    """The strategy function and whether its subject depends on the topic (then it is resolved per topic)."""
    if callable(strategy):
        return strategy, strategy is not record_subject_name_strategy
    if strategy.lower() == "associated":
        return AssociatedNameStrategy(), True
    try:
        fn = _BY_NAME[strategy.lower()]
    except KeyError:
        raise ValueError(
            f"unknown subject-name strategy {strategy!r}; use one of {', '.join(_BY_NAME)}, associated "
            f"or a callable (ctx, record_name) -> subject"
        ) from None
    return fn, fn is not record_subject_name_strategy
