"""Helpers shared by the log tests: what the backend under test can do, topics holding given values, polling,
and child processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from streams.log import Consumer, Log, Record, TopicPartition
from tests.support.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]

# Capabilities a backend may lack; the names match tests/support/broker.py's TANSU_MISSING.
CAPABILITIES = ("compaction", "read_committed_aborts", "watermarks", "fenced_commit", "max_message_bytes")


class LogCaps:
    """What the backend under test can do. ``require`` skips the calling test when it cannot."""

    def __init__(self, backend: str, missing: Callable[[str], str | None]) -> None:
        self.backend = backend
        self._missing = missing

    def has(self, capability: str) -> bool:
        if capability not in CAPABILITIES:
            raise KeyError(f"unknown log capability {capability!r}; known: {CAPABILITIES}")
        return self._missing(capability) is None

    def require(self, capability: str) -> None:
        if not self.has(capability):
            pytest.skip(f"{self.backend}: {self._missing(capability)}")


def produce_values(log: Log, topic: str, values: list[bytes], partition: int = 0) -> list[int]:
    """``values`` written to ``topic[partition]`` one by one (each acknowledged before the next): their offsets."""
    with log.producer() as producer:
        return [producer.produce(topic, v, partition=partition).offset for v in values]


def one_partition_holding(log: Log, topic: str, values: list[bytes]) -> TopicPartition:
    """``topic``, created with one partition that holds ``values``."""
    log.create_topic(topic)
    produce_values(log, topic, values)
    return TopicPartition(topic, 0)


def read_records(consumer: Consumer, count: int, timeout: float = 15.0) -> list[Record]:
    """Everything read until ``count`` records arrived or ``timeout`` passed: a read, not a wait for a condition,
    so a test can also assert that nothing arrives (``read_records(c, 1, timeout=1.0) == []``)."""
    out: list[Record] = []
    deadline = time.monotonic() + timeout
    while len(out) < count and time.monotonic() < deadline:
        out.extend(consumer.poll(timeout=min(0.5, max(deadline - time.monotonic(), 0.01))))
    return out


def poll_through(consumer: Consumer, topic: str, partition: int, offset: int, timeout: float = 15.0) -> list[Record]:
    """Poll until the record at ``offset`` of ``topic[partition]`` was read: a barrier that works even
    where end offsets are unreliable. Returns everything read."""
    out: list[Record] = []

    def reached() -> bool:
        out.extend(consumer.poll(timeout=0.5))
        return any(r.topic == topic and r.partition == partition and r.offset >= offset for r in out)

    wait_for(reached, timeout, interval=0, what=f"{topic}[{partition}]@{offset} to be read")
    return out


def run_child(script: str, *args: str) -> subprocess.Popen[str]:
    """``script`` (indented as in the test) in a Python process of its own that imports this checkout."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
