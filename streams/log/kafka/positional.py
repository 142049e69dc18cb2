"""Every record the Kafka log produces goes through one call, ``produce_record``, which passes confluent-kafka's
``Producer.produce`` its arguments by position; the log contract tests (``tests/log/``) check the partition,
timestamp and headers of records sent this way.

Why by position: confluent-kafka parses keyword arguments on every call. With a local producer (nothing
listening at its broker, a queue that takes every record; confluent-kafka 2.16.1, CPython 3.11, the calling
thread's instructions under callgrind), ``produce(topic, value, key, partition=p, on_delivery=cb)`` costs 7,560
instructions and the same call by position 4,990: a third of a produce goes to the keywords. Through
``produce_record`` (one Python call more) it costs 5,740.

Why the check at import: arguments passed by position go wherever the installed client's parser puts them, so
a release that reordered them would, say, send keys as values without an error. ``check_produce_order`` asks
that parser, not the docstring: ``Producer.produce.__doc__`` says ``produce(topic, [value], [key], [partition],
[on_delivery], [timestamp], [headers])``, but the parser has ``callback`` (an alias of ``on_delivery``) fifth,
so the docstring's order would put the timestamp in ``on_delivery``. When it differs, importing the Kafka
backend raises one ``ImportError`` naming the supported confluent-kafka range.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import confluent_kafka

__all__ = [
    "ANY_PARTITION",
    "NOW",
    "PRODUCE_ORDER",
    "SUPPORTED_CONFLUENT_KAFKA",
    "check_produce_order",
    "produce_record",
]

# The confluent-kafka releases this module is known to work with: pyproject.toml pins the same range (a test
# keeps the two equal).
SUPPORTED_CONFLUENT_KAFKA = ">=2.6,<3"

# ``Producer.produce``'s parameters in the order its C parser takes them by position.
PRODUCE_ORDER = ("topic", "value", "key", "partition", "callback", "on_delivery", "timestamp", "headers")
ANY_PARTITION = -1  # the partitioner chooses (RD_KAFKA_PARTITION_UA)
NOW = 0  # no timestamp of ours: the producer's clock

# A value of the right type for each parameter, for the parser to accept while ``check_produce_order`` asks it.
_PROBE_VALUES: dict[str, object] = {"topic": "", "partition": ANY_PARTITION, "timestamp": NOW}
# A keyword no release of ``produce`` takes: a call that carries it is refused even where it would be accepted.
_UNKNOWN_KEYWORD = "_schemakit_probe"


def produce_record(
    producer: confluent_kafka.Producer,
    topic: str,
    value: bytes | None,
    key: bytes | None,
    partition: int,
    on_delivery: Callable[[Any, Any], None],
    timestamp: int,
    headers: list[tuple[str, str | bytes | None]] | None,
) -> None:
    """``producer.produce`` of one record to ``topic`` and ``partition`` (or ``ANY_PARTITION``) at ``timestamp``
    (or ``NOW``), waiting while the producer's local queue is full."""
    while True:
        try:
            producer.produce(topic, value, key, partition, on_delivery, None, timestamp, headers)  # PRODUCE_ORDER
            return
        except BufferError:
            producer.poll(0.05)  # the local queue is full: let deliveries drain it


def _refusal(produce: Callable[..., object], args: Sequence[object], kwargs: dict[str, object]) -> str:
    """What the parser of ``produce`` says to these arguments (its ``TypeError``)."""
    try:
        produce(*args, **kwargs)
    except TypeError as exc:
        return str(exc)
    except Exception as exc:  # parsed, then refused by the producer that was never initialised
        return f"accepted ({exc})"
    return "accepted"


def check_produce_order(
    producer_type: type[confluent_kafka.Producer] = confluent_kafka.Producer, order: Sequence[str] = PRODUCE_ORDER
) -> None:
    """Raise ``ImportError`` unless ``producer_type.produce`` takes the parameters ``order`` names, in that order,
    by position.

    Asks the parser of a producer that was never initialised (no librdkafka handle, no thread, no socket), with
    calls it refuses whatever its order: confluent-kafka 2.6's ``produce`` does not check for a missing handle,
    so a call it parsed would crash the process."""
    produce = producer_type.__new__(producer_type).produce
    values = [_PROBE_VALUES.get(name) for name in order]
    count = len(order)
    problems = []
    # A parameter given both by position and by name is refused with its position; the unknown keyword gets a
    # parameter that sits elsewhere refused too.
    for position, name in enumerate(order[:-2], 1):
        said = _refusal(produce, values[:position], {name: values[position - 1], _UNKNOWN_KEYWORD: None})
        if f"given by name ('{name}') and position ({position})" not in said:
            problems.append(f"{name!r} is not argument {position} ({said})")
    # The last but one: with it by name there is no room left for the unknown keyword (one argument more than the
    # parser takes is refused before anything else is looked at), so it is given a str, which the integer it is
    # (the timestamp) refuses wherever it sits.
    position, name = count - 1, order[-2]
    said = _refusal(produce, values[:position], {name: "not an integer"})
    if f"given by name ('{name}') and position ({position})" not in said:
        problems.append(f"{name!r} is not argument {position} ({said})")
    # The last: the parser takes as many arguments as ``order`` names, and knows this one by name.
    said = _refusal(produce, [*values, None], {})
    if f"at most {count} arguments" not in said:
        problems.append(f"it does not take {count} arguments ({said})")
    said = _refusal(produce, values[:1], {order[-1]: values[-1], _UNKNOWN_KEYWORD: None})
    if f"'{_UNKNOWN_KEYWORD}' is an invalid keyword" not in said:
        problems.append(f"{order[-1]!r} is not argument {count} ({said})")
    if problems:
        version = getattr(confluent_kafka, "__version__", "(unknown version)")
        raise ImportError(
            f"confluent-kafka {version} is not supported: its Producer.produce does not take "
            f"({', '.join(order)}) by position, as streams.log.kafka passes them: {'; '.join(problems)}. "
            f"schemakit supports confluent-kafka{SUPPORTED_CONFLUENT_KAFKA}: "
            f"pip install 'confluent-kafka{SUPPORTED_CONFLUENT_KAFKA}'"
        )


check_produce_order()
