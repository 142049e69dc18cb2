"""Group membership on the Kafka backend: partitions split between members, callbacks, committed starts."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from streams.log import TopicPartition, UnknownTopicError
from streams.log.kafka import KafkaConsumer, KafkaLog
from tests.log.helpers import one_partition_holding, read_records
from tests.support.waiting import wait_for

pytestmark = pytest.mark.kafka


def poll_members_until(consumers: list[KafkaConsumer], done: Callable[[], bool], timeout: float = 30.0) -> None:
    def settled() -> bool:
        if done():
            return True
        for consumer in consumers:
            consumer.poll(0.1)
        return False

    wait_for(settled, timeout, interval=0, what="the group to settle")


def test_two_members_split_four_partitions(kafka_log: KafkaLog, unique: Callable[[str], str]) -> None:
    topic, group = unique("split"), unique("split-group")
    kafka_log.create_topic(topic, 4)
    everything = {TopicPartition(topic, p) for p in range(4)}
    events: dict[str, list[tuple[str, set[TopicPartition]]]] = {"a": [], "b": []}

    def callbacks(name: str) -> dict[str, Callable[[list[TopicPartition]], None]]:
        return {
            "on_assign": lambda tps: events[name].append(("assign", set(tps))),
            "on_revoke": lambda tps: events[name].append(("revoke", set(tps))),
        }

    a = kafka_log.consumer(group)
    b = kafka_log.consumer(group)
    try:
        a.subscribe([topic], **callbacks("a"))
        poll_members_until([a], lambda: set(a.assignment()) == everything)
        assert events["a"] == [("assign", everything)]

        b.subscribe([topic], **callbacks("b"))
        poll_members_until([a, b], lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2)
        assert set(a.assignment()) | set(b.assignment()) == everything
        # Eager rebalance: a gives everything back, then both get their half.
        assert events["a"][1:] == [("revoke", everything), ("assign", set(a.assignment()))]
        assert events["b"] == [("assign", set(b.assignment()))]

        b.close()  # leaves the group, revoking its half first
        assert events["b"][-1] == ("revoke", set(events["b"][0][1]))
        poll_members_until([a], lambda: set(a.assignment()) == everything)
    finally:
        a.close()
        b.close()
    assert events["a"][-1] == ("revoke", everything)


def test_assigned_partitions_start_at_the_committed_offset(kafka_log: KafkaLog, unique: Callable[[str], str]) -> None:
    topic, group = unique("resume"), unique("resume-group")
    tp = one_partition_holding(kafka_log, topic, [b"0", b"1", b"2", b"3"])
    with kafka_log.consumer(group) as first:
        first.assign({tp: 0})
        first.commit({tp: 2})
    with kafka_log.consumer(group) as member:
        member.subscribe([topic])
        records = read_records(member, 2, timeout=30)
        assert [r.value for r in records] == [b"2", b"3"]
        assert member.position(tp) == 4
        member.commit()
    assert kafka_log.committed(group, [tp]) == {tp: 4}


def test_position_right_after_a_group_assignment_is_the_committed_offset(
    kafka_log: KafkaLog, unique: Callable[[str], str]
) -> None:
    topic, group = unique("pos-group"), unique("pos-group")
    kafka_log.create_topic(topic, 2)
    with kafka_log.consumer(group) as setter:
        setter.commit({TopicPartition(topic, 0): 3})
    seen: list[int] = []
    with kafka_log.consumer(group) as member:
        member.subscribe(
            [topic],
            on_assign=lambda tps: seen.extend(member.position(tp) for tp in sorted(tps, key=lambda tp: tp.partition)),
        )
        poll_members_until([member], lambda: bool(seen))
    assert seen == [3, 0]


def test_subscribing_to_a_missing_topic_reports_it(kafka_log: KafkaLog, unique: Callable[[str], str]) -> None:
    missing = unique("missing")
    with kafka_log.consumer(unique("g")) as consumer:
        consumer.subscribe([missing])
        with pytest.raises(UnknownTopicError, match=missing):
            wait_for(lambda: consumer.poll(0.5) and False, 15, interval=0, what="the missing topic to be reported")
