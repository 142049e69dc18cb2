"""One registry per store on a local log: an exclusive lock next to the log's file.

Where the log has no group membership (SQLite), a registry is the only writer of its store topic and hands
out ids from what it has read; a second registry writing the same topic would hand out the same ids. So
the registry takes ``fcntl.flock`` on ``<log file>.registry-<topic>.lock`` for as long as it serves, and
writes its pid and URL into the file so that a second one can say who holds it. The kernel drops the lock
when the process ends, however it ends: a crashed registry never blocks its restart.

Only the registry takes this lock: other users of the same SQLite file (stream applications, several
instances of one) share it as the log allows.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class LockHeldError(Exception):
    """Another process holds the lock; ``str()`` says which and how to go on (one line)."""


class InstanceLock:
    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, log_file: Path, topic: str, url: str) -> InstanceLock:
        """Lock ``topic`` of the log in ``log_file`` for this process (serving at ``url``), or raise
        ``LockHeldError`` naming the process that has it."""
        path = log_file.with_name(f"{log_file.name}.registry-{topic}.lock")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 512, 0).decode("utf-8", "replace").strip() or "another process"
            os.close(fd)
            raise LockHeldError(
                f"topic {topic!r} of the log at {log_file} is already served by {holder} (lock {path}): two "
                "registries on one SQLite log would hand out the same ids; stop that one or use another --log"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"schemakit registry pid {os.getpid()} at {url}\n".encode(), 0)
        return cls(path, fd)

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the last descriptor drops the flock
