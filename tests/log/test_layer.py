"""Contract: what a backend says about itself, how it is found, and the argument checks every backend shares."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.log import BACKENDS, Capabilities, GroupSettings, Log, TopicPartition, open_log
from streams.log.base import check_offsets, check_partitions, check_topic_name


def test_every_backend_describes_itself_and_its_capabilities(log: Log, backend: str) -> None:
    assert isinstance(log.capabilities, Capabilities)
    assert log.capabilities.transactions
    line = log.describe()
    assert line.startswith(backend.partition("-")[0]) and "\n" not in line
    # Group membership and a session timeout go together: the registry's election relies on both.
    assert (log.group_session_timeout is not None) == log.capabilities.group_membership


def test_sqlite_says_where_its_data_is(tmp_path: Path) -> None:
    with open_log(f"sqlite:///{tmp_path}/data") as log:
        assert str(tmp_path / "data") in log.describe()
        assert not log.capabilities.group_membership and log.capabilities.buffers_until_flush


def test_backends_are_found_by_scheme_and_an_unknown_scheme_names_the_known_ones() -> None:
    assert set(BACKENDS) == {"sqlite", "kafka"}
    with pytest.raises(ValueError, match=r"unknown log URL 'redis://x'.*sqlite://.*kafka://"):
        open_log("redis://x")
    with pytest.raises(ValueError, match="unknown log URL"):
        open_log("just-a-path")


def test_group_settings_are_defaults_the_url_overrides() -> None:
    from streams.log.kafka import KafkaLog

    groups = GroupSettings(assignment="range", session_timeout_ms=10000, heartbeat_interval_ms=3000)
    log = open_log("kafka://h:1?session.timeout.ms=2000", groups=groups)
    assert isinstance(log, KafkaLog)
    consumer = log.client_config("consumer")
    assert consumer["partition.assignment.strategy"] == "range"
    assert consumer["session.timeout.ms"] == "2000"  # the URL wins
    assert consumer["heartbeat.interval.ms"] == "3000"
    assert log.group_session_timeout == 2.0
    assert "partition.assignment.strategy" not in log.client_config("producer")
    log.close()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "non-empty"),
        ("..", "not allowed"),
        ("a" * 250, "250 characters"),
        ("a b/c", r"contains ' /'"),
        (7, "non-empty string"),
    ],
)
def test_topic_names_follow_kafkas_rule(name: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_topic_name(name)
    check_topic_name("orders.v1_x-y")


def test_partition_counts_and_offsets_are_checked_once_for_every_backend() -> None:
    with pytest.raises(ValueError, match=r"topic 't': partitions must be an integer >= 1, got True"):
        check_partitions("t", True)
    assert check_partitions("t", 3) == 3
    with pytest.raises(TypeError, match="keyed by TopicPartition"):
        check_offsets({("t", 0): 1})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match=r"offset for t\[0\] must be an integer >= 0, got -1"):
        check_offsets({TopicPartition("t", 0): -1})
    check_offsets({TopicPartition("t", 0): 0})
