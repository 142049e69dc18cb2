"""``schemakit topic list|create|describe|delete`` on SQLite and the test broker, and the one-line errors of the
topic commands (unknown topic, unreachable or malformed log, bad options)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from streams.log import open_log
from tests.support.cli import Result, run_process

Cli = Callable[..., Result]


@pytest.fixture
def topic() -> str:
    return f"cli-admin-{uuid.uuid4().hex[:10]}"


def test_create_list_describe_delete(cli: Cli, log_url: str, topic: str) -> None:
    created = cli("topic", "create", topic, "--partitions", "3", "--config", "retention.ms=60000", "--log", log_url)
    assert (created.code, created.out, created.err) == (0, f"created topic {topic} (3 partitions)\n", "")
    listed = cli("topic", "--log", log_url, "list", "-o", "json")  # log options before the command work too
    assert listed.code == 0, listed.err
    assert topic in listed.json()
    assert topic in cli("topic", "list", "--log", log_url).out.splitlines()
    with open_log(log_url) as log, log.producer() as p:
        for _ in range(4):
            p.send(topic, b"v", partition=1)
        p.flush()
    described = cli("topic", "describe", topic, "--log", log_url, "-o", "json")
    assert described.code == 0, described.err
    doc = described.json()
    assert (doc["topic"], doc["compacted"], doc["config"]) == (topic, False, {"retention.ms": "60000"})
    assert [(p["partition"], p["start_offset"]) for p in doc["partitions"]] == [(0, 0), (1, 0), (2, 0)]
    ends = [p["end_offset"] for p in doc["partitions"]]
    assert ends[0] == ends[2] == 0 and ends[1] >= 1  # the test broker reports the last batch's base offset + 1
    text = cli("topic", "describe", topic, "--log", log_url).out
    assert text.splitlines()[:3] == [f"topic       {topic}", "partitions  3", "compacted   False"]
    assert "retention.ms  60000" in text
    deleted = cli("topic", "delete", topic, "--log", log_url)
    assert (deleted.code, deleted.out) == (0, f"deleted topic {topic}\n")
    assert topic not in cli("topic", "list", "--log", log_url).out.splitlines()


def test_compacted_topic(cli: Cli, tmp_path: Path, topic: str) -> None:
    url = f"sqlite:///{tmp_path}/log"
    assert cli("topic", "create", topic, "-c", "cleanup.policy=compact", "--log", url).code == 0
    assert cli("topic", "describe", topic, "--log", url, "-o", "json").json()["compacted"] is True


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("describe", "nope"), "topic 'nope' does not exist in sqlite:///{dir}/log"),
        (("delete", "nope"), "topic 'nope' does not exist in sqlite:///{dir}/log"),
        (("consume", "nope"), "topic 'nope' does not exist in sqlite:///{dir}/log"),
        (("produce", "nope"), "topic 'nope' does not exist in sqlite:///{dir}/log"),
        (("create", "bad/name"), "topic name 'bad/name' contains '/'; only ASCII letters, digits, '.', '_', '-'"),
        (("create", "t", "-p", "0"), "topic 't': partitions must be an integer >= 1, got 0"),
        (("create", "t", "--config", "x"), "--config takes KEY=VALUE, got 'x'"),
        (
            ("list", "-X", "acks=all"),
            "-X and --log-config are settings of a kafka:// log, not of 'sqlite:///{dir}/log'",
        ),
    ],
)
def test_errors_are_one_line(cli: Cli, tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    url = f"sqlite:///{tmp_path}/log"
    result = cli("topic", *args, "--log", url)
    assert result.code == 2
    assert result.err == f"schemakit topic {args[0]}: {message.format(dir=tmp_path)}\n"
    assert result.out == ""


def test_existing_topic_and_bad_urls(cli: Cli, tmp_path: Path, topic: str) -> None:
    url = f"sqlite:///{tmp_path}/log"
    assert cli("topic", "create", topic, "--log", url).code == 0
    again = cli("topic", "create", topic, "--log", url)
    assert (again.code, again.err) == (2, f"schemakit topic create: topic {topic!r} already exists\n")
    bad = cli("topic", "list", "--log", "redis://x")
    assert bad.code == 2
    assert bad.err.startswith("schemakit topic list: unknown log URL 'redis://x': expected sqlite://... or kafka://")


def test_unreachable_kafka_is_one_line_in_a_process(cli: Cli, tmp_path: Path) -> None:
    """The console script itself: exit status 2 and one line, no traceback, within the --timeout given."""
    result = run_process("topic", "list", "--log", "kafka://127.0.0.1:1", "--timeout", "1")
    assert result.code == 2
    assert result.out == ""
    assert result.err.startswith("schemakit topic list: metadata from 127.0.0.1:1: ")
    assert len(result.err.splitlines()) == 1, result.err
    config = tmp_path / "client.properties"
    config.write_text("# a comment\nsecurity.protocol=PLAINTEXT\nnot a setting\n")
    bad_config = cli("topic", "list", "--log", "kafka://127.0.0.1:1", "--log-config", str(config))
    assert bad_config.code == 2
    assert bad_config.err == f"schemakit topic list: --log-config {config} takes KEY=VALUE, got 'not a setting'\n"
