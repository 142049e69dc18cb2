"""This instance's state directory, ``<state_dir>/<application_id>``: a lock, so that two processes never
share one (their RocksDB stores and checkpoints would clash), and the instance id, kept across restarts so
that a restarted instance is recognised by the group leader (its local state makes it caught up on the
tasks it ran, and they come back to it). Task directories (``<task_id>/``) hold stores and checkpoints.
"""

from __future__ import annotations

import fcntl
import os
import uuid
from collections.abc import Callable
from pathlib import Path

from streams.changelog import read_checkpoint
from streams.errors import StreamsError

__all__ = ["StateDirectory"]

LOCK_FILE = ".lock"
INSTANCE_FILE = ".instance-id"


class StateDirectory:
    def __init__(self, root: Path, application_id: str) -> None:
        self.path = root / application_id
        self.path.mkdir(parents=True, exist_ok=True)
        self._lock = os.open(self.path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock)
            raise StreamsError(
                f"state directory {self.path} is in use by another instance of application {application_id!r}: "
                "give each instance its own state_dir"
            ) from None
        id_file = self.path / INSTANCE_FILE
        try:
            self.instance_id = id_file.read_text().strip()
        except FileNotFoundError:
            self.instance_id = ""
        if not self.instance_id:
            self.instance_id = uuid.uuid4().hex[:12]
            id_file.write_text(self.instance_id + "\n")

    def task_positions(self, task_ids: list[str], offsets_sum: Callable[[dict[str, int]], int]) -> dict[str, int]:
        """Task id -> ``offsets_sum(checkpoint)`` for every task with a checkpoint here."""
        out = {}
        for task_id in task_ids:
            checkpoint = read_checkpoint(self.path / task_id)
            if checkpoint:
                out[task_id] = offsets_sum(checkpoint)
        return out

    def close(self) -> None:
        if self._lock >= 0:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            os.close(self._lock)
            self._lock = -1
