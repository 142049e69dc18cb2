"""Polling helpers shared by the log tests."""

from __future__ import annotations

import time

from streams.log import Consumer, Record


def poll_until(consumer: Consumer, count: int, timeout: float = 15.0) -> list[Record]:
    """Poll until ``count`` records arrived (or the timeout passed); returns everything read."""
    out: list[Record] = []
    deadline = time.monotonic() + timeout
    while len(out) < count and time.monotonic() < deadline:
        out.extend(consumer.poll(timeout=min(0.5, max(deadline - time.monotonic(), 0.01))))
    return out


def poll_through(consumer: Consumer, topic: str, partition: int, offset: int, timeout: float = 15.0) -> list[Record]:
    """Poll until the record at ``offset`` of ``topic[partition]`` was read: a barrier that works even
    where end offsets are unreliable. Returns everything read."""
    out: list[Record] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out.extend(consumer.poll(timeout=0.5))
        if any(r.topic == topic and r.partition == partition and r.offset >= offset for r in out):
            return out
    raise AssertionError(f"did not read {topic}[{partition}]@{offset} within {timeout}s; read {len(out)} records")
