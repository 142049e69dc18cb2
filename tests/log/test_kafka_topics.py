"""Topic administration on the Kafka backend: validation, errors, compaction flag, internal topics."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from streams.log import TopicExistsError, TopicInfo, UnknownTopicError
from streams.log.kafka import KafkaLog

pytestmark = pytest.mark.kafka


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "non-empty string"),
        ("..", "is not allowed"),
        ("has space", "contains ' '"),
        ("slash/colon:", "contains '/:'"),
        ("x" * 250, "is 250 characters; Kafka allows 249"),
    ],
)
def test_invalid_topic_names_are_rejected_before_the_broker(kafka_log: KafkaLog, name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        kafka_log.create_topic(name)
    assert name not in kafka_log.list_topics()


@pytest.mark.parametrize("partitions", [0, -1, True, 1.5])
def test_partition_count_must_be_a_positive_int(kafka_log: KafkaLog, unique: Callable[[str], str], partitions) -> None:
    name = unique("parts")
    with pytest.raises(ValueError, match=f"topic '{name}': partitions must be an integer >= 1"):
        kafka_log.create_topic(name, partitions)
    assert kafka_log.describe_topic(name) is None


def test_create_describe_delete(kafka_log: KafkaLog, unique: Callable[[str], str]) -> None:
    name = unique("admin")
    created = kafka_log.create_topic(name, 3, compacted=True, config={"retention.ms": 60000})
    assert created == TopicInfo(name, 3, True, {"cleanup.policy": "compact", "retention.ms": "60000"})
    described = kafka_log.describe_topic(name)
    assert described is not None
    assert (described.partitions, described.compacted) == (3, True)
    assert described.config["cleanup.policy"] == "compact"
    assert name in kafka_log.list_topics()

    with pytest.raises(TopicExistsError, match=name):
        kafka_log.create_topic(name, 3)
    kafka_log.delete_topic(name)
    assert kafka_log.describe_topic(name) is None
    assert name not in kafka_log.list_topics()
    with pytest.raises(UnknownTopicError, match=f"delete topic '{name}'"):
        kafka_log.delete_topic(name)


def test_plain_topic_is_not_compacted(kafka_log: KafkaLog, unique: Callable[[str], str]) -> None:
    name = unique("plain")
    kafka_log.create_topic(name, 2)
    assert kafka_log.describe_topic(name) == TopicInfo(name, 2, False, {})


def test_recreated_topic_takes_the_new_partition_count(kafka_log: KafkaLog, unique: Callable[[str], str]) -> None:
    name = unique("recreate")
    kafka_log.create_topic(name, 1)
    kafka_log.delete_topic(name)
    kafka_log.create_topic(name, 4)
    info = kafka_log.describe_topic(name)
    assert info is not None and info.partitions == 4


def test_internal_topics_are_hidden(kafka_log: KafkaLog, unique: Callable[[str], str]) -> None:
    internal = "__" + unique("internal")
    kafka_log.create_topic(internal)
    assert kafka_log.describe_topic(internal) is not None
    assert all(not t.startswith("__") for t in kafka_log.list_topics())


def test_ensure_topic_checks_an_existing_topic(kafka_log: KafkaLog, unique: Callable[[str], str]) -> None:
    from streams.log import TopicConfigError

    name = unique("ensure")
    assert kafka_log.ensure_topic(name, 1, compacted=True).compacted
    assert kafka_log.ensure_topic(name, 1, compacted=True).partitions == 1
    with pytest.raises(TopicConfigError, match="has 1 partitions, expected exactly 2"):
        kafka_log.ensure_topic(name, 2, compacted=True)
    plain = unique("ensure-plain")
    kafka_log.create_topic(plain, 1)
    with pytest.raises(TopicConfigError, match=r"must have cleanup\.policy=compact"):
        kafka_log.ensure_topic(plain, 1, compacted=True)


def test_end_offsets_of_a_missing_topic(kafka_log: KafkaLog, unique: Callable[[str], str]) -> None:
    with pytest.raises(UnknownTopicError, match="does not exist"):
        kafka_log.end_offsets(unique("missing"))
